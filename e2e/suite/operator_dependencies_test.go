package suite

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// The operator-controller specs of dependencies: a bundle that needs another package's API, and
// dependencyPolicy Install creating (and removing) the Operators of what a package requires.
var _ = Describe("operator-controller", Label("operator-controller"), func() {
	var (
		dc dynamic.Interface
		c  client.Client
	)

	BeforeEach(func() {
		dc, c = operatorClients()
	})

	It("installs a bundle that needs another package's API only once an Operator installs that package", Label("dependencies"), func(ctx SpecContext) {
		needsImg := pushBundleAs(ctx, "0.1.0", "widget-consumer:1.0.0")
		providerImg := pushBundleAs(ctx, "0.2.0", "widget-provider:1.0.0")
		catalogRef := newFixtureCatalog().
			SingleBundlePackage("widget-consumer", "1.0.0", needsImg, gvkProperty("olm.gvk.required", "widgets.example.olmv1.io", "v1", "Widget")).
			SingleBundlePackage("widget-provider", "1.0.0", providerImg, gvkProperty("olm.gvk", "widgets.example.olmv1.io", "v1", "Widget")).
			Push(ctx, "widgets-index", "v1")
		createServingCatalog(ctx, c, "widgets-catalog", catalogRef)

		By("an Operator for widget-consumer alone is not installed, and says which Operator to create")
		createOperator(ctx, c, "widget-consumer", map[string]any{"packageName": "widget-consumer"})
		waitCondition(ctx, c, operatorNamed("widget-consumer"), "Resolved", "False", time.Minute,
			withMessage("widgets.example.olmv1.io/v1 Widget", `packageName "widget-provider"`))
		Expect(c.Get(ctx, client.ObjectKey{Name: "widget-consumer"}, &rukpakv1alpha1.BundleDeployment{})).To(Satisfy(apierrors.IsNotFound))

		By("an Operator for widget-provider lets both install")
		createOperator(ctx, c, "widget-provider", map[string]any{"packageName": "widget-provider"})
		waitBundleDeploymentRef(ctx, c, "widget-provider", providerImg)
		waitBundleDeploymentRef(ctx, c, "widget-consumer", needsImg)
		waitCondition(ctx, c, operatorNamed("widget-provider"), "Installed", "True", 2*time.Minute)
		waitCondition(ctx, c, operatorNamed("widget-consumer"), "Installed", "True", 2*time.Minute)
	})

	It("installs a composite package's dependencies itself with dependencyPolicy Install, reuses the user's Operator, and removes what it created", Label("dependencies-install"), func(ctx SpecContext) {
		By("pushing the composite fixture's bundles and building its catalog with kubectl olmv1 catalog add-bundle")
		catalogRef := env.registry.Addr + "/catalogs/composite-index:v1"
		pushCompositeOperator(ctx, "bundles", catalogRef)
		createServingCatalog(ctx, c, "composite-catalog", catalogRef)
		ops := dc.Resource(operatorGVR)
		deployment := func(ns, name string) error {
			_, err := env.clientset.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			return err
		}
		dependencies := func(op *unstructured.Unstructured) map[string]string {
			deps, _, _ := unstructured.NestedSlice(op.Object, "status", "dependencies")
			out := map[string]string{}
			for _, d := range deps {
				m := d.(map[string]any)
				out[fmt.Sprint(m["package"])] = fmt.Sprintf("%v@%v by %v", m["operator"], m["version"], m["requiredBy"])
			}
			return out
		}

		By("one Operator with dependencyPolicy Install installs hub-operator and creates an Operator for each API it needs")
		createOperator(ctx, c, "hub", map[string]any{"packageName": "hub-operator", "version": "1.0.0", "dependencyPolicy": "Install"})
		for _, name := range []string{"hub", "alpha-operator", "beta-operator"} {
			waitCondition(ctx, c, operatorNamed(name), "Installed", "True", 3*time.Minute)
		}
		for _, dep := range []string{"alpha-operator", "beta-operator"} {
			op, err := ops.Get(ctx, dep, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(op.GetLabels()).To(HaveKeyWithValue("operators.operatorframework.io/dependency", "true"))
			Expect(op.GetOwnerReferences()).To(ConsistOf(HaveField("Name", "hub")))
			Expect(op.Object["spec"]).To(HaveKeyWithValue("packageName", dep))
		}
		hub, err := ops.Get(ctx, "hub", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(dependencies(hub)).To(Equal(map[string]string{
			"alpha-operator": "alpha-operator@1.0.0 by olm.gvk.required composite.olmv1.io/v1 Alpha",
			"beta-operator":  "beta-operator@1.0.0 by olm.gvk.required composite.olmv1.io/v1 Beta",
		}))
		installNamespace := func(name string) string {
			op, err := ops.Get(ctx, name, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			ns, _, _ := unstructured.NestedString(op.Object, "status", "installNamespace")
			return ns
		}
		alphaNS, betaNS := installNamespace("alpha-operator"), installNamespace("beta-operator")
		Expect(deployment(alphaNS, "alpha-operator")).To(Succeed())
		Expect(deployment(betaNS, "beta-operator")).To(Succeed())

		By("deleting the Operator removes the two Operators it created and everything they installed")
		Expect(ops.Delete(ctx, "hub", metav1.DeleteOptions{})).To(Succeed())
		for _, dep := range []string{"hub", "alpha-operator", "beta-operator"} {
			Eventually(func() error { _, err := ops.Get(ctx, dep, metav1.GetOptions{}); return err }).
				WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(250*time.Millisecond).Should(Satisfy(apierrors.IsNotFound), "Operator %s", dep)
			Eventually(func() error { return c.Get(ctx, client.ObjectKey{Name: dep}, &rukpakv1alpha1.BundleDeployment{}) }).
				WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(250*time.Millisecond).Should(Satisfy(apierrors.IsNotFound), "BundleDeployment %s", dep)
		}
		Eventually(func() error { return deployment(alphaNS, "alpha-operator") }).WithContext(ctx).WithTimeout(time.Minute).Should(Satisfy(apierrors.IsNotFound))
		Eventually(func() error { return deployment(betaNS, "beta-operator") }).WithContext(ctx).WithTimeout(time.Minute).Should(Satisfy(apierrors.IsNotFound))

		By("an Operator the user created for a dependency is reused, not duplicated, and survives")
		createOperator(ctx, c, "my-alpha", map[string]any{"packageName": "alpha-operator"})
		waitCondition(ctx, c, operatorNamed("my-alpha"), "Installed", "True", 2*time.Minute)
		createOperator(ctx, c, "hub", map[string]any{"packageName": "hub-operator", "version": "1.0.0", "dependencyPolicy": "Install"})
		waitCondition(ctx, c, operatorNamed("hub"), "Installed", "True", 3*time.Minute)
		waitCondition(ctx, c, operatorNamed("beta-operator"), "Installed", "True", 2*time.Minute)
		_, err = ops.Get(ctx, "alpha-operator", metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no second Operator for alpha-operator: %v", err)
		hub, err = ops.Get(ctx, "hub", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(dependencies(hub)).To(HaveKeyWithValue("alpha-operator", "my-alpha@1.0.0 by olm.gvk.required composite.olmv1.io/v1 Alpha"))
		mine, err := ops.Get(ctx, "my-alpha", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(mine.GetOwnerReferences()).To(BeEmpty(), "the user's Operator gets no ownerReference")

		By("an upgrade that no longer needs beta-operator removes the Operator created for it")
		patchOperator(ctx, c, "hub", `{"spec":{"version":"1.1.0"}}`)
		Eventually(func(g Gomega) {
			hub, err := ops.Get(ctx, "hub", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			installed, _, _ := unstructured.NestedString(hub.Object, "status", "installedBundle", "version")
			g.Expect(installed).To(Equal("1.1.0"))
			g.Expect(dependencies(hub)).To(Equal(map[string]string{"alpha-operator": "my-alpha@1.0.0 by olm.gvk.required composite.olmv1.io/v1 Alpha"}))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		Eventually(func() error { _, err := ops.Get(ctx, "beta-operator", metav1.GetOptions{}); return err }).
			WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Satisfy(apierrors.IsNotFound))
		Eventually(func() error { return deployment(betaNS, "beta-operator") }).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Satisfy(apierrors.IsNotFound))

		By("deleting the hub leaves the user's Operator installed")
		Expect(ops.Delete(ctx, "hub", metav1.DeleteOptions{})).To(Succeed())
		Eventually(func() error { _, err := ops.Get(ctx, "hub", metav1.GetOptions{}); return err }).
			WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Satisfy(apierrors.IsNotFound))
		waitCondition(ctx, c, operatorNamed("my-alpha"), "Installed", "True", time.Minute)
		Expect(deployment(installNamespace("my-alpha"), "alpha-operator")).To(Succeed())
	})
})
