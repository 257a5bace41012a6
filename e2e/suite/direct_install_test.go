package suite

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// Direct installs (docs/operator-controller.md, "Direct installs"): an Operator with
// spec.source.type Bundle installs a bundle image that no catalog lists, with no Catalog at all,
// upgrades when its reference changes, and uninstalls when it is deleted.
var _ = Describe("operator-controller direct installs", Label("operator-controller", "direct-install"), func() {
	It("installs a bundle image no catalog lists, upgrades it by changing the reference, and removes it on deletion", func(ctx SpecContext) {
		const opName, installNS = "direct-example", "direct-example-system"
		_, c := operatorClients()
		// The example-operator bundles under a repository no catalog names.
		v1 := pushBundleAs(ctx, "0.1.0", "direct-example:v1")
		v2 := pushBundleAs(ctx, "0.2.0", "direct-example:v2")

		By("an Operator of type Bundle gets a BundleDeployment on the image, without resolution")
		createOperator(ctx, c, opName, map[string]any{
			"installNamespace": installNS,
			"source": map[string]any{"type": "Bundle", "bundle": map[string]any{
				"source": map[string]any{"type": "Image", "image": map[string]any{"ref": v1}},
			}},
		})
		bd := waitBundleDeploymentRef(ctx, c, opName, v1)
		Expect(bd.Spec.ProvisionerClassName).To(Equal(rukpakv1alpha1.ProvisionerRegistry))
		Expect(bd.Spec.InstallNamespace).To(Equal(installNS))
		op := waitCondition(ctx, c, operatorNamed(opName), "Resolved", "True", time.Minute, withReason("DirectBundle"))
		Expect(conditionMessage(op, "Resolved")).To(ContainSubstring("no resolution: installs " + v1 + " directly"))

		By("rukpak installs it: the Operator is Installed and Healthy, and installedBundle names the digest")
		waitCondition(ctx, c, operatorNamed(opName), "Installed", "True", 2*time.Minute)
		op = waitCondition(ctx, c, operatorNamed(opName), "Healthy", "True", 2*time.Minute)
		Expect(nestedString(op.Object, "status", "installedBundle", "source")).To(ContainSubstring("@sha256:"))
		dep, err := env.clientset.AppsV1().Deployments(installNS).Get(ctx, "example-operator", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(dep.Spec.Template.Spec.Containers[0].Image).To(HaveSuffix(":v0.1.0"))

		By("changing the reference upgrades to the new bundle")
		patchOperator(ctx, c, opName, `{"spec":{"source":{"bundle":{"source":{"image":{"ref":"`+v2+`"}}}}}}`)
		waitBundleDeploymentRef(ctx, c, opName, v2)
		waitCondition(ctx, c, operatorNamed(opName), "Installed", "True", 2*time.Minute, andAlso(func(g Gomega) {
			d, err := env.clientset.AppsV1().Deployments(installNS).Get(ctx, "example-operator", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(HaveSuffix(":v0.2.0"))
		}))
		got := &rukpakv1alpha1.BundleDeployment{}
		Expect(c.Get(ctx, client.ObjectKey{Name: opName}, got)).To(Succeed())
		Expect(got.Status.InstalledRevision).To(BeNumerically(">=", 2))

		By("deleting the Operator removes the BundleDeployment, the operator and the namespace created for it")
		Expect(c.Delete(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "operators.operatorframework.io/v1alpha1", "kind": "Operator", "metadata": map[string]any{"name": opName},
		}})).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKey{Name: opName}, &rukpakv1alpha1.BundleDeployment{})).To(Satisfy(apierrors.IsNotFound))
			_, err := env.clientset.CoreV1().Namespaces().Get(ctx, installNS, metav1.GetOptions{})
			g.Expect(err).To(Satisfy(apierrors.IsNotFound))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	})
})
