package suite

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/olmv1/olmv1/e2e/chart"
	"github.com/olmv1/olmv1/e2e/localcluster"
	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

// Two real community bundles (../shared/testdata/corpus) whose operator images live on registries this
// machine cannot reach: on a real kubelet they are Installed, and Healthy=False says the image cannot be
// pulled and which image, the honest answer without internet.
var _ = Describe("real corpus bundles on a real node without internet", Label("real-node"), Ordered, func() {
	var (
		dc     dynamic.Interface
		hc     *chart.Client
		chosen []localcluster.CorpusBundle
	)

	BeforeAll(func(ctx SpecContext) {
		testdata := os.Getenv("OLMV1_TESTDATA")
		if testdata == "" {
			testdata = filepath.Join(env.repoRoot, "..", "shared", "testdata")
		}
		all, err := localcluster.ReadCorpusBundles(testdata, "corpus")
		if err != nil || len(all) == 0 {
			Skip(fmt.Sprintf("the real test data %s is absent (set OLMV1_TESTDATA): %v", testdata, err))
		}
		for _, b := range all {
			if b.Webhooks == 0 && len(b.Dependencies) == 0 && len(b.Deployments) == 1 && b.OnlyBareClusterKinds() {
				chosen = append(chosen, b)
			}
		}
		sort.Slice(chosen, func(i, j int) bool { return chosen[i].Package < chosen[j].Package })
		Expect(len(chosen)).To(BeNumerically(">=", 2), "corpus bundles with one Deployment, no webhooks, no dependencies")
		chosen = chosen[:2]

		dc, err = dynamic.NewForConfig(env.cfg)
		Expect(err).NotTo(HaveOccurred())
		hc, _ = installChart(ctx)
		DeferCleanup(func(ctx SpecContext) {
			Expect(hc.Uninstall(release, 2*time.Minute)).To(Succeed())
		})

		By("pushing " + chosen[0].Source + " and " + chosen[1].Source + " and a catalog of both")
		var fbc strings.Builder
		for _, b := range chosen {
			img, err := imagebuild.RegistryV1BundleImage(b.Dir)
			Expect(err).NotTo(HaveOccurred())
			repo := "/bundles/" + b.Package + ":" + b.Version
			_, err = imagebuild.Push(ctx, img, env.registry.Addr+repo, imagebuild.WithInsecure())
			Expect(err).NotTo(HaveOccurred())
			fmt.Fprintf(&fbc, "---\nschema: olm.package\nname: %s\ndefaultChannel: %s\n---\nschema: olm.channel\npackage: %s\nname: %s\nentries:\n  - name: %s\n---\nschema: olm.bundle\npackage: %s\nname: %s\nimage: %s\nproperties:\n  - type: olm.package\n    value: {packageName: %s, version: %s}\n",
				b.Package, b.DefaultChannel, b.Package, b.DefaultChannel, b.CSVName, b.Package, b.CSVName, env.registry.ClusterAddr+repo, b.Package, b.Version)
		}
		dir := GinkgoT().TempDir()
		Expect(os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(fbc.String()), 0o644)).To(Succeed())
		cimg, err := imagebuild.CatalogImage(dir)
		Expect(err).NotTo(HaveOccurred())
		_, err = imagebuild.Push(ctx, cimg, env.registry.Addr+"/catalogs/corpus:v1", imagebuild.WithInsecure())
		Expect(err).NotTo(HaveOccurred())
		createCatalog(ctx, dc, "corpus", env.registry.ClusterAddr+"/catalogs/corpus:v1")
		waitCondition(ctx, dc.Resource(catalogGVR), "corpus", "Serving", "True", 2*time.Minute)
	})

	It("installs both and reports Healthy=False naming the image that cannot be pulled", func(ctx SpecContext) {
		for _, b := range chosen {
			op := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "operators.operatorframework.io/v1alpha1", "kind": "Operator",
				"metadata": map[string]any{"name": b.Package},
				"spec":     map[string]any{"packageName": b.Package},
			}}
			_, err := dc.Resource(operatorGVR).Create(ctx, op, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		for _, b := range chosen {
			By(b.Package + ": Installed, then Healthy=False with the pull failure")
			waitCondition(ctx, dc.Resource(operatorGVR), b.Package, "Installed", "True", 2*time.Minute)
			var healthy map[string]any
			Eventually(func(g Gomega) {
				op, err := dc.Resource(operatorGVR).Get(ctx, b.Package, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				healthy = condition(op, "Healthy")
				g.Expect(healthy).To(HaveKeyWithValue("status", "False"))
				g.Expect(healthy["message"]).To(MatchRegexp(`container \S+ is waiting \((ErrImagePull|ImagePullBackOff)\)`))
			}).WithContext(ctx).WithTimeout(3 * time.Minute).Should(Succeed())
			fmt.Fprintf(GinkgoWriter, "%s: Healthy=False %s: %s\n", b.Package, healthy["reason"], healthy["message"])
		}
	})

	It("uninstalls both", func(ctx SpecContext) {
		for _, b := range chosen {
			Expect(dc.Resource(operatorGVR).Delete(ctx, b.Package, metav1.DeleteOptions{})).To(Succeed())
		}
		Expect(dc.Resource(catalogGVR).Delete(ctx, "corpus", metav1.DeleteOptions{})).To(Succeed())
		Eventually(func(g Gomega) {
			for _, b := range chosen {
				_, err := dc.Resource(operatorGVR).Get(ctx, b.Package, metav1.GetOptions{})
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Operator %s", b.Package)
			}
			_, err := dc.Resource(catalogGVR).Get(ctx, "corpus", metav1.GetOptions{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Catalog corpus")
			bds, err := dc.Resource(bundleDeploymentGVR).List(ctx, metav1.ListOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(bds.Items).To(BeEmpty(), "BundleDeployments are removed by rukpak before the chart goes")
		}).WithContext(ctx).WithTimeout(3 * time.Minute).Should(Succeed())
	})
})
