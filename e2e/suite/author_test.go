package suite

// The operator author's bundle test (issue 32 item 2): `olmv1-dev bundle-test` and
// `kubectl olmv1 bundle test` run as an author runs them, each on a throw-away control plane of its
// own (not the suite's), and are judged by their exit code, output and JUnit report.

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/olmv1/olmv1/e2e/bundletest"
	"github.com/olmv1/olmv1/platform/sharedtestdata"
)

// bundleTestTimeout bounds one bundle test: its own control plane, up to four installs and an upgrade.
const bundleTestTimeout = 10 * time.Minute

// junitReport is the part of a JUnit XML file the author specs read.
type junitReport struct {
	Suites []struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Cases    []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Text string `xml:",chardata"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// readJUnit parses the JUnit file of one bundle test and returns its only suite's testcases by name
// (the failure text, "" for a passed or skipped case) with the suite's failure count.
func readJUnit(path string) (cases map[string]string, tests, failures int) {
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	var r junitReport
	Expect(xml.Unmarshal(data, &r)).To(Succeed(), "%s is JUnit XML", path)
	Expect(r.Suites).To(HaveLen(1))
	cases = map[string]string{}
	for _, c := range r.Suites[0].Cases {
		cases[c.Name] = ""
		if c.Failure != nil {
			cases[c.Name] = c.Failure.Text
		}
	}
	return cases, r.Suites[0].Tests, r.Suites[0].Failures
}

// runAuthorTool runs bin/<tool> with args from the repository root, as the docs show, and returns
// its combined output and exit code.
func runAuthorTool(ctx context.Context, tool string, args ...string) (string, int) {
	binDir := os.Getenv("E2E_BIN_DIR")
	if binDir == "" {
		binDir = filepath.Join(env.repoRoot, "bin")
	}
	bin := filepath.Join(binDir, tool)
	if _, err := os.Stat(bin); err != nil {
		Fail(fmt.Sprintf("%s not found: run `make build` first (%v)", bin, err))
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = env.repoRoot
	// Not the suite's cluster: the bundle test starts its own.
	cmd.Env = append(os.Environ(), "KUBECONFIG=", "DOCKER_CONFIG="+GinkgoT().TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	fmt.Fprintf(GinkgoWriter, "$ %s %s\n", tool, strings.Join(args, " "))
	err := cmd.Run()
	fmt.Fprint(GinkgoWriter, out.String())
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String(), exit.ExitCode()
	}
	Expect(err).NotTo(HaveOccurred())
	return out.String(), 0
}

var _ = Describe("bundle test", Label("author"), func() {
	const fixture = "e2e/testdata/author"

	It("installs the bundle in every install mode it supports, applies its alm-examples, uninstalls it and upgrades from the previous version", func(ctx SpecContext) {
		report := filepath.Join(GinkgoT().TempDir(), "report.xml")
		out, code := runAuthorTool(ctx, "olmv1-dev", "bundle-test", fixture+"/0.2.0", "--upgrade-from", fixture+"/0.1.0", "--junit", report)
		Expect(code).To(Equal(0), out)
		Expect(out).To(ContainSubstring("pods were simulated by kwok"))
		Expect(out).To(MatchRegexp(`STEP +RESULT +DURATION +MESSAGE`))
		Expect(out).To(ContainSubstring("bundle-test widget-operator 0.2.0: PASSED"))

		cases, tests, failures := readJUnit(report)
		Expect(failures).To(BeZero())
		Expect(tests).To(Equal(len(cases)))
		for _, mode := range []string{"AllNamespaces", "OwnNamespace", "SingleNamespace"} {
			Expect(cases).To(HaveKey("install "+mode), "one testcase per step")
			Expect(cases).To(HaveKey("example Widget small (" + mode + ")"))
			Expect(cases).To(HaveKey("example Widget blue (" + mode + ")"))
			Expect(cases).To(HaveKey("uninstall " + mode))
		}
		Expect(cases).NotTo(HaveKey("install MultiNamespace"), "the CSV does not support MultiNamespace")
		Expect(cases).To(HaveKey("install previous 0.1.0 (AllNamespaces)"))
		Expect(cases).To(HaveKey("create examples of 0.1.0"), "the previous version's custom resources exist during the upgrade")
		Expect(cases).To(HaveKey("upgrade 0.1.0 -> 0.2.0"))
		Expect(cases).To(HaveKey("uninstall after upgrade"))
		Expect(out).To(ContainSubstring("widget-operator.v0.2.0 replaces widget-operator.v0.1.0"))
		Expect(out).To(ContainSubstring("rukpak's CRD upgrade-safety check accepted widgets.author.olmv1.io with 1 existing custom resource(s)"))
		Expect(out).To(ContainSubstring("CRDs kept and released"))
	}, NodeTimeout(bundleTestTimeout))

	It("exits 1 with the API server's message when an alm-examples custom resource is invalid", func(ctx SpecContext) {
		bad := filepath.Join(GinkgoT().TempDir(), "bad-example")
		Expect(os.CopyFS(bad, os.DirFS(filepath.Join(env.repoRoot, fixture, "0.2.0")))).To(Succeed())
		csv := filepath.Join(bad, "manifests", "widget-operator.clusterserviceversion.yaml")
		data, err := os.ReadFile(csv)
		Expect(err).NotTo(HaveOccurred())
		invalid := strings.Replace(string(data), `"spec": {"size": 3, "color": "blue"}`, `"spec": {"size": 0, "color": "blue"}`, 1)
		Expect(invalid).NotTo(Equal(string(data)))
		Expect(os.WriteFile(csv, []byte(invalid), 0o644)).To(Succeed())

		report := filepath.Join(GinkgoT().TempDir(), "report.xml")
		out, code := runAuthorTool(ctx, "olmv1-dev", "bundle-test", bad, "--install-modes", "OwnNamespace", "--junit", report)
		Expect(code).To(Equal(1), out)
		Expect(out).To(ContainSubstring(`the API server refused Widget blue: Widget.author.olmv1.io "blue" is invalid: spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1`))
		Expect(out).To(ContainSubstring("bundle-test widget-operator 0.2.0: FAILED"))

		cases, _, failures := readJUnit(report)
		Expect(failures).To(Equal(1))
		Expect(cases).To(HaveKeyWithValue("example Widget blue (OwnNamespace)", ContainSubstring("greater than or equal to 1")))
		Expect(cases).To(HaveKeyWithValue("example Widget small (OwnNamespace)", ""))
		Expect(cases).To(HaveKeyWithValue("uninstall OwnNamespace", ""), "the uninstall still runs and passes")
	}, NodeTimeout(bundleTestTimeout))

	It("exits 1 with rukpak's message when the new CRD would reject the previous version's custom resources", func(ctx SpecContext) {
		unsafe := filepath.Join(GinkgoT().TempDir(), "unsafe-crd")
		Expect(os.CopyFS(unsafe, os.DirFS(filepath.Join(env.repoRoot, fixture, "0.2.0")))).To(Succeed())
		// spec.size minimum 1 -> 2: the Widget "small" of 0.1.0 (size 1) would no longer be valid. The
		// bundle's own examples are made valid for it, so that only the upgrade fails.
		edit := func(file, old, new string) {
			p := filepath.Join(unsafe, "manifests", file)
			data, err := os.ReadFile(p)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(data)).To(ContainSubstring(old))
			Expect(os.WriteFile(p, []byte(strings.ReplaceAll(string(data), old, new)), 0o644)).To(Succeed())
		}
		edit("widgets.author.olmv1.io.crd.yaml", "minimum: 1", "minimum: 2")
		edit("widget-operator.clusterserviceversion.yaml", `"spec": {"size": 1}`, `"spec": {"size": 2}`)

		report := filepath.Join(GinkgoT().TempDir(), "report.xml")
		out, code := runAuthorTool(ctx, "olmv1-dev", "bundle-test", unsafe, "--upgrade-from", fixture+"/0.1.0", "--install-modes", "OwnNamespace", "--junit", report)
		Expect(code).To(Equal(1), out)
		cases, _, failures := readJUnit(report)
		Expect(failures).To(Equal(1))
		Expect(cases).To(HaveKeyWithValue("upgrade 0.1.0 -> 0.2.0", And(
			ContainSubstring("Installed=False, reason UpgradeBlocked"),
			ContainSubstring("Widget bundle-test-upgrade/small: spec.size: Invalid value: 1: spec.size in body should be greater than or equal to 2"),
			ContainSubstring("bundle widget-operator.v0.1.0 stays installed"))))
		Expect(cases).To(HaveKeyWithValue("install OwnNamespace", ""))
		Expect(cases).To(HaveKeyWithValue("uninstall after upgrade", ""))
	}, NodeTimeout(bundleTestTimeout))

	It("kubectl olmv1 bundle test upgrades from the channel head of a published catalog", func(ctx SpecContext) {
		reg := env.registry.Addr
		prev := reg + "/author/widget-operator-bundle:0.1.0"
		catalogRef := reg + "/author/catalog:latest"
		catalogDir := filepath.Join(GinkgoT().TempDir(), "catalog")
		mustKubectlOLMv1(ctx, "bundle", "push", filepath.Join(env.repoRoot, fixture, "0.1.0"), prev, "--insecure")
		mustKubectlOLMv1(ctx, "catalog", "add-bundle", catalogDir, prev, "--insecure")
		mustKubectlOLMv1(ctx, "catalog", "push", catalogDir, catalogRef, "--insecure")

		report := filepath.Join(GinkgoT().TempDir(), "report.xml")
		out, code := runAuthorTool(ctx, "kubectl-olmv1", "bundle", "test", fixture+"/0.2.0", "--catalog", catalogRef,
			"--install-modes", "AllNamespaces", "--junit", report)
		Expect(code).To(Equal(0), out)
		Expect(out).To(ContainSubstring("channel stable head widget-operator.v0.1.0 (" + prev + ")"))
		cases, _, failures := readJUnit(report)
		Expect(failures).To(BeZero())
		Expect(cases).To(HaveKey("read catalog " + catalogRef))
		Expect(cases).To(HaveKey("upgrade 0.1.0 -> 0.2.0"))
	}, NodeTimeout(bundleTestTimeout))

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
		log, code := runAuthorTool(ctx, "olmv1-dev", "bundle-test", filepath.Join(out, "0.2.0"), "--upgrade-from", filepath.Join(out, "0.1.0"),
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
		plain := filepath.Join(env.repoRoot, fixture, "composite-plain")
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
			Eventually(func(g Gomega) {
				op, err := ops.Get(ctx, dep, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(op.GetLabels()).To(HaveKeyWithValue("operators.operatorframework.io/dependency", "true"))
				g.Expect(op.GetOwnerReferences()).To(ConsistOf(HaveField("Name", "stack")))
				g.Expect(op.Object["spec"]).To(HaveKeyWithValue("packageName", dep))
				c := findCondition(op, "Installed")
				g.Expect(c).To(HaveKeyWithValue("status", "True"), "Operator %s: %v", dep, op.Object["status"])
				g.Expect(c["observedGeneration"]).To(BeEquivalentTo(op.GetGeneration()))
			}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		}
		deps2, _, _ := unstructured.NestedSlice(stack.Object, "status", "dependencies")
		Expect(deps2).To(ConsistOf(
			And(HaveKeyWithValue("package", "alpha-operator"), HaveKeyWithValue("operator", "alpha-operator"), HaveKeyWithValue("requiredBy", ContainSubstring("olm.package.required"))),
			And(HaveKeyWithValue("package", "beta-operator"), HaveKeyWithValue("operator", "beta-operator"), HaveKeyWithValue("requiredBy", ContainSubstring("olm.package.required"))),
		))
		_, err = env.clientset.CoreV1().Namespaces().Get(ctx, cliNestedString(stack.Object, "status", "installNamespace"), metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "the composite package's install namespace")
		crd, err := dc.Resource(crdGVR).Get(ctx, "stacks.composite.olmv1.io", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred(), "the composite package's own CRD is installed")
		Expect(crd.GetName()).To(Equal("stacks.composite.olmv1.io"))
	}, NodeTimeout(bundleTestTimeout))

	// Real bundles of the corpus that pass. Not ack-s3, ack-kinesis, ack-mwaa or cluster-relocation
	// (the API server refuses their alm-examples), nor openebs 3.0.0 (its CRD carries the v1beta1
	// field spec.version, which server-side apply refuses).
	DescribeTable("tests a real bundle of the corpus", func(ctx SpecContext, pkg, version string, modes []string, example, accepted string) {
		root, _ := sharedtestdata.Root()
		dir := filepath.Join(root, "corpus", pkg, version)
		if _, err := os.Stat(dir); err != nil {
			Skip(fmt.Sprintf("the real bundle %s is absent (set OLMV1_TESTDATA to the shared testdata folder to run this): %v", dir, err))
		}
		report := filepath.Join(GinkgoT().TempDir(), "report.xml")
		start := time.Now()
		out, code := runAuthorTool(ctx, "olmv1-dev", "bundle-test", dir, "--junit", report)
		fmt.Fprintf(GinkgoWriter, "bundle test of %s %s took %s\n", pkg, version, time.Since(start).Round(time.Second))
		AddReportEntry("bundle test duration "+pkg+" "+version, time.Since(start).Round(time.Second).String())
		Expect(code).To(Equal(0), out)
		cases, _, failures := readJUnit(report)
		Expect(failures).To(BeZero())
		for _, mode := range bundletest.InstallModes {
			if slices.Contains(modes, mode) {
				Expect(cases).To(HaveKey("install "+mode), "the CSV supports %s", mode)
				Expect(cases).To(HaveKey("example " + example + " (" + mode + ")"))
				Expect(cases).To(HaveKey("uninstall " + mode))
			} else {
				Expect(cases).NotTo(HaveKey("install "+mode), "the CSV does not support %s", mode)
			}
		}
		Expect(out).To(ContainSubstring("the API server accepted " + accepted))
	},
		Entry("kaoto-operator 2.11.0", "kaoto-operator", "2.11.0", []string{"AllNamespaces"}, "Kaoto kaoto-demo", "designer.kaoto.io/v1alpha1 kaoto-demo", NodeTimeout(bundleTestTimeout)),
		Entry("seldon-operator 1.16.0", "seldon-operator", "1.16.0", []string{"AllNamespaces", "OwnNamespace", "SingleNamespace"},
			"SeldonDeployment seldon-model", "machinelearning.seldon.io/v1 seldon-model", NodeTimeout(bundleTestTimeout)),
	)
})
