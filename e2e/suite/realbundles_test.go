package suite

// Issue 16's "Done when", checked with real community registry+v1 bundles that nobody on this project
// wrote (the shared third-party test data, OLMV1_TESTDATA): each is validated, pushed, put in one
// catalog and installed with bin/kubectl-olmv1 exactly as a user would — `install PKG --wait` and no
// other flag, whatever install modes the bundle supports.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/e2e/localcluster"
)

// unsupportedModeBound is how soon after its creation an Operator asking for an install mode its
// bundle does not support must say so (issue 16: "within 10 s").
const unsupportedModeBound = 10 * time.Second

// unresolvableBound is how soon `install --wait` of a package no catalog has must exit 1 (issue 16).
const unresolvableBound = 15 * time.Second

// realBundle is a chosen bundle and what installing it showed.
type realBundle struct {
	localcluster.CorpusBundle
	why   string // why it was chosen
	image string // the pushed bundle image

	mode      string        // the install mode the BundleDeployment reports
	objects   int           // objects the BundleDeployment applied
	healthy   time.Duration // `install --wait` until Installed and Healthy
	uninstall time.Duration // `uninstall --wait` until the Operator, BundleDeployment and namespace are gone
}

// namespace is where `install` with no --namespace puts the operator.
func (b *realBundle) namespace() string {
	if b.SuggestedNamespace != "" {
		return b.SuggestedNamespace
	}
	return b.Package
}

// defaultMode is the install mode rukpak must choose with watchNamespaces unset.
func (b *realBundle) defaultMode() string {
	if b.Supports("AllNamespaces") {
		return "AllNamespaces"
	}
	return "OwnNamespace"
}

