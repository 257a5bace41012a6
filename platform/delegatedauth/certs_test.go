package delegatedauth

import (
	"context"
	"crypto/tls"
	"errors"
	"reflect"
	"slices"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/olmv1/olmv1/platform/pki"
)

// certAuthenticator trusts clientCA for client certificates and requestHeaderCA for front proxies
// named in allowedNames (a JSON array), anonymous requests allowed.
func certAuthenticator(t *testing.T, clientCA, requestHeaderCA *pki.KeyPair, allowedNames string) *Authenticator {
	t.Helper()
	var ccert, rcert = clientCA.Cert, requestHeaderCA.Cert
	client := fake.NewClientset(authConfigMap(ccert, rcert, allowedNames))
	a := NewAuthenticator(AuthenticatorOptions{ConfigMaps: client.CoreV1(), Anonymous: true})
	if err := a.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return a
}

func TestFrontProxy(t *testing.T) {
	clientCA, frontCA := newCA(t, "client-ca", nil), newCA(t, "front-proxy-ca", nil)
	intermediate := newCA(t, "front-proxy-intermediate", frontCA)
	proxy := newClientCert(t, frontCA, "front-proxy-client")
	headers := []string{
		"X-Remote-User", "alice", "X-Remote-Uid", "uid-1",
		"X-Remote-Group", "devs", "X-Remote-Group", "ops",
		"X-Remote-Extra-Scopes", "a", "X-Remote-Extra-Scopes", "b",
		"X-Remote-Extra-Acme.com%2fProject", "p1",
	}
	alice := &User{
		Name: "alice", UID: "uid-1", Groups: []string{"devs", "ops", AuthenticatedGroup},
		Extra: map[string][]string{"scopes": {"a", "b"}, "acme.com/project": {"p1"}},
	}
	tests := []struct {
		name         string
		allowedNames string
		req          []*pki.KeyPair
		want         *User
		wantErr      bool
	}{
		{name: "allowed front proxy", allowedNames: `["front-proxy-client"]`, req: certs(proxy), want: alice},
		{name: "any name when none listed", allowedNames: `[]`, req: certs(newClientCert(t, frontCA, "other")), want: alice},
		{name: "through an intermediate", allowedNames: `["via-intermediate"]`,
			req: certs(newClientCert(t, intermediate, "via-intermediate"), intermediate), want: alice},
		{name: "name not allowed", allowedNames: `["front-proxy-client"]`, req: certs(newClientCert(t, frontCA, "mallory")), wantErr: true},
		{name: "untrusted certificate", allowedNames: `[]`, req: certs(newClientCert(t, newCA(t, "evil", nil), "front-proxy-client")), wantErr: true},
		{name: "no certificate: headers ignored", allowedNames: `[]`, want: anonymous()},
		{name: "client CA certificate: headers ignored", allowedNames: `[]`,
			req: certs(newClientCert(t, clientCA, "bob", "admins")), want: &User{Name: "bob", Groups: []string{"admins", AuthenticatedGroup}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := certAuthenticator(t, clientCA, frontCA, tt.allowedNames)
			got, err := a.Authenticate(request(tt.req, headers...))
			if tt.wantErr {
				if !errors.Is(err, ErrUnauthorized) || got != nil {
					t.Fatalf("want ErrUnauthorized, got %+v, %v", got, err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestFrontProxyWithoutUserFallsThrough(t *testing.T) {
	clientCA, frontCA := newCA(t, "client-ca", nil), newCA(t, "front-proxy-ca", nil)
	proxy := newClientCert(t, frontCA, "front-proxy-client")
	a := certAuthenticator(t, clientCA, frontCA, `["front-proxy-client"]`)
	if got, err := a.Authenticate(request(certs(proxy))); err != nil || got.Name != AnonymousUser {
		t.Errorf("verified front proxy without a user: want anonymous, got %+v, %v", got, err)
	}
	a.anonymous = false
	if _, err := a.Authenticate(request(certs(proxy))); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("without anonymous: want ErrUnauthorized, got %v", err)
	}

	// A CA that is both client CA and front-proxy CA makes the proxy a user of its own.
	a = certAuthenticator(t, frontCA, frontCA, `["front-proxy-client"]`)
	if got, err := a.Authenticate(request(certs(proxy))); err != nil || got.Name != "front-proxy-client" {
		t.Errorf("front proxy trusted as a client: got %+v, %v", got, err)
	}
}

func TestClientCertificate(t *testing.T) {
	clientCA, frontCA := newCA(t, "client-ca", nil), newCA(t, "front-proxy-ca", nil)
	a := certAuthenticator(t, clientCA, frontCA, `[]`)

	got, err := a.Authenticate(request(certs(newClientCert(t, clientCA, "bob", "admins", "devs"))))
	if got != nil {
		slices.Sort(got.Groups) // DER sorts the organizations
	}
	want := &User{Name: "bob", Groups: []string{"admins", "devs", AuthenticatedGroup}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, %v; want %+v", got, err, want)
	}

	serving, err := pki.Issue(pki.ServingRequest([]string{"bob"}, notBefore, notAfter), clientCA)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := a.Authenticate(request(certs(serving))); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("a certificate without client auth usage must be rejected, never anonymous: got %+v, %v", got, err)
	}
	if got, err := a.Authenticate(request(certs(newClientCert(t, clientCA, "")))); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("a certificate without common name must be rejected: got %+v, %v", got, err)
	}
}

func TestCertificatesIgnoredWithoutConfigMaps(t *testing.T) {
	a := NewAuthenticator(AuthenticatorOptions{Anonymous: true})
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	cert := newClientCert(t, newCA(t, "ca", nil), "bob")
	if got, err := a.Authenticate(request(certs(cert))); err != nil || got.Name != AnonymousUser {
		t.Errorf("want anonymous, got %+v, %v", got, err)
	}
	if a.TLSClientAuth() != tls.NoClientCert {
		t.Errorf("without ConfigMaps no client certificate should be requested, got %v", a.TLSClientAuth())
	}
}
