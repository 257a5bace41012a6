package main

import (
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"

	"github.com/olmv1/olmv1/rukpak/internal/provisioner/certs"
)

// A CA Secret that does not hold a valid CA is reported (log line and Event) and never replaced;
// bundles with webhooks say why they cannot get certificates; deleting the Secret recovers.
func TestCorruptCASecretIsReportedNotReplaced(t *testing.T) {
	cs := fake.NewClientset(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: certs.WebhookCASecretName, Namespace: "sys", ResourceVersion: "7"},
		Data:       map[string][]byte{corev1.TLSCertKey: []byte("not a certificate"), corev1.TLSPrivateKeyKey: []byte("nor a key")},
	})
	rec := events.NewFakeRecorder(10)
	w := &webhookFlags{provider: certs.SelfSignedName, recorder: rec, log: logr.Discard()}
	r, err := w.registryRenderer(t.Context(), cs, "sys")
	if err != nil || r == nil {
		t.Fatalf("rukpak must start with a corrupt CA Secret (bundles without webhooks still install): %v", err)
	}
	select {
	case ev := <-rec.Events:
		if !strings.Contains(ev, "Warning CorruptWebhookCA") || !strings.Contains(ev, "delete it to have rukpak create a new CA") {
			t.Errorf("event: %s", ev)
		}
	default:
		t.Fatal("no Event for the corrupt CA Secret")
	}
	s, err := cs.CoreV1().Secrets("sys").Get(t.Context(), certs.WebhookCASecretName, metav1.GetOptions{})
	if err != nil || string(s.Data[corev1.TLSCertKey]) != "not a certificate" {
		t.Fatalf("the corrupt Secret was replaced: %v", err)
	}
	ss := w.rotator.Provider()
	if _, err := ss.Objects(certs.Service{Name: "webhook", Namespace: "ns"}); err == nil || !strings.Contains(err.Error(), "does not hold a valid CA") {
		t.Errorf("rendering a webhook's certificate: %v", err)
	}
	// The rotator finds it again: reported once per version of the Secret, not again.
	if err := w.rotator.Check(t.Context()); err == nil {
		t.Error("check must fail while the Secret is corrupt")
	}
	if len(rec.Events) != 0 {
		t.Errorf("the same corrupt Secret was reported twice")
	}
	// Deleting it recovers: a new CA is created and certificates are issued.
	if err := cs.CoreV1().Secrets("sys").Delete(t.Context(), certs.WebhookCASecretName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := w.rotator.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := ss.Objects(certs.Service{Name: "webhook", Namespace: "ns"}); err != nil {
		t.Errorf("after deleting the corrupt Secret: %v", err)
	}
}

// The other providers need no CA and no rotator; an unknown name names the flag.
func TestRegistryRendererOtherProviders(t *testing.T) {
	for _, name := range []string{certs.CertManagerName, certs.OpenShiftServiceCAName} {
		w := &webhookFlags{provider: name, issuerKind: "ClusterIssuer", issuerName: "ca"}
		if r, err := w.registryRenderer(t.Context(), fake.NewClientset(), "sys"); err != nil || r == nil || w.rotator != nil {
			t.Errorf("%s: renderer %v, rotator %v, err %v", name, r != nil, w.rotator != nil, err)
		}
	}
	w := &webhookFlags{provider: "vault"}
	if _, err := w.registryRenderer(t.Context(), fake.NewClientset(), "sys"); err == nil || !strings.HasPrefix(err.Error(), "--webhook-cert-provider: ") {
		t.Errorf("unknown provider: %v", err)
	}
}
