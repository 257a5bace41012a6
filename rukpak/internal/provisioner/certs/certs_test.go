package certs

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/olmv1/olmv1/platform/pki"
)

func newCA(t *testing.T) *pki.CA {
	t.Helper()
	certPEM, keyPEM, err := pki.GenerateCA("test-ca", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 90*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := pki.ParseCA(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func secretData(t *testing.T, p Provider, svc Service) map[string][]byte {
	t.Helper()
	objs, err := p.Objects(svc)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 {
		t.Fatalf("%d objects, want the Secret", len(objs))
	}
	u := objs[0].(*unstructured.Unstructured)
	if u.GetKind() != "Secret" || u.GetName() != SecretName(svc.Name) || u.GetNamespace() != svc.Namespace {
		t.Fatalf("got %s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
	}
	sec := &corev1.Secret{}
	data, _, _ := unstructured.NestedStringMap(u.Object, "data")
	sec.Data = map[string][]byte{}
	for k, v := range data {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			t.Fatal(err)
		}
		sec.Data[k] = b
	}
	return sec.Data
}

func TestSelfSignedServingCertificate(t *testing.T) {
	ca := newCA(t)
	p := NewSelfSigned(ca)
	svc := Service{Name: "webhook-service", Namespace: "ops"}
	data := secretData(t, p, svc)

	pair, err := tls.X509KeyPair(data["tls.crt"], data["tls.key"])
	if err != nil {
		t.Fatalf("tls.crt/tls.key do not form a key pair a webhook server can load: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(data["ca.crt"])
	for _, dns := range svc.DNSNames() {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: dns, Roots: pool, CurrentTime: ca.Cert.NotBefore.Add(time.Hour)}); err != nil {
			t.Errorf("certificate does not verify for %s: %v", dns, err)
		}
	}
	if !leaf.NotAfter.Equal(ca.Cert.NotAfter) {
		t.Errorf("serving cert expires %v, the CA %v: it must follow the CA", leaf.NotAfter, ca.Cert.NotAfter)
	}
	inj, err := p.CAInjection(svc)
	if err != nil || !bytes.Equal(inj.CABundle, ca.CertPEM) {
		t.Errorf("caBundle is not the CA certificate (err %v)", err)
	}

	// Same CA and Service: byte-identical. Another Service: another key.
	if again := secretData(t, p, svc); !bytes.Equal(again["tls.crt"], data["tls.crt"]) || !bytes.Equal(again["tls.key"], data["tls.key"]) {
		t.Errorf("rendering twice gives different certificates: the apply engine would see drift every reconcile")
	}
	if other := secretData(t, p, Service{Name: "other", Namespace: "ops"}); bytes.Equal(other["tls.key"], data["tls.key"]) {
		t.Errorf("two Services share a private key")
	}
	// A new CA (rotation) gives new serving certificates.
	if rotated := secretData(t, NewSelfSigned(newCA(t)), svc); bytes.Equal(rotated["tls.crt"], data["tls.crt"]) {
		t.Errorf("a new CA must produce a new serving certificate")
	}
}

// ParseCA's errors are tested in rukpak/pkg/pki.
func TestSelfSignedWithoutCA(t *testing.T) {
	if _, err := NewSelfSigned(nil).Objects(Service{Name: "s", Namespace: "n"}); err == nil {
		t.Errorf("a provider without CA must fail")
	}
}

func TestCertManagerObjects(t *testing.T) {
	svc := Service{Name: "hook", Namespace: "ops"}
	objs, err := NewCertManager(nil).Objects(svc)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[0].GetName() != "hook-selfsigned" || objs[1].GetName() != "hook-cert" {
		t.Fatalf("objects %v", objs)
	}
	inj, _ := NewCertManager(nil).CAInjection(svc)
	if inj.Annotations[InjectCAFromAnnotation] != "ops/hook-cert" || inj.CABundle != nil {
		t.Errorf("injection %+v", inj)
	}
	if _, err := NewCertManager(&IssuerRef{Kind: "Vault", Name: "v"}).Objects(svc); err == nil {
		t.Errorf("an issuer kind other than Issuer/ClusterIssuer must fail")
	}
}

func TestOpenShiftServiceCA(t *testing.T) {
	p := NewOpenShiftServiceCA()
	s := &corev1.Service{}
	s.Name = "hook"
	p.ModifyService(s)
	if s.Annotations[ServingCertSecretAnnotation] != "hook-cert" {
		t.Errorf("annotations %v", s.Annotations)
	}
	if objs, _ := p.Objects(Service{Name: "hook"}); len(objs) != 0 {
		t.Errorf("service-ca renders no objects")
	}
	if inj, _ := p.CAInjection(Service{}); inj.Annotations[InjectCABundleAnnotation] != "true" {
		t.Errorf("injection %+v", inj)
	}
}

func TestRotationKeepsPreviousCATrusted(t *testing.T) {
	old, cur := newCA(t), newCA(t)
	p := NewSelfSigned(cur, old)
	inj, err := p.CAInjection(Service{Name: "s", Namespace: "n"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(inj.CABundle, append(append([]byte(nil), cur.CertPEM...), old.CertPEM...)) {
		t.Errorf("caBundle must hold the current CA then the previous one")
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(inj.CABundle)
	// A pod still serving the old CA's certificate is trusted during the rotation.
	oldData := secretData(t, NewSelfSigned(old), Service{Name: "s", Namespace: "n"})
	blk, _ := pem.Decode(oldData["tls.crt"])
	leaf, _ := x509.ParseCertificate(blk.Bytes)
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: "s.n.svc", Roots: pool, CurrentTime: old.Cert.NotBefore.Add(time.Hour)}); err != nil {
		t.Errorf("old serving certificate not trusted during rotation: %v", err)
	}

}

func TestNewByName(t *testing.T) {
	ca := newCA(t)
	for _, n := range Names {
		p, err := NewByName(n, ca, nil, nil)
		if err != nil || p.Name() != n {
			t.Errorf("NewByName(%q) = %v, %v", n, p, err)
		}
	}
	if _, err := NewByName(SelfSignedName, nil, nil, nil); err == nil {
		t.Errorf("self-signed without a CA must fail")
	}
	if _, err := NewByName("vault", ca, nil, nil); err == nil || !strings.Contains(err.Error(), "use one of") {
		t.Errorf("unknown name: %v", err)
	}
}
