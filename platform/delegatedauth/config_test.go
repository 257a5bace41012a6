package delegatedauth

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestLoadReplacesThePools(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	oldCA, newCAPair := newCA(t, "old", nil), newCA(t, "new", nil)
	oldUser, newUser := request(certs(newClientCert(t, oldCA, "old-user"))), request(certs(newClientCert(t, newCAPair, "new-user")))
	client := fake.NewClientset(authConfigMap(oldCA.Cert, nil, ""))
	a := NewAuthenticator(AuthenticatorOptions{ConfigMaps: client.CoreV1()})
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Authenticate(oldUser); err != nil || got.Name != "old-user" {
		t.Fatalf("old CA: got %+v, %v", got, err)
	}

	cms := client.CoreV1().ConfigMaps(AuthConfigMapNamespace)
	if _, err := cms.Update(ctx, authConfigMap(newCAPair.Cert, nil, ""), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := a.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(oldUser); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("after the reload the old CA is not trusted: got %v", err)
	}
	if got, err := a.Authenticate(newUser); err != nil || got.Name != "new-user" {
		t.Errorf("new CA: got %+v, %v", got, err)
	}

	broken := authConfigMap(nil, nil, "")
	broken.Data[keyClientCA] = "not PEM"
	if _, err := cms.Update(ctx, broken, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := a.Load(ctx); err == nil || !strings.Contains(err.Error(), keyClientCA) {
		t.Errorf("want an error naming %s, got %v", keyClientCA, err)
	}
	if got, err := a.Authenticate(newUser); err != nil || got.Name != "new-user" {
		t.Errorf("a broken ConfigMap keeps the previous pools: got %+v, %v", got, err)
	}

	if err := cms.Delete(ctx, AuthConfigMapName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := a.Load(ctx); err != nil {
		t.Fatalf("a missing ConfigMap is not an error: %v", err)
	}
	if got, err := a.Authenticate(newUser); err == nil {
		t.Errorf("without the ConfigMap no certificate is trusted, got %+v", got)
	}
}

func TestStartFailsWhenTheConfigMapCannotBeRead(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, AuthConfigMapName, errors.New("no RBAC"))
	})
	a := NewAuthenticator(AuthenticatorOptions{ConfigMaps: client.CoreV1()})
	if err := a.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "extension-apiserver-authentication-reader") {
		t.Errorf("want an error that names the Role to bind, got %v", err)
	}
	if a.TLSClientAuth() != tls.RequestClientCert {
		t.Errorf("with ConfigMaps the server requests a certificate, got %v", a.TLSClientAuth())
	}
}

func TestStartWithoutTheConfigMap(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := NewAuthenticator(AuthenticatorOptions{ConfigMaps: fake.NewClientset().CoreV1(), Anonymous: true})
	if err := a.Start(ctx); err != nil {
		t.Fatalf("a missing ConfigMap is not an error: %v", err)
	}
}

func TestParseCertConfig(t *testing.T) {
	ca := newCA(t, "ca", nil)
	cm := authConfigMap(nil, ca.Cert, `["proxy"]`)
	cfg, err := parseCertConfig(cm.Data)
	if err != nil || cfg.clientCA != nil || cfg.frontProxy == nil {
		t.Fatalf("got %+v, %v", cfg, err)
	}
	if fp := cfg.frontProxy; strings.Join(fp.allowedNames, ",") != "proxy" || strings.Join(fp.uidHeaders, ",") != "X-Remote-Uid" {
		t.Errorf("got %+v", fp)
	}
	delete(cm.Data, keyUIDHeaders)
	if cfg, err := parseCertConfig(cm.Data); err != nil || cfg.frontProxy.uidHeaders != nil {
		t.Errorf("uid headers may be absent: got %+v, %v", cfg, err)
	}
	cm.Data[keyUsernameHeaders] = "X-Remote-User"
	if _, err := parseCertConfig(cm.Data); err == nil || !strings.Contains(err.Error(), keyUsernameHeaders) {
		t.Errorf("want an error naming %s, got %v", keyUsernameHeaders, err)
	}
	cm.Data[keyUsernameHeaders] = "[]"
	if cfg, err := parseCertConfig(cm.Data); err != nil || cfg.frontProxy != nil {
		t.Errorf("without user name headers there is no front proxy: got %+v, %v", cfg, err)
	}
}
