package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/e2e/localcluster"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

var (
	operatorGVR = schema.GroupVersionResource{Group: "operators.operatorframework.io", Version: "v1alpha1", Resource: "operators"}
	crdGVR      = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// exampleOperatorDir holds the example-operator bundles and catalogs (e2e/testdata/example-operator).
func exampleOperatorDir() string {
	return filepath.Join(env.repoRoot, "e2e", "testdata", "example-operator")
}

// pushExampleOperator pushes bundles 0.1.0 and 0.2.0 and the catalog images index:0.1.0 and
// index:0.2.0 (bundle references rewritten to the local registry) and returns the catalog refs and
// the bundle refs by version.
func pushExampleOperator(ctx context.Context, repo string) (catalogs, bundles map[string]string) {
	catalogs, bundles, err := localcluster.PushExampleOperator(ctx, env.repoRoot, env.registry.Addr, repo)
	Expect(err).NotTo(HaveOccurred())
	return catalogs, bundles
}

// pushCatalog builds a catalog image from one FBC file's content and pushes it as repo:tag.
func pushCatalog(ctx context.Context, fbc, repo, tag string) string {
	dir := GinkgoT().TempDir()
	Expect(os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(fbc), 0o644)).To(Succeed())
	img, err := imagebuild.CatalogImage(dir)
	Expect(err).NotTo(HaveOccurred())
	ref := env.registry.Addr + "/catalogs/" + repo + ":" + tag
	_, err = imagebuild.Push(ctx, img, ref, imagebuild.WithInsecure())
	Expect(err).NotTo(HaveOccurred())
	return ref
}

// pushBundleAs pushes the example-operator bundle of version v under another repository and tag.
func pushBundleAs(ctx context.Context, v, repoTag string) string {
	img, err := imagebuild.RegistryV1BundleImage(filepath.Join(exampleOperatorDir(), "bundles", v))
	Expect(err).NotTo(HaveOccurred())
	ref := env.registry.Addr + "/bundles/" + repoTag
	_, err = imagebuild.Push(ctx, img, ref, imagebuild.WithInsecure())
	Expect(err).NotTo(HaveOccurred())
	return ref
}

// pushGadgetOperator pushes every bundle of the gadget-operator stand-in package
// (e2e/testdata/gadget-operator) as <registry>/bundles/gadget-operator:<version> and its catalog, with
// the bundle references pointed at this registry, as <registry>/catalogs/gadget-index:v1. It returns
// the catalog ref and the bundle refs by version.
func pushGadgetOperator(ctx context.Context) (catalog string, bundles map[string]string) {
	dir := filepath.Join(env.repoRoot, "e2e", "testdata", "gadget-operator")
	entries, err := os.ReadDir(filepath.Join(dir, "bundles"))
	Expect(err).NotTo(HaveOccurred())
	bundles = map[string]string{}
	for _, e := range entries {
		img, err := imagebuild.RegistryV1BundleImage(filepath.Join(dir, "bundles", e.Name()))
		Expect(err).NotTo(HaveOccurred())
		bundles[e.Name()] = env.registry.Addr + "/bundles/gadget-operator:" + e.Name()
		_, err = imagebuild.Push(ctx, img, bundles[e.Name()], imagebuild.WithInsecure())
		Expect(err).NotTo(HaveOccurred())
	}
	fbc, err := os.ReadFile(filepath.Join(dir, "catalog", "catalog.yaml"))
	Expect(err).NotTo(HaveOccurred())
	return pushCatalog(ctx, strings.ReplaceAll(string(fbc), "registry.invalid", env.registry.Addr), "gadget-index", "v1"), bundles
}

// fbcBundle renders an olm.bundle blob (JSON) with extra properties (JSON objects joined by commas).
func fbcBundle(pkg, version, image, extra string) string {
	props := fmt.Sprintf(`{"type":"olm.package","value":{"packageName":%q,"version":%q}}`, pkg, version)
	if extra != "" {
		props += "," + extra
	}
	return fmt.Sprintf(`{"schema":"olm.bundle","package":%q,"name":"%s.v%s","image":%q,"properties":[%s]}`+"\n", pkg, pkg, version, image, props)
}

