package platformcerts

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"flag"
	"math/big"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"

	"github.com/olmv1/olmv1/platform/pki"
)

const (
	ns      = "olmv1-system"
	asName  = "v1alpha1.metadata.catalogd.operatorframework.io"
	day     = 24 * time.Hour
	caName  = "olmv1-ca"
	tlsName = "catalogd-tls"
)

var (
	t0       = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	dnsNames = []string{"catalogd", "catalogd.olmv1-system", "catalogd.olmv1-system.svc", "catalogd.olmv1-system.svc.cluster.local"}
)

// chartCA makes a CA the way the chart's genCA does: RSA 2048, PKCS#1 key, valid from notBefore.
func chartCA(t *testing.T, notBefore time.Time, validity time.Duration) (certPEM, keyPEM []byte, ca *pki.CA) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := pki.Issue(pki.Request{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "olmv1-ca"},
		NotBefore: notBefore, NotAfter: notBefore.Add(validity),
		IsCA: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, Key: key,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	certPEM = pki.EncodeCert(pair.Cert)
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: pki.PKCS1RSAKeyBlock, Bytes: x509.MarshalPKCS1PrivateKey(key)})
	ca, err = pki.ParseCA(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM, ca
}

type fixture struct {
	cs       *fake.Clientset
	dyn      *dynamicfake.FakeDynamicClient
	clock    *fakeClock
	recorder *events.FakeRecorder
	r        *Rotator
	caPEM    []byte
	log      *[]k8stesting.Action
}

// newFixture installs what the chart installs at t0: a CA valid for validity, the catalogd serving
// Secret signed by it for the same validity, and the APIService with the CA as caBundle.
func newFixture(t *testing.T, validity time.Duration) *fixture {
	t.Helper()
	caPEM, caKey, ca := chartCA(t, t0, validity)
	crt, key, _, err := issueServing(ca, dnsNames, t0.Add(backdate), validity)
	if err != nil {
		t.Fatal(err)
	}
	cs := fake.NewClientset(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: caName, Namespace: ns}, Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{"tls.crt": caPEM, "tls.key": caKey, "ca.crt": caPEM}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: tlsName, Namespace: ns}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": crt, "tls.key": key, "ca.crt": caPEM}},
	)
	as := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": asName},
		"spec":     map[string]any{"group": "metadata.catalogd.operatorframework.io", "version": "v1alpha1", "caBundle": base64.StdEncoding.EncodeToString(caPEM)},
	}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{APIServiceGVR: "APIServiceList"}, as)
	f := &fixture{cs: cs, dyn: dyn, clock: newFakeClock(t0), recorder: events.NewFakeRecorder(100), caPEM: caPEM, log: new([]k8stesting.Action)}
	logAction := func(a k8stesting.Action) (bool, runtime.Object, error) {
		*f.log = append(*f.log, a)
		return false, nil, nil
	}
	cs.PrependReactor("*", "*", logAction)
	dyn.PrependReactor("*", "*", logAction)
	f.r = New(Config{
		CASecret:    SecretRef{Namespace: ns, Name: caName},
		Serving:     []ServingSecret{{SecretRef: SecretRef{Namespace: ns, Name: tlsName}, DNSNames: dnsNames}},
		APIServices: []string{asName},
		Validity:    validity,
	}, cs, dyn)
	f.r.Clock, f.r.Recorder, f.r.WatchSecrets = f.clock, f.recorder, false
	return f
}

