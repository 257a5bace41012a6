package suite

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// The operator author's loop (issue 32): generating bundles from plain manifests, testing the upgrade
// between them, promoting and drawing the graph, and generating a composite meta package; the same
// Describe as the bundle test verdicts in author_test.go.
var _ = Describe("bundle test", Label("author"), func() {
	It("the whole loop: generates two versions from plain manifests, tests the upgrade between them, promotes the new one from alpha to stable and draws the graph", func(ctx SpecContext) {
		// Only a Deployment, a ServiceAccount, a ClusterRole with its binding, a CRD and an icon.
		plain := filepath.Join(env.repoRoot, "e2e/testdata/author/plain")
		out := GinkgoT().TempDir()
		for _, v := range []string{"0.1.0", "0.2.0"} {
			mustKubectlOLMv1(ctx, "bundle", "generate", plain, "--package", "gizmo-operator", "--version", v,
				"--channels", "alpha", "--icon", filepath.Join(plain, "icon.svg"), "--output", filepath.Join(out, v))
			Expect(mustKubectlOLMv1(ctx, "bundle", "validate", filepath.Join(out, v))).To(ContainSubstring("gizmo-operator.v" + v + " (package gizmo-operator, version " + v + "): valid"))
		}

		By("bundle test of 0.2.0 with the upgrade from 0.1.0, on a throw-away control plane")
		report := filepath.Join(GinkgoT().TempDir(), "report.xml")
		log, code := runAuthorTool(ctx, "olmv1-dev", "bundle-test", "--pods", "simulated", filepath.Join(out, "0.2.0"), "--upgrade-from", filepath.Join(out, "0.1.0"),
			"--install-modes", "AllNamespaces", "--junit", report)
		Expect(code).To(Equal(0), log)
		Expect(log).To(ContainSubstring("gizmo-operator.v0.2.0 replaces gizmo-operator.v0.1.0"))
		cases, _, failures := readJUnit(report)
		Expect(failures).To(BeZero())
		Expect(cases).To(HaveKey("upgrade 0.1.0 -> 0.2.0"))

		By("publishing both to alpha, promoting 0.2.0 to stable, drawing the graph")
		reg := env.registry.Addr
		catalogDir := filepath.Join(GinkgoT().TempDir(), "catalog")
		for _, v := range []string{"0.1.0", "0.2.0"} {
			ref := reg + "/author/gizmo-operator-bundle:" + v
			mustKubectlOLMv1(ctx, "bundle", "push", filepath.Join(out, v), ref, "--insecure")
			mustKubectlOLMv1(ctx, "catalog", "add-bundle", catalogDir, ref, "--insecure")
		}
		Expect(mustKubectlOLMv1(ctx, "catalog", "promote", catalogDir, "gizmo-operator", "0.2.0", "--to", "stable")).To(ContainSubstring("promoted gizmo-operator.v0.2.0"))
		_, errOut, err := kubectlOLMv1(ctx, "catalog", "promote", catalogDir, "gizmo-operator", "0.1.0", "--to", "stable")
		Expect(err).To(HaveOccurred(), "an older bundle than the channel's head is refused")
		Expect(errOut).To(ContainSubstring("cannot promote gizmo-operator.v0.1.0"))
		mustKubectlOLMv1(ctx, "catalog", "validate", catalogDir)
		svg := mustKubectlOLMv1(ctx, "catalog", "graph", catalogDir, "gizmo-operator", "-o", "svg")
		Expect(xml.Unmarshal([]byte(svg), new(struct {
			XMLName xml.Name `xml:"svg"`
		}))).To(Succeed(), "the graph is an SVG document")
		for _, want := range []string{"gizmo-operator.v0.1.0", "gizmo-operator.v0.2.0", "alpha", "stable"} {
			Expect(svg).To(ContainSubstring(want))
		}
		Expect(mustKubectlOLMv1(ctx, "catalog", "graph", catalogDir, "gizmo-operator", "-o", "mermaid")).To(MatchRegexp(`(?m)^  n0 -->\|"alpha"\| n1$`))
	}, NodeTimeout(bundleTestTimeout))

	It("generates a composite meta package with --requires-package, and installing it installs the packages it requires", func(ctx SpecContext) {
		// A CRD and no Deployment: the package only pulls in alpha-operator and beta-operator (the
		// composite fixture's bundles).
		plain := filepath.Join(env.repoRoot, authorFixture, "composite-plain")
		deps := filepath.Join(env.repoRoot, "e2e", "testdata", "composite-operator", "bundles")
		gen := filepath.Join(GinkgoT().TempDir(), "stack-operator")
		_, warnings, err := kubectlOLMv1(ctx, "bundle", "generate", plain, "--package", "stack-operator", "--version", "1.0.0", "--channels", "stable",
			"--requires-package", "alpha-operator:>=1.0.0", "--requires-package", "beta-operator:>=1.0.0", "--output", gen)
		Expect(err).NotTo(HaveOccurred(), warnings)
		Expect(warnings).To(ContainSubstring("the manifests hold no Deployment"))
		depsFile, err := os.ReadFile(filepath.Join(gen, "metadata", "dependencies.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(depsFile)).To(And(ContainSubstring("packageName: alpha-operator"), ContainSubstring("packageName: beta-operator")))

		By("pushing the composite bundle and its dependencies, and serving a catalog of them")
		reg := env.registry.Addr
		catalogDir := filepath.Join(GinkgoT().TempDir(), "catalog")
		for dir, ref := range map[string]string{
			gen: reg + "/author/stack-operator-bundle:1.0.0",
			filepath.Join(deps, "alpha-operator/1.0.0"): reg + "/author/alpha-operator-bundle:1.0.0",
			filepath.Join(deps, "beta-operator/1.0.0"):  reg + "/author/beta-operator-bundle:1.0.0",
		} {
			mustKubectlOLMv1(ctx, "bundle", "push", dir, ref, "--insecure")
			mustKubectlOLMv1(ctx, "catalog", "add-bundle", catalogDir, ref, "--insecure")
		}
		catalogRef := reg + "/author/stack-catalog:latest"
		mustKubectlOLMv1(ctx, "catalog", "push", catalogDir, catalogRef, "--insecure")
		dc, err := dynamic.NewForConfig(env.cfg)
		Expect(err).NotTo(HaveOccurred())
		c := newClient(env.cfg)
		DeferCleanup(func(ctx SpecContext) {
			_ = dc.Resource(catalogGVR).Delete(ctx, "stack-catalog", metav1.DeleteOptions{})
		})
		mustKubectlOLMv1(ctx, "catalog", "add", "stack-catalog", catalogRef, "--wait", "--timeout", "2m")

		By("install --dependency-policy Install of the composite package")
		ops := dc.Resource(operatorGVR)
		DeferCleanup(func(ctx SpecContext) {
			// Not `kubectl olmv1 uninstall`: a cleanup cannot make the temporary directory it needs.
			_ = ops.Delete(ctx, "stack", metav1.DeleteOptions{})
			for _, dep := range []string{"stack", "alpha-operator", "beta-operator"} {
				Eventually(func() error { _, err := ops.Get(ctx, dep, metav1.GetOptions{}); return err }).WithContext(ctx).
					WithTimeout(2*time.Minute).WithPolling(250*time.Millisecond).Should(Satisfy(apierrors.IsNotFound), "Operator %s is deleted (the dependencies with their dependent)", dep)
			}
		})
		_, errOut, err := kubectlOLMv1(ctx, "install", "stack-operator", "--name", "stack", "--dependency-policy", "Install", "--wait", "--timeout", "4m")
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(errOut).To(ContainSubstring("installed stack-operator.v1.0.0"))

		By("operator-controller created an Operator for each required package, and each is Installed")
		stack, err := ops.Get(ctx, "stack", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(findCondition(stack, "Installed")).To(HaveKeyWithValue("status", "True"))
		for _, dep := range []string{"alpha-operator", "beta-operator"} {
			op := operatorNamed(dep)
			waitCondition(ctx, c, op, "Installed", "True", 3*time.Minute, andAlso(func(g Gomega) {
				g.Expect(op.GetLabels()).To(HaveKeyWithValue("operators.operatorframework.io/dependency", "true"))
				g.Expect(op.GetOwnerReferences()).To(ConsistOf(HaveField("Name", "stack")))
				g.Expect(op.Object["spec"]).To(HaveKeyWithValue("packageName", dep))
			}))
		}
		deps2, _, _ := unstructured.NestedSlice(stack.Object, "status", "dependencies")
		Expect(deps2).To(ConsistOf(
			And(HaveKeyWithValue("package", "alpha-operator"), HaveKeyWithValue("operator", "alpha-operator"), HaveKeyWithValue("requiredBy", ContainSubstring("olm.package.required"))),
			And(HaveKeyWithValue("package", "beta-operator"), HaveKeyWithValue("operator", "beta-operator"), HaveKeyWithValue("requiredBy", ContainSubstring("olm.package.required"))),
		))
		_, err = env.clientset.CoreV1().Namespaces().Get(ctx, nestedString(stack.Object, "status", "installNamespace"), metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "the composite package's install namespace")
		crd, err := dc.Resource(crdGVR).Get(ctx, "stacks.composite.olmv1.io", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "the composite package's own CRD is installed")
		Expect(crd.GetName()).To(Equal("stacks.composite.olmv1.io"))
	}, NodeTimeout(bundleTestTimeout))
})