var _ = Describe("operator-controller", Label("operator-controller"), func() {
	var (
		dc  dynamic.Interface
		bdc client.Client
	)

	BeforeEach(func() {
		var err error
		dc, err = dynamic.NewForConfig(env.cfg)
		Expect(err).NotTo(HaveOccurred())
		scheme := runtime.NewScheme()
		Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
		Expect(rukpakv1alpha1.AddToScheme(scheme)).To(Succeed())
		bdc, err = client.New(env.cfg, client.Options{Scheme: scheme})
		Expect(err).NotTo(HaveOccurred())
	})

	// waitOperatorCondition waits until the Operator's condition has the status for its generation.
	waitOperatorCondition := func(ctx context.Context, name, typ, status string, timeout time.Duration) *unstructured.Unstructured {
		var got *unstructured.Unstructured
		Eventually(func(g Gomega) {
			var err error
			got, err = dc.Resource(operatorGVR).Get(ctx, name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			c := findCondition(got, typ)
			g.Expect(c).NotTo(BeNil(), "condition %s; conditions: %v", typ, got.Object["status"])
			g.Expect(c["observedGeneration"]).To(BeEquivalentTo(got.GetGeneration()))
			g.Expect(c["status"]).To(Equal(status), "%s: %v", typ, c)
		}).WithContext(ctx).WithTimeout(timeout).WithPolling(250 * time.Millisecond).Should(Succeed())
		return got
	}

	// waitBundleDeploymentRef waits until the Operator's BundleDeployment references ref.
	waitBundleDeploymentRef := func(ctx context.Context, name, ref string) *rukpakv1alpha1.BundleDeployment {
		bd := &rukpakv1alpha1.BundleDeployment{}
		Eventually(func(g Gomega) {
			g.Expect(bdc.Get(ctx, client.ObjectKey{Name: name}, bd)).To(Succeed())
			g.Expect(bd.Spec.Source.Image).NotTo(BeNil())
			g.Expect(bd.Spec.Source.Image.Ref).To(Equal(ref))
		}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(250*time.Millisecond).Should(Succeed(), func() string {
			op, err := dc.Resource(operatorGVR).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err.Error()
			}
			return fmt.Sprintf("Operator status: %v", op.Object["status"])
		})
		return bd
	}

	// createServingCatalog creates a Catalog on an image and waits until it serves it.
	createServingCatalog := func(ctx context.Context, name, ref string) {
		catalogs := dc.Resource(catalogGVR)
		_, err := catalogs.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "catalogd.operatorframework.io/v1alpha1", "kind": "Catalog",
			"metadata": map[string]any{"name": name},
			"spec":     map[string]any{"source": map[string]any{"type": "Image", "image": map[string]any{"ref": ref}}},
		}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) { _ = catalogs.Delete(ctx, name, metav1.DeleteOptions{}) })
		Eventually(func(g Gomega) {
			got, err := catalogs.Get(ctx, name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(findCondition(got, "Serving")).To(HaveKeyWithValue("status", "True"))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	}

	// createOperator creates an Operator with spec and deletes it when the spec ends, waiting until
	// its BundleDeployment is gone.
	createOperator := func(ctx context.Context, name string, spec map[string]any) {
		ops := dc.Resource(operatorGVR)
		_, err := ops.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "operators.operatorframework.io/v1alpha1", "kind": "Operator",
			"metadata": map[string]any{"name": name}, "spec": spec,
		}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_ = ops.Delete(ctx, name, metav1.DeleteOptions{})
			Eventually(func() bool {
				return apierrors.IsNotFound(bdc.Get(ctx, client.ObjectKey{Name: name}, &rukpakv1alpha1.BundleDeployment{}))
			}).WithContext(ctx).WithTimeout(2*time.Minute).Should(BeTrue(), "BundleDeployment %s is removed with its Operator", name)
		})
	}

	// waitBundleDeploymentPolicies waits until the Operator's BundleDeployment states the policies.
	waitBundleDeploymentPolicies := func(ctx context.Context, name, collision, deletion string) {
		bd := &rukpakv1alpha1.BundleDeployment{}
		Eventually(func(g Gomega) {
			g.Expect(bdc.Get(ctx, client.ObjectKey{Name: name}, bd)).To(Succeed())
			g.Expect(bd.Spec.CollisionPolicy).To(BeEquivalentTo(collision))
			g.Expect(bd.Spec.DeletionPolicy).To(BeEquivalentTo(deletion))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	}

	patchOperator := func(ctx context.Context, name, patch string) {
		_, err := dc.Resource(operatorGVR).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
	}

	conditionMessage := func(op *unstructured.Unstructured, typ string) string {
		m, _ := findCondition(op, typ)["message"].(string)
		return m
	}

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
		Eventually(func(g Gomega) {
			got, err := catalogs.Get(ctx, catalogName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(findCondition(got, "Unpacked")).To(HaveKeyWithValue("status", "True"))
			g.Expect(findCondition(got, "Serving")).To(HaveKeyWithValue("status", "True"))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())

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
			"spec":     map[string]any{"packageName": "example-operator"},
		}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) { _ = ops.Delete(ctx, opName, metav1.DeleteOptions{}) })
		bd := waitBundleDeploymentRef(ctx, opName, bundleRefs["0.1.0"])
		Expect(bd.Spec.ProvisionerClassName).To(Equal(rukpakv1alpha1.ProvisionerRegistry))
		Expect(bd.Spec.InstallNamespace).To(Equal(installNS), "the CSV's suggested namespace")
		waitOperatorCondition(ctx, opName, "Installed", "True", 2*time.Minute)
		got := waitOperatorCondition(ctx, opName, "Healthy", "True", 2*time.Minute)
		version, _, _ := unstructured.NestedString(got.Object, "status", "installedBundle", "version")
		Expect(version).To(Equal("0.1.0"))

		By("moving the Catalog to index:0.2.0: the same BundleDeployment moves to bundle 0.2.0")
		start := time.Now()
		patch := fmt.Sprintf(`{"spec":{"source":{"image":{"ref":%q}}}}`, catalogRefs["0.2.0"])
		_, err = catalogs.Patch(ctx, catalogName, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		moved := waitBundleDeploymentRef(ctx, opName, bundleRefs["0.2.0"])
		fmt.Fprintf(GinkgoWriter, "catalog image update → BundleDeployment on bundle 0.2.0: %v\n", time.Since(start))
		Expect(moved.UID).To(Equal(bd.UID))
		Eventually(func(g Gomega) {
			got := waitOperatorCondition(ctx, opName, "Installed", "True", 2*time.Minute)
			version, _, _ := unstructured.NestedString(got.Object, "status", "installedBundle", "version")
			g.Expect(version).To(Equal("0.2.0"))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())

		By("deleting the Operator and the Catalog: no BundleDeployment, no CatalogMetadata, no install namespace remain")
		Expect(ops.Delete(ctx, opName, metav1.DeleteOptions{})).To(Succeed())
		Expect(catalogs.Delete(ctx, catalogName, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(bdc.Get(ctx, client.ObjectKey{Name: opName}, &rukpakv1alpha1.BundleDeployment{})).To(Satisfy(apierrors.IsNotFound))
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
		fbc := `{"schema":"olm.package","name":"edges-operator","defaultChannel":"stable"}
{"schema":"olm.channel","package":"edges-operator","name":"stable","entries":[{"name":"edges-operator.v0.1.0"},{"name":"edges-operator.v0.2.0","replaces":"edges-operator.v0.1.0"}]}
{"schema":"olm.channel","package":"edges-operator","name":"fast","entries":[{"name":"edges-operator.v1.0.0"}]}
` + fbcBundle(pkg, "0.1.0", img["0.1.0"], "") + fbcBundle(pkg, "0.2.0", img["0.2.0"], "") + fbcBundle(pkg, "1.0.0", img["1.0.0"], "")
		createServingCatalog(ctx, "edges-catalog", pushCatalog(ctx, fbc, "edges-index", "v1"))

		By("installing 0.1.0 with upgradePolicy Manual")
		createOperator(ctx, opName, map[string]any{"packageName": pkg, "version": "0.1.0", "upgradePolicy": "Manual"})
		waitBundleDeploymentRef(ctx, opName, img["0.1.0"])
		waitOperatorCondition(ctx, opName, "Installed", "True", 2*time.Minute)

		By("widening the version range: Manual offers 0.2.0 (the replaces edge) and keeps 0.1.0")
		patchOperator(ctx, opName, `{"spec":{"version":""}}`)
		op := waitOperatorCondition(ctx, opName, "UpgradeAvailable", "True", time.Minute)
		Expect(conditionMessage(op, "UpgradeAvailable")).To(ContainSubstring(`"approvedVersion":"0.2.0"`))
		Consistently(func(g Gomega) {
			bd := &rukpakv1alpha1.BundleDeployment{}
			g.Expect(bdc.Get(ctx, client.ObjectKey{Name: opName}, bd)).To(Succeed())
			g.Expect(bd.Spec.Source.Image.Ref).To(Equal(img["0.1.0"]))
		}).WithContext(ctx).WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

		By("approving 0.2.0")
		patchOperator(ctx, opName, `{"spec":{"approvedVersion":"0.2.0"}}`)
		waitBundleDeploymentRef(ctx, opName, img["0.2.0"])
		waitOperatorCondition(ctx, opName, "UpgradeAvailable", "False", time.Minute)

		By("asking for 1.0.0 under Enforce: refused, 0.2.0 stays installed")
		patchOperator(ctx, opName, `{"spec":{"upgradePolicy":"Automatic","approvedVersion":null,"version":"1.0.0"}}`)
		op = waitOperatorCondition(ctx, opName, "Resolved", "False", time.Minute)
		Expect(conditionMessage(op, "Resolved")).To(ContainSubstring("no upgrade edge"))
		Expect(conditionMessage(op, "Resolved")).To(ContainSubstring("stays installed"))
		bd := &rukpakv1alpha1.BundleDeployment{}
		Expect(bdc.Get(ctx, client.ObjectKey{Name: opName}, bd)).To(Succeed())
		Expect(bd.Spec.Source.Image.Ref).To(Equal(img["0.2.0"]))

		By("upgradeConstraintPolicy Ignore allows the jump to 1.0.0")
		patchOperator(ctx, opName, `{"spec":{"upgradeConstraintPolicy":"Ignore"}}`)
		waitBundleDeploymentRef(ctx, opName, img["1.0.0"])
		waitOperatorCondition(ctx, opName, "Resolved", "True", time.Minute)
		Eventually(func(g Gomega) {
			op := waitOperatorCondition(ctx, opName, "Installed", "True", 2*time.Minute)
			version, _, _ := unstructured.NestedString(op.Object, "status", "installedBundle", "version")
			g.Expect(version).To(Equal("1.0.0"))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	})

	It("installs a bundle that needs another package's API only once an Operator installs that package", Label("dependencies"), func(ctx SpecContext) {
		gvk := `{"group":"widgets.example.olmv1.io","version":"v1","kind":"Widget"}`
		needsImg := pushBundleAs(ctx, "0.1.0", "widget-consumer:1.0.0")
		providerImg := pushBundleAs(ctx, "0.2.0", "widget-provider:1.0.0")
		fbc := `{"schema":"olm.package","name":"widget-consumer","defaultChannel":"stable"}
{"schema":"olm.channel","package":"widget-consumer","name":"stable","entries":[{"name":"widget-consumer.v1.0.0"}]}
{"schema":"olm.package","name":"widget-provider","defaultChannel":"stable"}
{"schema":"olm.channel","package":"widget-provider","name":"stable","entries":[{"name":"widget-provider.v1.0.0"}]}
` + fbcBundle("widget-consumer", "1.0.0", needsImg, `{"type":"olm.gvk.required","value":`+gvk+`}`) +
			fbcBundle("widget-provider", "1.0.0", providerImg, `{"type":"olm.gvk","value":`+gvk+`}`)
		createServingCatalog(ctx, "widgets-catalog", pushCatalog(ctx, fbc, "widgets-index", "v1"))

		By("an Operator for widget-consumer alone is not installed, and says which Operator to create")
		createOperator(ctx, "widget-consumer", map[string]any{"packageName": "widget-consumer"})
		op := waitOperatorCondition(ctx, "widget-consumer", "Resolved", "False", time.Minute)
		Expect(conditionMessage(op, "Resolved")).To(ContainSubstring("widgets.example.olmv1.io/v1 Widget"))
		Expect(conditionMessage(op, "Resolved")).To(ContainSubstring(`packageName "widget-provider"`))
		Expect(bdc.Get(ctx, client.ObjectKey{Name: "widget-consumer"}, &rukpakv1alpha1.BundleDeployment{})).To(Satisfy(apierrors.IsNotFound))

		By("an Operator for widget-provider lets both install")
		createOperator(ctx, "widget-provider", map[string]any{"packageName": "widget-provider"})
		waitBundleDeploymentRef(ctx, "widget-provider", providerImg)
		waitBundleDeploymentRef(ctx, "widget-consumer", needsImg)
		waitOperatorCondition(ctx, "widget-provider", "Installed", "True", 2*time.Minute)
		waitOperatorCondition(ctx, "widget-consumer", "Installed", "True", 2*time.Minute)
	})
	It("installs a composite package's dependencies itself with dependencyPolicy Install, reuses the user's Operator, and removes what it created", Label("dependencies-install"), func(ctx SpecContext) {
		By("pushing the composite fixture's bundles and building its catalog with kubectl olmv1 catalog add-bundle")
		fixture := filepath.Join(env.repoRoot, "e2e", "testdata", "composite-operator", "bundles")
		catalogDir := GinkgoT().TempDir()
		for _, b := range []string{"alpha-operator/1.0.0", "beta-operator/1.0.0", "hub-operator/1.0.0", "hub-operator/1.1.0"} {
			img, err := imagebuild.RegistryV1BundleImage(filepath.Join(fixture, b))
			Expect(err).NotTo(HaveOccurred())
			ref := env.registry.Addr + "/bundles/" + strings.Replace(b, "/", ":", 1)
			_, err = imagebuild.Push(ctx, img, ref, imagebuild.WithInsecure())
			Expect(err).NotTo(HaveOccurred())
			mustKubectlOLMv1(ctx, "catalog", "add-bundle", catalogDir, filepath.Join(fixture, b), "--image", ref)
		}
		catalogRef := env.registry.Addr + "/catalogs/composite-index:v1"
		mustKubectlOLMv1(ctx, "catalog", "push", catalogDir, catalogRef, "--insecure")
		createServingCatalog(ctx, "composite-catalog", catalogRef)
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
		createOperator(ctx, "hub", map[string]any{"packageName": "hub-operator", "version": "1.0.0", "dependencyPolicy": "Install"})
		for _, name := range []string{"hub", "alpha-operator", "beta-operator"} {
			waitOperatorCondition(ctx, name, "Installed", "True", 3*time.Minute)
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
			Eventually(func() error { return bdc.Get(ctx, client.ObjectKey{Name: dep}, &rukpakv1alpha1.BundleDeployment{}) }).
				WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(250*time.Millisecond).Should(Satisfy(apierrors.IsNotFound), "BundleDeployment %s", dep)
		}
		Eventually(func() error { return deployment(alphaNS, "alpha-operator") }).WithContext(ctx).WithTimeout(time.Minute).Should(Satisfy(apierrors.IsNotFound))
		Eventually(func() error { return deployment(betaNS, "beta-operator") }).WithContext(ctx).WithTimeout(time.Minute).Should(Satisfy(apierrors.IsNotFound))

		By("an Operator the user created for a dependency is reused, not duplicated, and survives")
		createOperator(ctx, "my-alpha", map[string]any{"packageName": "alpha-operator"})
		waitOperatorCondition(ctx, "my-alpha", "Installed", "True", 2*time.Minute)
		createOperator(ctx, "hub", map[string]any{"packageName": "hub-operator", "version": "1.0.0", "dependencyPolicy": "Install"})
		waitOperatorCondition(ctx, "hub", "Installed", "True", 3*time.Minute)
		waitOperatorCondition(ctx, "beta-operator", "Installed", "True", 2*time.Minute)
		_, err = ops.Get(ctx, "alpha-operator", metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no second Operator for alpha-operator: %v", err)
		hub, err = ops.Get(ctx, "hub", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(dependencies(hub)).To(HaveKeyWithValue("alpha-operator", "my-alpha@1.0.0 by olm.gvk.required composite.olmv1.io/v1 Alpha"))
		mine, err := ops.Get(ctx, "my-alpha", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(mine.GetOwnerReferences()).To(BeEmpty(), "the user's Operator gets no ownerReference")

		By("an upgrade that no longer needs beta-operator removes the Operator created for it")
		patchOperator(ctx, "hub", `{"spec":{"version":"1.1.0"}}`)
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
		waitOperatorCondition(ctx, "my-alpha", "Installed", "True", time.Minute)
		Expect(deployment(installNamespace("my-alpha"), "alpha-operator")).To(Succeed())
	})

	It("keeps a paused Operator on its version while its catalog moves on, and upgrades it once resumed", Label("lifecycle"), func(ctx SpecContext) {
		const catalogName, opName = "paused-catalog", "paused-operator"
		catalogRefs, bundleRefs := pushExampleOperator(ctx, "paused-index")
		createServingCatalog(ctx, catalogName, catalogRefs["0.1.0"])
		createOperator(ctx, opName, map[string]any{"packageName": "example-operator"})
		waitBundleDeploymentRef(ctx, opName, bundleRefs["0.1.0"])
		waitOperatorCondition(ctx, opName, "Installed", "True", 2*time.Minute)

		By("pausing the Operator: the Paused condition says so and the BundleDeployment is paused too")
		patchOperator(ctx, opName, `{"spec":{"paused":true}}`)
		op := waitOperatorCondition(ctx, opName, "Paused", "True", time.Minute)
		Expect(conditionMessage(op, "Paused")).To(ContainSubstring("paused since"))
		Eventually(func(g Gomega) {
			bd := &rukpakv1alpha1.BundleDeployment{}
			g.Expect(bdc.Get(ctx, client.ObjectKey{Name: opName}, bd)).To(Succeed())
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
		Eventually(func(g Gomega) {
			got, err := catalogs.Get(ctx, catalogName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			hash, _, _ := unstructured.NestedString(got.Object, "status", "contentHash")
			g.Expect(hash).NotTo(Equal(oldHash))
			g.Expect(findCondition(got, "Serving")).To(HaveKeyWithValue("status", "True"))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		// operator-controller re-resolves on the Catalog's new content hash within a second; watch
		// for longer than that that nothing moves.
		Consistently(func(g Gomega) {
			bd := &rukpakv1alpha1.BundleDeployment{}
			g.Expect(bdc.Get(ctx, client.ObjectKey{Name: opName}, bd)).To(Succeed())
			g.Expect(bd.Spec.Source.Image.Ref).To(Equal(bundleRefs["0.1.0"]))
			got, err := dc.Resource(operatorGVR).Get(ctx, opName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			version, _, _ := unstructured.NestedString(got.Object, "status", "installedBundle", "version")
			g.Expect(version).To(Equal("0.1.0"))
		}).WithContext(ctx).WithTimeout(5 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())

		By("resuming: the Operator upgrades to 0.2.0")
		patchOperator(ctx, opName, `{"spec":{"paused":false}}`)
		waitOperatorCondition(ctx, opName, "Paused", "False", time.Minute)
		bd := waitBundleDeploymentRef(ctx, opName, bundleRefs["0.2.0"])
		Expect(bd.Spec.Paused).To(BeFalse())
		Eventually(func(g Gomega) {
			got, err := dc.Resource(operatorGVR).Get(ctx, opName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			version, _, _ := unstructured.NestedString(got.Object, "status", "installedBundle", "version")
			g.Expect(version).To(Equal("0.2.0"))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	})

	It("installs the highest semver bundle of the default channel for an Operator that names only its package", Label("seed-highest-semver"), func(ctx SpecContext) {
		const opName, installNS = "gadget-operator", "gadget-system"
		catalogRef, bundleRefs := pushGadgetOperator(ctx)
		Expect(bundleRefs).To(HaveKey("1.10.0"))
		createServingCatalog(ctx, "gadget-catalog", catalogRef)

		By("an Operator with only packageName resolves to 1.10.0: the highest semver of the default channel stable " +
			"(1.2.0 sorts above it as a string; 2.0.0 is only in candidate)")
		createOperator(ctx, opName, map[string]any{"packageName": "gadget-operator"})
		bd := waitBundleDeploymentRef(ctx, opName, bundleRefs["1.10.0"])
		Expect(bd.Spec.ProvisionerClassName).To(Equal(rukpakv1alpha1.ProvisionerRegistry))
		Expect(bd.Spec.InstallNamespace).To(Equal(installNS), "the CSV's suggested namespace")
		op := waitOperatorCondition(ctx, opName, "Resolved", "True", time.Minute)
		Expect(conditionMessage(op, "Resolved")).To(ContainSubstring("gadget-operator.v1.10.0"))
		resolved, _, _ := unstructured.NestedString(op.Object, "status", "resolvedBundle", "version")
		Expect(resolved).To(Equal("1.10.0"))

		By("the BundleDeployment and the Operator become Installed and Healthy (CRD Established, Deployment Available)")
		Eventually(func(g Gomega) {
			g.Expect(bdc.Get(ctx, client.ObjectKey{Name: opName}, bd)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled)).To(BeTrue(), "%v", bd.Status.Conditions)
			g.Expect(meta.IsStatusConditionTrue(bd.Status.Conditions, rukpakv1alpha1.TypeHealthy)).To(BeTrue(), "%v", bd.Status.Conditions)
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		waitOperatorCondition(ctx, opName, "Installed", "True", 2*time.Minute)
		op = waitOperatorCondition(ctx, opName, "Healthy", "True", 2*time.Minute)
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
		Eventually(func(g Gomega) {
			got, err := catalogs.Get(ctx, catalogName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(findCondition(got, "Serving")).To(HaveKeyWithValue("status", "True"))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())

		By("an Operator for hello-operator gets a BundleDeployment for the highest bundle of the default channel")
		createOperator(ctx, opName, map[string]any{"packageName": "hello-operator"})
		bd := waitBundleDeploymentRef(ctx, opName, "127.0.0.1:5001/bundles/hello-operator:v1.1.0")
		Expect(bd.Spec.InstallNamespace).To(Equal("hello-operator"))
		op := waitOperatorCondition(ctx, opName, "Resolved", "True", time.Minute)
		Expect(conditionMessage(op, "Resolved")).To(ContainSubstring("hello-operator.v1.1.0"))

		By("deleting the Operator and the Catalog removes the BundleDeployment, the namespace and the CatalogMetadata")
		Expect(dc.Resource(operatorGVR).Delete(ctx, opName, metav1.DeleteOptions{})).To(Succeed())
		Expect(catalogs.Delete(ctx, catalogName, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(bdc.Get(ctx, client.ObjectKey{Name: opName}, &rukpakv1alpha1.BundleDeployment{})).To(Satisfy(apierrors.IsNotFound))
			list, err := dc.Resource(catalogMetadataGVR).List(ctx, metav1.ListOptions{LabelSelector: "catalog=" + catalogName})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(list.Items).To(BeEmpty())
			_, err = env.clientset.CoreV1().Namespaces().Get(ctx, "hello-operator", metav1.GetOptions{})
			g.Expect(err).To(Satisfy(apierrors.IsNotFound))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
	})
	It("never takes over an object it did not install; IfNoController adopts it; Orphan leaves it and its namespace in place", Label("ownership"), func(ctx SpecContext) {
		const (
			pkg, opName, installNS = "ownership-operator", "ownership-operator", "ownership-e2e"
			// depName is the Deployment of the example-operator bundle; person is the field manager of
			// what the test creates by hand.
			depName, person = "example-operator", "a-person"
			ownerNameLabel  = "core.rukpak.io/owner-name"
		)
		img := pushBundleAs(ctx, "0.1.0", "ownership-operator:0.1.0")
		fbc := `{"schema":"olm.package","name":"ownership-operator","defaultChannel":"stable"}
{"schema":"olm.channel","package":"ownership-operator","name":"stable","entries":[{"name":"ownership-operator.v0.1.0"}]}
` + fbcBundle(pkg, "0.1.0", img, "")
		createServingCatalog(ctx, "ownership-catalog", pushCatalog(ctx, fbc, "ownership-index", "v1"))

		By("pre-creating the install namespace, marked as created by OLM for an earlier Operator (so that the new Operator " +
			"becomes one of its owners, and the garbage collector would delete it with that Operator), and in it the bundle's " +
			"Deployment with the user's own labels, annotation and image")
		namespaces := env.clientset.CoreV1().Namespaces()
		_, err := namespaces.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: installNS, Labels: map[string]string{
			"operators.operatorframework.io/owner-kind": "Operator", "operators.operatorframework.io/owner-name": "an-earlier-operator",
		}}}, metav1.CreateOptions{FieldManager: person})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_ = namespaces.Delete(ctx, installNS, metav1.DeleteOptions{})
			Eventually(func() bool {
				_, err := namespaces.Get(ctx, installNS, metav1.GetOptions{})
				return apierrors.IsNotFound(err)
			}).WithContext(ctx).WithTimeout(2*time.Minute).Should(BeTrue(), "namespace %s is removed", installNS)
		})
		deployments := env.clientset.AppsV1().Deployments(installNS)
		selector := map[string]string{"app": "example-operator"} // the bundle's: a selector cannot change
		mine, err := deployments.Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: depName, Labels: map[string]string{"team": "payments"},
				Annotations: map[string]string{"note": "installed by hand"}},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: selector},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: selector},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "registry.example.test/handmade:v1"}}},
				},
			},
		}, metav1.CreateOptions{FieldManager: person})
		Expect(err).NotTo(HaveOccurred())

		By("an Operator with the default collisionPolicy (Prevent) reports ObjectConflict naming the Deployment and leaves it alone")
		createOperator(ctx, opName, map[string]any{"packageName": pkg, "installNamespace": installNS})
		var installed map[string]any
		Eventually(func(g Gomega) {
			op, err := dc.Resource(operatorGVR).Get(ctx, opName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			installed = findCondition(op, "Installed")
			g.Expect(installed).NotTo(BeNil())
			g.Expect(installed["observedGeneration"]).To(BeEquivalentTo(op.GetGeneration()))
			g.Expect(installed).To(HaveKeyWithValue("status", "False"))
			g.Expect(installed).To(HaveKeyWithValue("reason", "ObjectConflict"))
		}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(250*time.Millisecond).Should(Succeed(), func() string {
			return fmt.Sprintf("Installed: %v", installed)
		})
		Expect(installed["message"]).To(And(ContainSubstring("Deployment"), ContainSubstring(installNS+"/"+depName),
			ContainSubstring("not managed by OLM")))
		got, err := deployments.Get(ctx, depName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		// Not the resourceVersion: the Deployment controller writes status and the revision annotation.
		Expect(got.UID).To(Equal(mine.UID))
		Expect(got.Generation).To(Equal(mine.Generation), "the spec was not changed")
		Expect(got.Labels).To(Equal(mine.Labels), "no rukpak labels")
		Expect(got.Annotations).To(HaveKeyWithValue("note", "installed by hand"))
		Expect(got.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example.test/handmade:v1"))
		for _, mf := range got.ManagedFields {
			Expect(mf.Manager).To(BeElementOf(person, "kube-controller-manager"), "nobody else wrote the Deployment: %+v", mf)
		}

		By("collisionPolicy IfNoController adopts the Deployment (no controller owns it): Installed, and it carries rukpak's owner label")
		patchOperator(ctx, opName, `{"spec":{"collisionPolicy":"IfNoController"}}`)
		waitBundleDeploymentPolicies(ctx, opName, "IfNoController", "Delete")
		waitOperatorCondition(ctx, opName, "Installed", "True", 2*time.Minute)
		got, err = deployments.Get(ctx, depName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.UID).To(Equal(mine.UID), "adopted, not re-created")
		Expect(got.Labels).To(HaveKeyWithValue(ownerNameLabel, opName))
		Expect(got.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example.test/example-operator:v0.1.0"))
		ns, err := namespaces.Get(ctx, installNS, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(ns.OwnerReferences).To(ContainElement(HaveField("Name", opName)), "the Operator owns the namespace")

		By("deletionPolicy Orphan: operator-controller releases the namespace, then passes Orphan to the BundleDeployment")
		patchOperator(ctx, opName, `{"spec":{"deletionPolicy":"Orphan"}}`)
		waitBundleDeploymentPolicies(ctx, opName, "IfNoController", "Orphan")
		ns, err = namespaces.Get(ctx, installNS, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(ns.OwnerReferences).To(BeEmpty(), "released before the BundleDeployment said Orphan")

		By("deleting the Operator: its BundleDeployment goes, the Deployment and the namespace stay, without rukpak's owner label")
		Expect(dc.Resource(operatorGVR).Delete(ctx, opName, metav1.DeleteOptions{})).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(bdc.Get(ctx, client.ObjectKey{Name: opName}, &rukpakv1alpha1.BundleDeployment{}))
		}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(250*time.Millisecond).Should(BeTrue(), "BundleDeployment %s is removed", opName)
		got, err = deployments.Get(ctx, depName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(got.UID).To(Equal(mine.UID))
		Expect(got.DeletionTimestamp).To(BeNil())
		Expect(got.Labels).NotTo(HaveKey(ownerNameLabel))
		Expect(got.Labels).NotTo(HaveKey("core.rukpak.io/owner-kind"))
		// The garbage collector acts on the Operator's deletion asynchronously: give it time to act.
		Consistently(func(g Gomega) {
			ns, err := namespaces.Get(ctx, installNS, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ns.DeletionTimestamp).To(BeNil(), "namespace %s is being deleted", installNS)
			dep, err := deployments.Get(ctx, depName, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(dep.DeletionTimestamp).To(BeNil())
		}).WithContext(ctx).WithTimeout(5 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	})
})