func (f *fixture) secret(t *testing.T, name string) *corev1.Secret {
	t.Helper()
	s, err := f.cs.CoreV1().Secrets(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (f *fixture) caBundle(t *testing.T) []*x509.Certificate {
	t.Helper()
	as, err := f.dyn.Resource(APIServiceGVR).Get(context.Background(), asName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, _, _ := unstructured.NestedString(as.Object, "spec", "caBundle")
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return pki.ParseCerts(b)
}

// writes returns the verb and resource of every request that changed something since the last
// clearActions, in order across both clients, and fails on a delete (the Rotator never deletes).
func (f *fixture) writes(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, a := range *f.log {
		switch a.GetVerb() {
		case "get", "list", "watch":
		case "delete", "deletecollection":
			t.Errorf("the Rotator deleted something: %v", a)
		default:
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	return out
}

func (f *fixture) clearActions() { *f.log = nil }

// install replaces the CA and the serving certificate, and sets the APIService's caBundle, as a helm
// install would have.
func (f *fixture) install(t *testing.T, caPEM, caKey, crt, key []byte) {
	t.Helper()
	ctx := context.Background()
	for name, data := range map[string]map[string][]byte{
		caName:  {"tls.crt": caPEM, "tls.key": caKey, "ca.crt": caPEM},
		tlsName: {"tls.crt": crt, "tls.key": key, "ca.crt": caPEM},
	} {
		s := f.secret(t, name)
		s.Data = data
		if _, err := f.cs.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	as, err := f.dyn.Resource(APIServiceGVR).Get(ctx, asName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(as.Object, base64.StdEncoding.EncodeToString(caPEM), "spec", "caBundle")
	if _, err := f.dyn.Resource(APIServiceGVR).Update(ctx, as, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.caPEM = caPEM
	f.clearActions()
}

func (f *fixture) check(t *testing.T) time.Time {
	t.Helper()
	next, err := f.r.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return next
}

func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// verifies checks that the serving Secret's certificate verifies for every DNS name against roots.
func verifies(t *testing.T, s *corev1.Secret, roots ...*x509.Certificate) *x509.Certificate {
	t.Helper()
	pool := x509.NewCertPool()
	for _, r := range roots {
		pool.AddCert(r)
	}
	leaf := pki.ParseCerts(s.Data["tls.crt"])[0]
	for _, n := range dnsNames {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: n, CurrentTime: leaf.NotBefore.Add(backdate)}); err != nil {
			t.Errorf("%s: serving certificate for %s: %v", s.Name, n, err)
		}
	}
	return leaf
}

func subjects(cs []*x509.Certificate) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Subject.CommonName+"@"+c.NotAfter.Format(time.DateOnly))
	}
	return out
}

func TestLeavesValidCertificatesAlone(t *testing.T) {
	f := newFixture(t, 30*day)
	f.clock.set(t0.Add(10 * day))
	next := f.check(t)
	if w := f.writes(t); len(w) > 0 {
		t.Errorf("valid certificates: expected no writes, got %v", w)
	}
	if want := f.clock.Now().Add(Recheck); !next.Equal(want) {
		t.Errorf("next check %v, want %v (the hourly recheck)", next, want)
	}
	if e := f.events(); len(e) > 0 {
		t.Errorf("events without changes: %v", e)
	}
	// Close to the serving certificate's threshold, the next check is due exactly then.
	leaf := pki.ParseCerts(f.secret(t, tlsName).Data["tls.crt"])[0]
	f.clock.set(pki.RenewAt(leaf).Add(-time.Minute))
	if next := f.check(t); !next.Equal(pki.RenewAt(leaf)) {
		t.Errorf("next check %v, want the serving certificate's renewal time %v", next, pki.RenewAt(leaf))
	}
	if w := f.writes(t); len(w) > 0 {
		t.Errorf("expected no writes, got %v", w)
	}
}

func TestRenewsServingCertificateNearExpiry(t *testing.T) {
	f := newFixture(t, 30*day)
	// A CA that lives much longer than the serving certificate, so that only the latter is due.
	caPEM, caKey, ca := chartCA(t, t0, 300*day)
	crt, key, old, err := issueServing(ca, dnsNames, t0.Add(backdate), 30*day)
	if err != nil {
		t.Fatal(err)
	}
	f.install(t, caPEM, caKey, crt, key)
	f.clock.set(pki.RenewAt(old).Add(-time.Second))
	f.check(t)
	if w := f.writes(t); len(w) > 0 {
		t.Fatalf("a third of the validity left plus a second: expected no writes, got %v", w)
	}
	f.clock.set(pki.RenewAt(old).Add(time.Second))
	next := f.check(t)
	if w := f.writes(t); strings.Join(w, ";") != "update secrets" {
		t.Errorf("expected exactly one Secret update (the serving Secret), got %v", w)
	}
	s := f.secret(t, tlsName)
	leaf := verifies(t, s, ca.Cert)
	if leaf.Equal(old) || !leaf.NotAfter.After(old.NotAfter) {
		t.Errorf("serving certificate not renewed: notAfter %v (old %v)", leaf.NotAfter, old.NotAfter)
	}
	if string(s.Data["ca.crt"]) != string(caPEM) || string(f.secret(t, caName).Data["tls.crt"]) != string(caPEM) {
		t.Errorf("the CA must stay: ca.crt %q", s.Data["ca.crt"])
	}
	if s.Type != corev1.SecretTypeTLS {
		t.Errorf("type %s", s.Type)
	}
	if !next.Equal(f.clock.Now().Add(Recheck)) {
		t.Errorf("next check %v", next)
	}
	if e := f.events(); len(e) != 1 || !strings.Contains(e[0], "ServingCertificateRenewed") {
		t.Errorf("events %v", e)
	}
}

func TestRenewsCAAndReissuesServingCertificates(t *testing.T) {
	f := newFixture(t, 30*day)
	oldCA := pki.ParseCerts(f.caPEM)[0]
	oldLeaf := pki.ParseCerts(f.secret(t, tlsName).Data["tls.crt"])[0]
	f.clearActions()

	// Past the CA's threshold (a third of 30 days left).
	f.clock.set(t0.Add(21 * day))
	next := f.check(t)
	caSecret := f.secret(t, caName)
	newCA, err := pki.ParseCA(caSecret.Data["tls.crt"], caSecret.Data["tls.key"])
	if err != nil {
		t.Fatalf("the new CA Secret does not hold a usable CA: %v", err)
	}
	if newCA.Cert.Equal(oldCA) {
		t.Fatal("CA not replaced")
	}
	bundle := pki.ParseCerts(caSecret.Data["ca.crt"])
	if !sameCerts(bundle, []*x509.Certificate{newCA.Cert, oldCA}) {
		t.Errorf("CA Secret ca.crt: %v, want the new CA then the old one", subjects(bundle))
	}
	if got := f.caBundle(t); !sameCerts(got, bundle) {
		t.Errorf("APIService caBundle %v, want %v", subjects(got), subjects(bundle))
	}
	s := f.secret(t, tlsName)
	leaf := verifies(t, s, newCA.Cert)
	if leaf.Equal(oldLeaf) {
		t.Error("serving certificate not re-issued under the new CA")
	}
	if !sameCerts(pki.ParseCerts(s.Data["ca.crt"]), bundle) {
		t.Errorf("serving Secret ca.crt %v", subjects(pki.ParseCerts(s.Data["ca.crt"])))
	}
	// Clients that trust the bundle accept the old certificate too (pods still serving it).
	pool := x509.NewCertPool()
	for _, c := range bundle {
		pool.AddCert(c)
	}
	if _, err := oldLeaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: dnsNames[2], CurrentTime: f.clock.Now()}); err != nil {
		t.Errorf("the old serving certificate does not verify against the bundle: %v", err)
	}
	// The order matters: the APIService trusts the new CA before a serving Secret carries it.
	w := f.writes(t)
	if strings.Join(w, ";") != "update secrets;patch apiservices;update secrets" {
		t.Errorf("writes %v, want the CA Secret, then the APIService, then the serving Secret", w)
	}
	if !next.Equal(oldCA.NotAfter) && !next.Before(oldCA.NotAfter) {
		t.Errorf("next check %v is after the old CA expires (%v)", next, oldCA.NotAfter)
	}
	f.events()

	// Nothing to do until the old CA expires.
	f.clearActions()
	f.clock.set(oldCA.NotAfter.Add(-time.Minute))
	if next := f.check(t); !next.Equal(oldCA.NotAfter) {
		t.Errorf("next check %v, want the old CA's expiry %v", next, oldCA.NotAfter)
	}
	if w := f.writes(t); len(w) > 0 {
		t.Errorf("before the old CA expires: writes %v", w)
	}

	// Once it expired, it leaves every bundle; the serving certificate stays.
	f.clock.set(oldCA.NotAfter.Add(time.Second))
	f.check(t)
	only := []*x509.Certificate{newCA.Cert}
	if got := pki.ParseCerts(f.secret(t, caName).Data["ca.crt"]); !sameCerts(got, only) {
		t.Errorf("CA Secret ca.crt after the old CA expired: %v", subjects(got))
	}
	if got := f.caBundle(t); !sameCerts(got, only) {
		t.Errorf("APIService caBundle after the old CA expired: %v", subjects(got))
	}
	s2 := f.secret(t, tlsName)
	if got := pki.ParseCerts(s2.Data["ca.crt"]); !sameCerts(got, only) {
		t.Errorf("serving ca.crt after the old CA expired: %v", subjects(got))
	}
	if string(s2.Data["tls.crt"]) != string(s.Data["tls.crt"]) || string(s2.Data["tls.key"]) != string(s.Data["tls.key"]) {
		t.Error("dropping the old CA must not re-issue the serving certificate")
	}
	if string(f.secret(t, caName).Data["tls.key"]) != string(caSecret.Data["tls.key"]) {
		t.Error("dropping the old CA must not replace the current one")
	}
}

func TestPatchesAPIServiceCABundle(t *testing.T) {
	f := newFixture(t, 30*day)
	ctx := context.Background()
	// Someone set another caBundle (and a re-encoded copy of the right one must not count as a change).
	other, _, _ := chartCA(t, t0, day)
	as, err := f.dyn.Resource(APIServiceGVR).Get(ctx, asName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(as.Object, base64.StdEncoding.EncodeToString(other), "spec", "caBundle")
	if _, err := f.dyn.Resource(APIServiceGVR).Update(ctx, as, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.clearActions()
	f.check(t)
	if w := f.writes(t); strings.Join(w, ";") != "patch apiservices" {
		t.Errorf("writes %v, want one APIService patch", w)
	}
	if got := f.caBundle(t); !sameCerts(got, pki.ParseCerts(f.caPEM)) {
		t.Errorf("caBundle %v, want the CA", subjects(got))
	}
	if e := f.events(); len(e) != 1 || !strings.Contains(e[0], "CABundleInjected") {
		t.Errorf("events %v", e)
	}
	f.clearActions()
	f.check(t)
	if w := f.writes(t); len(w) > 0 {
		t.Errorf("second pass: writes %v", w)
	}
}

// replaceServingWithForeignCA puts a still-valid certificate for the right names, signed by another
// CA, into the serving Secret.
func (f *fixture) replaceServingWithForeignCA(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	_, _, foreign := chartCA(t, t0, 30*day)
	crt, key, _, err := issueServing(foreign, dnsNames, t0.Add(backdate), 30*day)
	if err != nil {
		t.Fatal(err)
	}
	s := f.secret(t, tlsName)
	s.Data["tls.crt"], s.Data["tls.key"] = crt, key
	if _, err := f.cs.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestReplacesMissingOrForeignCertificates(t *testing.T) {
	f := newFixture(t, 30*day)
	ca, _ := pki.ParseCA(f.secret(t, caName).Data["tls.crt"], f.secret(t, caName).Data["tls.key"])
	// A certificate of another CA, for the right names, still valid.
	f.replaceServingWithForeignCA(t)
	f.r.Serving = append(f.r.Serving, ServingSecret{SecretRef: SecretRef{Namespace: ns, Name: "rukpak-tls"}, DNSNames: []string{"rukpak.olmv1-system.svc"}})
	f.clearActions()
	f.check(t)
	verifies(t, f.secret(t, tlsName), ca.Cert)
	r := f.secret(t, "rukpak-tls")
	if r.Type != corev1.SecretTypeTLS || len(pki.ParseCerts(r.Data["tls.crt"])) != 1 || r.Labels["app.kubernetes.io/managed-by"] != "rukpak" {
		t.Errorf("missing serving Secret not created as a labelled kubernetes.io/tls Secret: %v", r)
	}
	if w := f.writes(t); strings.Join(w, ";") != "update secrets;create secrets" {
		t.Errorf("writes %v", w)
	}
	// A certificate that does not cover a DNS name is re-issued too.
	f.r.Serving[1].DNSNames = append(f.r.Serving[1].DNSNames, "rukpak.olmv1-system.svc.cluster.local")
	before := string(f.secret(t, "rukpak-tls").Data["tls.crt"])
	f.check(t)
	if string(f.secret(t, "rukpak-tls").Data["tls.crt"]) == before {
		t.Error("a certificate missing a DNS name was kept")
	}
}

func TestCreatesCAWhenMissing(t *testing.T) {
	f := newFixture(t, 30*day)
	if err := f.cs.CoreV1().Secrets(ns).Delete(context.Background(), caName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.clearActions()
	f.check(t)
	s := f.secret(t, caName)
	ca, err := pki.ParseCA(s.Data["tls.crt"], s.Data["tls.key"])
	if err != nil {
		t.Fatal(err)
	}
	if ca.Cert.Subject.CommonName != CACommonName || !ca.Cert.NotAfter.Equal(f.clock.Now().Add(-backdate).Add(30*day).Truncate(time.Second)) {
		t.Errorf("new CA %s valid until %v", ca.Cert.Subject, ca.Cert.NotAfter)
	}
	verifies(t, f.secret(t, tlsName), ca.Cert)
	if got := f.caBundle(t); !sameCerts(got, []*x509.Certificate{ca.Cert}) {
		t.Errorf("caBundle %v", subjects(got))
	}
}

// TestStartSleepsUntilDue drives Start with the fake clock: it checks at once, sleeps until the
// serving certificate's renewal time (at most Recheck), and renews it when woken.
func TestStartSleepsUntilDue(t *testing.T) {
	f := newFixture(t, 30*day)
	caPEM, caKey, ca := chartCA(t, t0, 300*day)
	crt, key, leaf, err := issueServing(ca, dnsNames, t0.Add(backdate), 30*day)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.install(t, caPEM, caKey, crt, key)
	f.clock.set(pki.RenewAt(leaf).Add(-30 * time.Minute))
	done := make(chan error)
	go func() { done <- f.r.Start(ctx) }()

	w := f.clock.nextWait(t)
	if w.d != 30*time.Minute {
		t.Errorf("slept %v, want 30m (until the serving certificate's renewal time)", w.d)
	}
	if got := string(f.secret(t, tlsName).Data["tls.crt"]); got != string(crt) {
		t.Fatal("renewed too early")
	}
	f.clock.set(pki.RenewAt(leaf))
	w.fire <- f.clock.Now()
	w = f.clock.nextWait(t) // the pass after waking has finished
	if got := f.secret(t, tlsName).Data["tls.crt"]; string(got) == string(crt) {
		t.Error("not renewed after waking at the renewal time")
	}
	if w.d != Recheck {
		t.Errorf("then slept %v, want %v", w.d, Recheck)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start: %v", err)
	}
}

// TestStartRunsAPassWhenTriggered: a change to a watched Secret wakes the Rotator before its next due
// time (the trigger stands in for the Secret watch).
func TestStartRunsAPassWhenTriggered(t *testing.T) {
	f := newFixture(t, 30*day)
	triggers := make(chan struct{})
	f.r.Triggers = triggers
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- f.r.Start(ctx) }()
	if w := f.clock.nextWait(t); w.d != Recheck {
		t.Errorf("everything valid: slept %v, want %v", w.d, Recheck)
	}
	// Someone replaces the serving Secret with a certificate of another CA.
	f.replaceServingWithForeignCA(t)
	triggers <- struct{}{}
	f.clock.nextWait(t) // the triggered pass has finished
	ca, err := pki.ParseCA(f.secret(t, caName).Data["tls.crt"], f.secret(t, caName).Data["tls.key"])
	if err != nil {
		t.Fatal(err)
	}
	verifies(t, f.secret(t, tlsName), ca.Cert)
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start: %v", err)
	}
}

func TestFlags(t *testing.T) {
	var f Flags
	fs := flag.NewFlagSet("rukpak", flag.ContinueOnError)
	f.Bind(fs)
	if f.Enabled() {
		t.Error("enabled without flags")
	}
	err := fs.Parse([]string{
		"--platform-ca-secret=olmv1-system/olmv1-ca",
		"--platform-serving-secret=olmv1-system/catalogd-tls:catalogd.olmv1-system.svc,catalogd.olmv1-system.svc.cluster.local",
		"--platform-serving-secret=olmv1-system/rukpak-tls:rukpak.olmv1-system.svc",
		"--platform-apiservice=" + asName,
		"--platform-cert-validity=720h",
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := f.Config()
	if err != nil {
		t.Fatal(err)
	}
	if !f.Enabled() || cfg.CASecret.String() != "olmv1-system/olmv1-ca" || len(cfg.Serving) != 2 ||
		cfg.Serving[0].Name != "catalogd-tls" || len(cfg.Serving[0].DNSNames) != 2 || cfg.Serving[1].DNSNames[0] != "rukpak.olmv1-system.svc" ||
		len(cfg.APIServices) != 1 || cfg.Validity != 30*day {
		t.Errorf("config %+v", cfg)
	}
	for _, bad := range []string{"olmv1-system/catalogd-tls", "catalogd-tls:a.svc", "ns/name:", "/x:a"} {
		if _, err := ParseServingSecret(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := ParseSecretRef("olmv1-ca"); err == nil {
		t.Error("a CA Secret without namespace accepted")
	}
}

type wait struct {
	d    time.Duration
	fire chan time.Time
}

// fakeClock hands every After to the test through waits; the test sets the time and fires it.
type fakeClock struct {
	now   chan time.Time // holds the current time (a one-slot mutex)
	waits chan wait
}

func newFakeClock(t time.Time) *fakeClock {
	c := &fakeClock{now: make(chan time.Time, 1), waits: make(chan wait, 1)}
	c.now <- t
	return c
}

func (c *fakeClock) Now() time.Time {
	t := <-c.now
	c.now <- t
	return t
}

func (c *fakeClock) set(t time.Time) {
	<-c.now
	c.now <- t
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	w := wait{d: d, fire: make(chan time.Time, 1)}
	c.waits <- w
	return w.fire
}

func (c *fakeClock) nextWait(t *testing.T) wait {
	t.Helper()
	select {
	case w := <-c.waits:
		return w
	case <-time.After(30 * time.Second):
		t.Fatal("the Rotator never went to sleep")
		return wait{}
	}
}
