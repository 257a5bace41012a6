package suite

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// The operator-controller specs of upgrades: an Operator follows its catalog to a new version, moves
// only along upgrade edges unless told otherwise, and stays where it is while paused.
var _ = Describe("operator-controller", Label("operator-controller"), func() {
	var (
		dc dynamic.Interface
		c  client.Client
	)

	BeforeEach(func() {
		dc, c = operatorClients()
	})

	It("installs example-operator from index 0.1.0, follows the catalog to 0.2.0, and removes everything on deletion", Label("seed-catalog-update"), func(ctx SpecContext) {
		const catalogName, opName, installNS = "example-catalog", "example-operator", "example-operator-system"
		catalogRefs, bundleRefs := pushExampleOperator(ctx, "example-index")

		By("creating a Catalog on index:0.1.0 and waiting until it is unpacked and served")
		catalogs := dc.Resource(catalogGVR)
		_, err := catalogs.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "catalogd.operatorframework.io/v1alpha1", "kind": "Catalog",
			"metadata": map[string]any{"name": catalogName},
			"spec":     map[string]any{"source": map[string]any{"type": "Image", "image": map[string]any{"ref": catalogRefs["0.1.0"]}}},
		}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_ = catalogs.Delete(ctx, catalogName, metav1.DeleteOptions{})
		})
		catalog := catalogNamed(catalogName)
		waitCondition(ctx, c, catalog, "Serving", "True", 2*time.Minute, anyGeneration(), andAlso(func(g Gomega) {
			g.Expect(findCondition(catalog, "Unpacked")).To(HaveKeyWithValue("status", "True"))
		}))

		By("listing its package, channel and bundle through CatalogMetadata")
		Eventually(func(g Gomega) {
			list, err := dc.Resource(catalogMetadataGVR).List(ctx, metav1.ListOptions{LabelSelector: "catalog=" + catalogName})
			g.Expect(err).NotTo(HaveOccurred())
			var got []string
			for _, item := range list.Items {
				schema, _, _ := unstructured.NestedString(item.Object, "spec", "schema")
				name, _, _ := unstructured.NestedString(item.Object, "spec", "name")
				got = append(got, schema+"/"+name)
			}
			g.Expect(got).To(ConsistOf("olm.package/example-operator", "olm.channel/stable", "olm.bundle/example-operator.v0.1.0"))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())

		By("creating the Operator: a BundleDeployment installs bundle 0.1.0")
		ops := dc.Resource(operatorGVR)
		_, err = ops.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "operators.operatorframework.io/v1alpha1", "kind": "Operator",
			"metadata": map[string]any{"name": opName},
			// upgradeScope AnyVersion: 0.1.0 → 0.2.0 crosses a 0.x minor, which the semver guard
			// rails hold back by default; this spec follows the catalog's edge.
			"spec": map[string]any{"packageName": "example-operator", "upgradeScope": "AnyVersion"},
		}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) { _ = ops.Delete(ctx, opName, metav1.DeleteOptions{}) })
		bd := waitBundleDeploymentRef(ctx, c, opName, bundleRefs["0.1.0"])
		Expect(bd.Spec.ProvisionerClassName).To(Equal(rukpakv1alpha1.ProvisionerRegistry))
		Expect(bd.Spec.InstallNamespace).To(Equal(installNS), "the CSV's suggested namespace")
		waitCondition(ctx, c, operatorNamed(opName), "Installed", "True", 2*time.Minute)
		got := waitCondition(ctx, c, operatorNamed(opName), "Healthy", "True", 2*time.Minute)
		version, _, _ := unstructured.NestedString(got.Object, "status", "installedBundle", "version")
		Expect(version).To(Equal("0.1.0"))

		By("moving the Catalog to index:0.2.0: the same BundleDeployment moves to bundle 0.2.0")
		start := time.Now()
		patch := fmt.Sprintf(`{"spec":{"source":{"image":{"ref":%q}}}}`, catalogRefs["0.2.0"])
		_, err = catalogs.Patch(ctx, catalogName, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		moved := waitBundleDeploymentRef(ctx, c, opName, bundleRefs["0.2.0"])
		fmt.Fprintf(GinkgoWriter, "catalog image update → BundleDeployment on bundle 0.2.0: %v\n", time.Since(start))
		Expect(moved.UID).To(Equal(bd.UID))
		Eventually(func(g Gomega) {
			got := waitCondition(ctx, c, operatorNamed(opName), "Installed", "True", 2*time.Minute)
			version, _, _ := unstructured.NestedString(got.Object, "status", "installedBundle", "version")
			g.Expect(version).To(Equal("0.2.0"))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())

		By("deleting the Operator and the Catalog: no BundleDeployment, no CatalogMetadata, no install namespace remain")
		Expect(ops.Delete(ctx, opName, metav1.DeleteOptions{})).To(Succeed())
		Expect(catalogs.Delete(ctx, catalogName, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKey{Name: opName}, &rukpakv1alpha1.BundleDeployment{})).To(Satisfy(apierrors.IsNotFound))
			list, err := dc.Resource(catalogMetadataGVR).List(ctx, metav1.ListOptions{LabelSelector: "catalog=" + catalogName})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(list.Items).To(BeEmpty())
			_, err = env.clientset.CoreV1().Namespaces().Get(ctx, installNS, metav1.GetOptions{})
			g.Expect(err).To(Satisfy(apierrors.IsNotFound))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	})

	It("moves an installed Operator only along upgrade edges; Ignore allows a jump; Manual waits for approval", Label("upgrade-edges"), func(ctx SpecContext) {
		const pkg, opName = "edges-operator", "edges-operator"
		img := map[string]string{
			"0.1.0": pushBundleAs(ctx, "0.1.0", "edges-operator:0.1.0"),
			"0.2.0": pushBundleAs(ctx, "0.2.0", "edges-operator:0.2.0"),
			"1.0.0": pushBundleAs(ctx, "0.2.0", "edges-operator:1.0.0"),
		}
		// stable: 0.1.0 → 0.2.0 (replaces); fast: 1.0.0, with no edge from 0.1.0 or 0.2.0.
		catalogRef := newFixtureCatalog().Package(pkg, "stable").Channel(pkg, "stable", "0.1.0", "0.2.0").Channel(pkg, "fast", "1.0.0").
			Bundle(pkg, "0.1.0", img["0.1.0"]).Bundle(pkg, "0.2.0", img["0.2.0"]).Bundle(pkg, "1.0.0", img["1.0.0"]).
			Push(ctx, "edges-index", "v1")
		createServingCatalog(ctx, c, "edges-catalog", catalogRef)

		By("installing 0.1.0 with upgradePolicy Manual")
		// upgradeScope AnyVersion: Manual offers the edge 0.1.0 → 0.2.0, across a 0.x minor.
		createOperator(ctx, c, opName, map[string]any{"packageName": pkg, "version": "0.1.0", "upgradePolicy": "Manual", "upgradeScope": "AnyVersion"})
		waitBundleDeploymentRef(ctx, c, opName, img["0.1.0"])
		waitCondition(ctx, c, operatorNamed(opName), "Installed", "True", 2*time.Minute)

		By("widening the version range: Manual offers 0.2.0 (the replaces edge) and keeps 0.1.0")
		patchOperator(ctx, c, opName, `{"spec":{"version":""}}`)
		op := waitCondition(ctx, c, operatorNamed(opName), "UpgradeAvailable", "True", time.Minute)
		Expect(conditionMessage(op, "UpgradeAvailable")).To(ContainSubstring(`"approvedVersion":"0.2.0"`))
		Consistently(func(g Gomega) {
			bd := &rukpakv1alpha1.BundleDeployment{}
			g.Expect(c.Get(ctx, client.ObjectKey{Name: opName}, bd)).To(Succeed())
			g.Expect(bd.Spec.Source.Image.Ref).To(Equal(img["0.1.0"]))
		}).WithContext(ctx).WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

		By("approving 0.2.0")
		patchOperator(ctx, c, opName, `{"spec":{"approvedVersion":"0.2.0"}}`)
		waitBundleDeploymentRef(ctx, c, opName, img["0.2.0"])
		waitCondition(ctx, c, operatorNamed(opName), "UpgradeAvailable", "False", time.Minute)

		By("asking for 1.0.0 under Enforce: refused, 0.2.0 stays installed")
		patchOperator(ctx, c, opName, `{"spec":{"upgradePolicy":"Automatic","approvedVersion":null,"version":"1.0.0"}}`)
		waitCondition(ctx, c, operatorNamed(opName), "Resolved", "False", time.Minute, withMessage("no upgrade edge", "stays installed"))
		bd := &rukpakv1alpha1.BundleDeployment{}
		Expect(c.Get(ctx, client.ObjectKey{Name: opName}, bd)).To(Succeed())
		Expect(bd.Spec.Source.Image.Ref).To(Equal(img["0.2.0"]))

		By("upgradeConstraintPolicy Ignore allows the jump to 1.0.0")
		patchOperator(ctx, c, opName, `{"spec":{"upgradeConstraintPolicy":"Ignore"}}`)
		waitBundleDeploymentRef(ctx, c, opName, img["1.0.0"])
		waitCondition(ctx, c, operatorNamed(opName), "Resolved", "True", time.Minute)
		Eventually(func(g Gomega) {
			op := waitCondition(ctx, c, operatorNamed(opName), "Installed", "True", 2*time.Minute)
			version, _, _ := unstructured.NestedString(op.Object, "status", "installedBundle", "version")
			g.Expect(version).To(Equal("1.0.0"))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	})

	It("keeps a paused Operator on its version while its catalog moves on, and upgrades it once resumed", Label("lifecycle"), func(ctx SpecContext) {
		const catalogName, opName = "paused-catalog", "paused-operator"
		catalogRefs, bundleRefs := pushExampleOperator(ctx, "paused-index")
		createServingCatalog(ctx, c, catalogName, catalogRefs["0.1.0"])
		// upgradeScope AnyVersion: resuming follows the edge 0.1.0 → 0.2.0, across a 0.x minor.
		createOperator(ctx, c, opName, map[string]any{"packageName": "example-operator", "upgradeScope": "AnyVersion"})
		waitBundleDeploymentRef(ctx, c, opName, bundleRefs["0.1.0"])
		waitCondition(ctx, c, operatorNamed(opName), "Installed", "True", 2*time.Minute)

		By("pausing the Operator: the Paused condition says so and the BundleDeployment is paused too")
		patchOperator(ctx, c, opName, `{"spec":{"paused":true}}`)
		op := waitCondition(ctx, c, operatorNamed(opName), "Paused", "True", time.Minute)
		Expect(conditionMessage(op, "Paused")).To(ContainSubstring("paused since"))
		Eventually(func(g Gomega) {
			bd := &rukpakv1alpha1.BundleDeployment{}
			g.Expect(c.Get(ctx, client.ObjectKey{Name: opName}, bd)).To(Succeed())
			g.Expect(bd.Spec.Paused).To(BeTrue())
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())

		By("moving the catalog to index:0.2.0: the paused Operator stays on 0.1.0")
		catalogs := dc.Resource(catalogGVR)
		before, err := catalogs.Get(ctx, catalogName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		oldHash, _, _ := unstructured.NestedString(before.Object, "status", "contentHash")
		_, err = catalogs.Patch(ctx, catalogName, types.MergePatchType,
			[]byte(fmt.Sprintf(`{"spec":{"source":{"image":{"ref":%q}}}}`, catalogRefs["0.2.0"])), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		moved := catalogNamed(catalogName)
		waitCondition(ctx, c, moved, "Serving", "True", 2*time.Minute, anyGeneration(), andAlso(func(g Gomega) {
			g.Expect(nestedString(moved.Object, "status", "contentHash")).NotTo(Equal(oldHash))
		}))
		// operator-controller re-resolves on the Catalog's new content hash within a second; watch
		// for longer than that that nothing moves.
		Consistently(func(g Gomega) {
			bd := &rukpakv1alpha1.BundleDeployment{}
			g.Expect(c.Get(ctx, client.ObjectKey{Name: opName}, bd)).To(Succeed())
			g.Expect(bd.Spec.Source.Image.Ref).To(Equal(bundleRefs["0.1.0"]))
			got, err := dc.Resource(operatorGVR).Get(ctx, opName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			version, _, _ := unstructured.NestedString(got.Object, "status", "installedBundle", "version")
			g.Expect(version).To(Equal("0.1.0"))
		}).WithContext(ctx).WithTimeout(5 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

		By("resuming: the Operator upgrades to 0.2.0")
		patchOperator(ctx, c, opName, `{"spec":{"paused":false}}`)
		waitCondition(ctx, c, operatorNamed(opName), "Paused", "False", time.Minute)
		bd := waitBundleDeploymentRef(ctx, c, opName, bundleRefs["0.2.0"])
		Expect(bd.Spec.Paused).To(BeFalse())
		Eventually(func(g Gomega) {
			got, err := dc.Resource(operatorGVR).Get(ctx, opName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			version, _, _ := unstructured.NestedString(got.Object, "status", "installedBundle", "version")
			g.Expect(version).To(Equal("0.2.0"))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	})
})