var _ = Describe("real registry+v1 bundles through kubectl-olmv1", Label("real-bundles"), Ordered, func() {
	const catalogName = "real-bundles"
	var (
		dc      dynamic.Interface
		c       client.Client
		chosen  []*realBundle
		ownOnly *realBundle
		// measured: time to UnsupportedInstallMode on the Operator, to uninstall that Operator, and
		// until `install --wait` of an unresolvable package exits.
		toUnsupported, uninstallUnsupported, toUnresolvable time.Duration
	)

	BeforeAll(func() {
		root := os.Getenv("OLMV1_TESTDATA")
		if root == "" {
			root = filepath.Join(env.repoRoot, "..", "shared", "testdata")
		}
		if _, err := os.Stat(filepath.Join(root, "corpus")); err != nil {
			Skip(fmt.Sprintf("real bundles %s/corpus are absent (set OLMV1_TESTDATA to the shared testdata folder to run this): %v", root, err))
		}
		var err error
		dc, err = dynamic.NewForConfig(env.cfg)
		Expect(err).NotTo(HaveOccurred())
		c = newClient(env.cfg)
		chosen = chooseRealBundles(root)
		ownOnly = chosen[0]
		for _, b := range chosen {
			fmt.Fprintf(GinkgoWriter, "chosen: %s (%s, version %s): %s\n", b.Source, b.Package, b.Version, b.why)
		}
		DeferCleanup(func(ctx SpecContext) {
			// Whatever a failed spec left behind; the specs themselves uninstall with the plugin.
			for _, name := range append(operatorNames(chosen), ownOnly.Package+"-watch", "no-such-package") {
				_ = dc.Resource(operatorGVR).Delete(ctx, name, metav1.DeleteOptions{})
			}
			_ = dc.Resource(catalogGVR).Delete(ctx, catalogName, metav1.DeleteOptions{})
		})
	})

	AfterAll(func() {
		printRealBundleTable(chosen)
		fmt.Fprintf(GinkgoWriter, "UnsupportedInstallMode on the Operator after %s (bound %s), its uninstall --wait %s; install --wait of an unresolvable package exited after %s (bound %s)\n",
			toUnsupported.Round(10*time.Millisecond), unsupportedModeBound, uninstallUnsupported.Round(10*time.Millisecond),
			toUnresolvable.Round(10*time.Millisecond), unresolvableBound)
	})

	It("validates and pushes each bundle, catalogs them with catalog init + add-bundle, serves the catalog, and bundle render carries olm.operatorNamespace", func(ctx SpecContext) {
		reg := env.registry.Addr
		catalogDir := filepath.Join(GinkgoT().TempDir(), "catalog")
		for _, b := range chosen {
			By("bundle validate + bundle push + catalog init + catalog add-bundle of " + b.Source)
			Expect(mustKubectlOLMv1(ctx, "bundle", "validate", b.Dir)).To(ContainSubstring(fmt.Sprintf("registry+v1 bundle %s (package %s, version %s): valid", b.CSVName, b.Package, b.Version)))
			b.image = reg + "/corpus/" + b.Package + ":" + b.Version
			Expect(mustKubectlOLMv1(ctx, "bundle", "push", b.Dir, b.image, "--insecure")).To(ContainSubstring(reg + "/corpus/" + b.Package + "@sha256:"))
			mustKubectlOLMv1(ctx, "catalog", "init", catalogDir, b.Package, "--default-channel", b.DefaultChannel)
			Expect(mustKubectlOLMv1(ctx, "catalog", "add-bundle", catalogDir, b.image, "--insecure")).To(ContainSubstring("channel " + b.DefaultChannel))
		}

		By("catalog push + catalog add --wait")
		catalogRef := reg + "/corpus/catalog:latest"
		mustKubectlOLMv1(ctx, "catalog", "push", catalogDir, catalogRef, "--insecure")
		mustKubectlOLMv1(ctx, "catalog", "add", catalogName, catalogRef, "--wait", "--timeout", "2m")

		By("bundle render of the OwnNamespace-only bundle: olm.operatorNamespace on its Deployment's pod template")
		out, errOut, err := kubectlOLMv1(ctx, "bundle", "render", ownOnly.Dir)
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(out).To(ContainSubstring("olm.operatorNamespace: " + ownOnly.namespace()))
		Expect(errOut).To(ContainSubstring("install mode OwnNamespace (default, watching " + ownOnly.namespace() + ")"))
	})

	It(fmt.Sprintf("shows an unsupported watch-namespace set on the Operator as Installed=False UnsupportedInstallMode within %s", unsupportedModeBound), func(ctx SpecContext) {
		name := ownOnly.Package + "-watch"
		start := time.Now()
		mustKubectlOLMv1(ctx, "install", ownOnly.Package, "--name", name,
			"--watch-namespace", "real-bundles-team-a", "--watch-namespace", "real-bundles-team-b")
		op := waitCondition(ctx, c, operatorNamed(name), "Installed", "False", unsupportedModeBound-time.Since(start),
			anyGeneration(), withReason("UnsupportedInstallMode"), pollEvery(100*time.Millisecond))
		msg := conditionMessage(op, "Installed")
		toUnsupported = time.Since(start)
		fmt.Fprintf(GinkgoWriter, "MEASURED: Operator %s showed UnsupportedInstallMode %s after creation: %s\n", name, toUnsupported.Round(10*time.Millisecond), msg)
		Expect(msg).To(ContainSubstring("install mode MultiNamespace"))
		Expect(msg).To(ContainSubstring("it supports OwnNamespace"))

		// When this label runs alone on a fresh control plane this takes 25-46 s, against about 5 s for
		// the uninstalls later on: the BundleDeployment and the namespace are removed by the garbage
		// collector (ownerReferences to the Operator), and the BundleDeployment was seen to sit ~40 s
		// with its owner gone and no deletionTimestamp, most likely until the collector's first 30 s
		// discovery resync after the OLM CRDs were installed.
		start = time.Now()
		_, errOut, err := kubectlOLMv1(ctx, "uninstall", name, "--wait", "--timeout", "2m")
		uninstallUnsupported = time.Since(start)
		Expect(err).NotTo(HaveOccurred(), errOut)
		fmt.Fprintf(GinkgoWriter, "MEASURED: uninstall %s --wait took %s\n", name, uninstallUnsupported.Round(10*time.Millisecond))
	})

	It("installs each bundle with `kubectl olmv1 install PKG --wait` and no other flag: Installed, Healthy, the default install mode named by the BundleDeployment", func(ctx SpecContext) {
		objectsRE := regexp.MustCompile(`\((\d+) objects`)
		for _, b := range chosen {
			By("install " + b.Package + " (" + b.why + ")")
			start := time.Now()
			_, errOut, err := kubectlOLMv1(ctx, "install", b.Package, "--wait", "--timeout", "3m")
			b.healthy = time.Since(start)
			Expect(err).NotTo(HaveOccurred(), "install %s --wait:\n%s", b.Package, errOut)

			op, err := dc.Resource(operatorGVR).Get(ctx, b.Package, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(findCondition(op, "Installed")).To(HaveKeyWithValue("status", "True"))
			Expect(findCondition(op, "Healthy")).To(HaveKeyWithValue("status", "True"))

			bd, err := dc.Resource(bundleDeploymentGVRForCLI).Get(ctx, b.Package, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			ns := nestedString(bd.Object, "spec", "installNamespace")
			Expect(ns).To(Equal(b.namespace()))
			installed, _ := findCondition(bd, "Installed")["message"].(string)
			want := "install mode " + b.defaultMode() + " (default"
			if b.defaultMode() == "OwnNamespace" {
				want += ", watching " + ns + ")"
			}
			Expect(installed).To(ContainSubstring(want), "BundleDeployment %s Installed message", b.Package)
			b.mode = b.defaultMode()
			if m := objectsRE.FindStringSubmatch(installed); m != nil {
				b.objects, _ = strconv.Atoi(m[1])
			}

			// What the operator reads through the downward API: the install namespace, and the
			// watched namespaces ("" for all).
			targets := ""
			if b.mode == "OwnNamespace" {
				targets = ns
			}
			for _, name := range b.Deployments {
				d, err := env.clientset.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
				Expect(err).NotTo(HaveOccurred())
				Expect(d.Spec.Template.Annotations).To(HaveKeyWithValue("olm.operatorNamespace", ns), "Deployment %s/%s", ns, name)
				Expect(d.Spec.Template.Annotations).To(HaveKeyWithValue("olm.targetNamespaces", targets), "Deployment %s/%s", ns, name)
			}
			fmt.Fprintf(GinkgoWriter, "MEASURED: %s Installed+Healthy in %s (%s)\n", b.Package, b.healthy.Round(10*time.Millisecond), installed)
		}
	})

	It(fmt.Sprintf("gives up on a package no catalog has: install --wait exits 1 within %s naming Resolved=False", unresolvableBound), func(ctx SpecContext) {
		// A bound well above the expected exit, so that a regression fails here rather than hanging.
		wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		start := time.Now()
		_, errOut, err := kubectlOLMv1(wctx, "install", "no-such-package", "--wait")
		toUnresolvable = time.Since(start)
		fmt.Fprintf(GinkgoWriter, "MEASURED: install no-such-package --wait exited after %s\n", toUnresolvable.Round(10*time.Millisecond))
		var exitErr *exec.ExitError
		Expect(errors.As(err, &exitErr)).To(BeTrue(), "want exit 1, got %v\n%s", err, errOut)
		Expect(exitErr.ExitCode()).To(Equal(1))
		Expect(errOut).To(ContainSubstring("Resolved=False"))
		Expect(toUnresolvable).To(BeNumerically("<", unresolvableBound))

		_, errOut, err = kubectlOLMv1(ctx, "uninstall", "no-such-package", "--wait", "--timeout", "2m")
		Expect(err).NotTo(HaveOccurred(), errOut)
	})

	It("uninstalls every Operator with `kubectl olmv1 uninstall NAME --wait`", func(ctx SpecContext) {
		for _, b := range chosen {
			start := time.Now()
			_, errOut, err := kubectlOLMv1(ctx, "uninstall", b.Package, "--wait", "--timeout", "2m")
			b.uninstall = time.Since(start)
			Expect(err).NotTo(HaveOccurred(), "uninstall %s --wait:\n%s", b.Package, errOut)
			_, err = dc.Resource(operatorGVR).Get(ctx, b.Package, metav1.GetOptions{})
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Operator %s: %v", b.Package, err)
		}
	})
})

// chooseRealBundles picks, by what each CSV's spec.installModes says: an OwnNamespace-only bundle
// (first in the result), a bundle supporting exactly OwnNamespace and SingleNamespace, and up to
// three AllNamespaces bundles with different install-mode sets. Every one has no dependency (nothing
// else in the catalog could satisfy it), only kinds a bare cluster serves, and a Deployment; among
// those, bundles without webhooks, with fewer Deployments and smaller manifests come first.
//
// The corpus (the latest bundle of 30 sampled community operators) has no bundle without
// AllNamespaces, so the two such shapes come from the other real sources of the test data when the
// corpus has none: bundles/<package>/<version>, then the head of the default channel of each package
// of catalogs/community-v4.16, whose bundles embed their manifests (olm.bundle.object) and are written
// out as bundle directories unchanged (annotations.yaml is made from the catalog's package and channels).
func chooseRealBundles(root string) []*realBundle {
	dirs, err := localcluster.ReadCorpusBundles(root, "corpus", "bundles")
	Expect(err).NotTo(HaveOccurred())
	var fromCatalog []localcluster.CorpusBundle
	catalogLoaded := false
	taken := map[string]bool{} // packages and namespaces already chosen

	pick := func(pool []localcluster.CorpusBundle, fits func(localcluster.CorpusBundle) bool) *realBundle {
		var c []localcluster.CorpusBundle
		for _, b := range pool {
			if fits(b) && installableOnKwok(b) && !taken[b.Package] && !taken[(&realBundle{CorpusBundle: b}).namespace()] {
				c = append(c, b)
			}
		}
		if len(c) == 0 {
			return nil
		}
		sort.SliceStable(c, func(i, j int) bool {
			if (c[i].Webhooks > 0) != (c[j].Webhooks > 0) {
				return c[i].Webhooks == 0
			}
			if len(c[i].Deployments) != len(c[j].Deployments) {
				return len(c[i].Deployments) < len(c[j].Deployments)
			}
			return c[i].Bytes < c[j].Bytes
		})
		return &realBundle{CorpusBundle: c[0]}
	}
	// pickShape prefers a webhook-free bundle from any source over one with webhooks.
	pickShape := func(why string, fits func(localcluster.CorpusBundle) bool) *realBundle {
		b := pick(dirs, fits)
		if b == nil || b.Webhooks > 0 {
			if !catalogLoaded {
				fromCatalog, err = localcluster.ExtractCatalogBundles(filepath.Join(root, "catalogs", "community-v4.16"), GinkgoT().TempDir())
				Expect(err).NotTo(HaveOccurred())
				catalogLoaded = true
			}
			if c := pick(fromCatalog, fits); c != nil && (b == nil || c.Webhooks == 0) {
				b = c
			}
		}
		if b == nil {
			Fail(fmt.Sprintf("no installable %s bundle in %s (corpus, bundles, catalogs/community-v4.16)", why, root))
		}
		b.why = why
		taken[b.Package], taken[b.namespace()] = true, true
		return b
	}
	supports := func(b localcluster.CorpusBundle, modes ...string) bool {
		for _, m := range modes {
			if !b.Supports(m) {
				return false
			}
		}
		return true
	}

	out := []*realBundle{
		pickShape("OwnNamespace only", func(b localcluster.CorpusBundle) bool {
			return supports(b, "OwnNamespace") && !b.Supports("SingleNamespace") && !b.Supports("AllNamespaces")
		}),
		pickShape("OwnNamespace+SingleNamespace, no AllNamespaces", func(b localcluster.CorpusBundle) bool {
			return supports(b, "OwnNamespace", "SingleNamespace") && !b.Supports("AllNamespaces") && !b.Supports("MultiNamespace")
		}),
	}
	// AllNamespaces bundles from the corpus itself, one per install-mode set.
	var corpus []localcluster.CorpusBundle
	for _, b := range dirs {
		if strings.HasPrefix(b.Source, "corpus/") {
			corpus = append(corpus, b)
		}
	}
	modeSets := map[string]bool{}
	for len(out) < 5 {
		b := pick(corpus, func(b localcluster.CorpusBundle) bool {
			return b.Supports("AllNamespaces") && b.Webhooks == 0 && !modeSets[strings.Join(b.InstallModes, "+")]
		})
		if b == nil {
			break
		}
		set := strings.Join(b.InstallModes, "+")
		modeSets[set] = true
		b.why = "AllNamespaces, supports " + set
		taken[b.Package], taken[b.namespace()] = true, true
		out = append(out, b)
	}
	Expect(len(out)).To(BeNumerically(">=", 4), "want at least two webhook-free AllNamespaces bundles in %s/corpus", root)
	return out
}

// installableOnKwok: nothing to resolve besides itself, only kinds a bare cluster serves, and at least
// one Deployment (kwok's fake pods become Ready, so Deployments become Available).
func installableOnKwok(b localcluster.CorpusBundle) bool {
	if len(b.Dependencies) > 0 || len(b.Deployments) == 0 {
		return false
	}
	return b.OnlyBareClusterKinds()
}

func operatorNames(bs []*realBundle) []string {
	var names []string
	for _, b := range bs {
		names = append(names, b.Package)
	}
	return names
}

func printRealBundleTable(bs []*realBundle) {
	w := tabwriter.NewWriter(GinkgoWriter, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "PACKAGE\tVERSION\tSOURCE\tINSTALL MODES SUPPORTED\tMODE USED\tOBJECTS\tINSTALLED+HEALTHY IN\tUNINSTALLED IN")
	took := func(d time.Duration) string {
		if d == 0 {
			return "-"
		}
		return d.Round(10 * time.Millisecond).String()
	}
	for _, b := range bs {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", b.Package, b.Version, b.Source, strings.Join(b.InstallModes, ","), b.mode, b.objects, took(b.healthy), took(b.uninstall))
	}
	_ = w.Flush()
}
