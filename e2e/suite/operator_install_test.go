package suite

import (
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// The operator-controller specs of what an Operator that names only its package installs: the
// highest semver bundle of the default channel, from an image catalog or the seed's ConfigMap catalog.
var _ = Describe("operator-controller", Label("operator-controller"), func() {
	var (
		dc dynamic.Interface
		c  client.Client
	)

	BeforeEach(func() {
		dc, c = operatorClients()
	})

	It("installs the highest semver bundle of the default channel for an Operator that names only its package", Label("seed-highest-semver"), func(ctx SpecContext) {
		const opName, installNS = "gadget-operator", "gadget-system"
		catalogRef, bundleRefs := pushGadgetOperator(ctx)
		Expect(bundleRefs).To(HaveKey("1.10.0"))
		createServingCatalog(ctx, c, "gadget-catalog", catalogRef)

		By("an Operator with only packageName resolves to 1.10.0: the highest semver of the default channel stable " +
			"(1.2.0 sorts above it as a string; 2.0.0 is only in candidate)")
		createOperator(ctx, c, opName, map[string]any{"packageName": "gadget-operator"})
		bd := waitBundleDeploymentRef(ctx, c, opName, bundleRefs["1.10.0"])
		Expect(bd.Spec.ProvisionerClassName).To(Equal(rukpakv1alpha1.ProvisionerRegistry))
		Expect(bd.Spec.InstallNamespace).To(Equal(installNS), "the CSV's suggested namespace")
		op := waitCondition(ctx, c, operatorNamed(opName), "Resolved", "True", time.Minute)
		Expect(conditionMessage(op, "Resolved")).To(ContainSubstring("gadget-operator.v1.10.0"))
		resolved, _, _ := unstructured.NestedString(op.Object, "status", "resolvedBundle", "version")
		Expect(resolved).To(Equal("1.10.0"))

		By("the BundleDeployment and the Operator become Installed and Healthy (CRD Established, Deployment Available)")
		waitCondition(ctx, c, bd, rukpakv1alpha1.TypeHealthy, "True", 2*time.Minute, anyGeneration(), andAlso(func(g Gomega) {
			g.Expect(meta.IsStatusConditionTrue(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled)).To(BeTrue(), "%v", bd.Status.Conditions)
		}))
		waitCondition(ctx, c, operatorNamed(opName), "Installed", "True", 2*time.Minute)
		op = waitCondition(ctx, c, operatorNamed(opName), "Healthy", "True", 2*time.Minute)
		installed, _, _ := unstructured.NestedString(op.Object, "status", "installedBundle", "version")
		Expect(installed).To(Equal("1.10.0"))
		crd, err := dc.Resource(crdGVR).Get(ctx, "gadgets.semver.olmv1.io", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(findCondition(crd, "Established")).To(HaveKeyWithValue("status", "True"))
		dep, err := env.clientset.AppsV1().Deployments(installNS).Get(ctx, "gadget-operator", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(dep.Spec.Template.Spec.Containers[0].Image).To(HaveSuffix(":v1.10.0"))
	})

	It("installs the seed's ConfigMap catalog's package and removes it on deletion", Label("seed-configmap-flow"), func(ctx SpecContext) {
		const cmName, catalogName, opName = "seed-flow-content", "seed-flow", "hello-operator"
		content, err := os.ReadFile(filepath.Join(env.repoRoot, "e2e", "testdata", "catalogs", "demo", "catalog.yaml"))
		Expect(err).NotTo(HaveOccurred())
		_, err = env.clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: catalogdNamespace}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred())
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cmName, Namespace: catalogdNamespace}, Data: map[string]string{"catalog.yaml": string(content)}}
		_, err = env.clientset.CoreV1().ConfigMaps(catalogdNamespace).Create(ctx, cm, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_ = env.clientset.CoreV1().ConfigMaps(catalogdNamespace).Delete(ctx, cmName, metav1.DeleteOptions{})
		})
		catalogs := dc.Resource(catalogGVR)
		_, err = catalogs.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "catalogd.operatorframework.io/v1alpha1", "kind": "Catalog",
			"metadata": map[string]any{"name": catalogName},
			"spec": map[string]any{"source": map[string]any{"type": "ConfigMaps", "configMaps": []any{
				map[string]any{"configMap": map[string]any{"name": cmName}, "path": "configs"},
			}}},
		}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) { _ = catalogs.Delete(ctx, catalogName, metav1.DeleteOptions{}) })
		waitCondition(ctx, c, catalogNamed(catalogName), "Serving", "True", 2*time.Minute, anyGeneration())

		By("an Operator for hello-operator gets a BundleDeployment for the highest bundle of the default channel")
		createOperator(ctx, c, opName, map[string]any{"packageName": "hello-operator"})
		bd := waitBundleDeploymentRef(ctx, c, opName, "127.0.0.1:5001/bundles/hello-operator:v1.1.0")
		Expect(bd.Spec.InstallNamespace).To(Equal("hello-operator"))
		op := waitCondition(ctx, c, operatorNamed(opName), "Resolved", "True", time.Minute)
		Expect(conditionMessage(op, "Resolved")).To(ContainSubstring("hello-operator.v1.1.0"))

		By("deleting the Operator and the Catalog removes the BundleDeployment, the namespace and the CatalogMetadata")
		Expect(dc.Resource(operatorGVR).Delete(ctx, opName, metav1.DeleteOptions{})).To(Succeed())
		Expect(catalogs.Delete(ctx, catalogName, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKey{Name: opName}, &rukpakv1alpha1.BundleDeployment{})).To(Satisfy(apierrors.IsNotFound))
			list, err := dc.Resource(catalogMetadataGVR).List(ctx, metav1.ListOptions{LabelSelector: "catalog=" + catalogName})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(list.Items).To(BeEmpty())
			_, err = env.clientset.CoreV1().Namespaces().Get(ctx, "hello-operator", metav1.GetOptions{})
			g.Expect(err).To(Satisfy(apierrors.IsNotFound))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	})
})
