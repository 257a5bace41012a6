package suite

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/x509"
	"fmt"
	"math/big"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	olmpki "github.com/olmv1/olmv1/platform/pki"
)

// webhookCASecret is where rukpak keeps the CA of the self-signed certificate provider.
const webhookCASecret = "rukpak-webhook-ca"

// expireWebhookCA rewrites rukpak's webhook CA with the same key and subject but a validity that ends
// in ten minutes: rukpak must rotate it, and serving certificates it signed still verify against the
// re-dated certificate (same issuer name, key and key ID), as they would against the original one
// nearing its end.
func expireWebhookCA(ctx context.Context) {
	s, err := env.clientset.CoreV1().Secrets(namespace).Get(ctx, webhookCASecret, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	ca, err := olmpki.ParseCA(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
	Expect(err).NotTo(HaveOccurred())
	tmpl := *ca.Cert
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	Expect(err).NotTo(HaveOccurred())
	tmpl.SerialNumber = serial
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-2*time.Hour), time.Now().Add(10*time.Minute)
	der, err := x509.CreateCertificate(rand.Reader, &tmpl, &tmpl, ca.Key.Public(), ca.Key)
	Expect(err).NotTo(HaveOccurred())
	redated, err := x509.ParseCertificate(der)
	Expect(err).NotTo(HaveOccurred())
	s.Data[corev1.TLSCertKey] = olmpki.EncodeCert(redated)
	_, err = env.clientset.CoreV1().Secrets(namespace).Update(ctx, s, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
}

// restartRukpak deletes rukpak's pod; its Deployment starts another, which loads the CA at start.
func restartRukpak(ctx context.Context) {
	pod := onePod(Default, ctx, "rukpak")
	Expect(env.clientset.CoreV1().Pods(namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{})).To(Succeed())
}

// certificatesLoaded counts the serving certificates widget-operator's log says it loaded, read from
// kubelet through the API server (kubectl logs).
func certificatesLoaded(ctx context.Context, g Gomega, podName string) int {
	raw, err := env.clientset.CoreV1().Pods("widget-operator-system").GetLogs(podName, &corev1.PodLogOptions{}).DoRaw(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	return strings.Count(string(raw), "serving certificate loaded")
}

// webhookCABundle is the caBundle kube-apiserver uses to call the validating webhook.
func webhookCABundle(ctx context.Context) []byte {
	vwcs, err := env.clientset.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	for _, w := range vwcs.Items {
		for _, h := range w.Webhooks {
			if h.Name == "vwidget.widgets.olmv1.io" {
				return h.ClientConfig.CABundle
			}
		}
	}
	Fail("no ValidatingWebhookConfiguration has the webhook vwidget.widgets.olmv1.io")
	return nil
}

// rotateWhileServing rotates the webhook CA while widget-operator runs and checks that every webhook
// call made meanwhile is answered: first with the old serving certificate (trusted through the old CA
// kept in caBundle), then with the new one once kubelet has updated the Secret volume and the operator
// has reloaded it.
func rotateWhileServing(ctx context.Context, dc dynamic.Interface) {
	pod := widgetPod(Default, ctx)
	loadedBefore := certificatesLoaded(ctx, Default, pod.Name)
	bundleBefore := webhookCABundle(ctx)
	expireWebhookCA(ctx)
	restartRukpak(ctx)

	var failures []string
	calls := 0
	Eventually(func(g Gomega) {
		calls++
		name := fmt.Sprintf("rotation-%d", calls)
		if _, err := dc.Resource(widgetV1).Namespace(widgetNamespace).Create(ctx, widget("v1", name, map[string]any{"size": int64(2)}), metav1.CreateOptions{}); err != nil {
			failures = append(failures, err.Error())
		} else {
			_ = dc.Resource(widgetV1).Namespace(widgetNamespace).Delete(ctx, name, metav1.DeleteOptions{})
		}
		bundle := webhookCABundle(ctx)
		g.Expect(bytes.Equal(bundle, bundleBefore)).To(BeFalse(), "caBundle not rotated yet")
		g.Expect(olmpki.ParseCerts(bundle)).To(HaveLen(2), "caBundle trusts the new and the old CA during the rotation")
		g.Expect(certificatesLoaded(ctx, g, pod.Name)).To(BeNumerically(">", loadedBefore), "the operator has not loaded the new certificate yet")
	}).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())
	Expect(failures).To(BeEmpty(), "webhook calls that failed during the rotation (of %d)", calls)
	Expect(widgetPod(Default, ctx).UID).To(Equal(pod.UID), "the operator was not restarted")

	By("after the rotation the webhook still refuses a bad Widget with its own message")
	_, err := dc.Resource(widgetV1).Namespace(widgetNamespace).Create(ctx, widget("v1", "too-big-after", map[string]any{"size": int64(99)}), metav1.CreateOptions{})
	Expect(err).To(MatchError(ContainSubstring("widget-operator: spec.size must be between 0 and 10, got 99")))
}
