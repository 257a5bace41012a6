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

	"github.com/olmv1/olmv1/e2e/bundletest"
	"github.com/olmv1/olmv1/platform/sharedtestdata"
)

// bundleTestTimeout bounds one bundle test: its own control plane, up to four installs and an upgrade.
const bundleTestTimeout = 10 * time.Minute

// authorFixture is the author specs' widget-operator bundles (0.1.0, 0.2.0) and plain manifests, from
// the repository root.
const authorFixture = "e2e/testdata/author"

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
	It("installs the bundle in every install mode it supports, applies its alm-examples, uninstalls it and upgrades from the previous version", func(ctx SpecContext) {
		report := filepath.Join(GinkgoT().TempDir(), "report.xml")
		out, code := runAuthorTool(ctx, "olmv1-dev", "bundle-test", "--pods", "simulated", authorFixture+"/0.2.0", "--upgrade-from", authorFixture+"/0.1.0", "--junit", report)
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
		Expect(os.CopyFS(bad, os.DirFS(filepath.Join(env.repoRoot, authorFixture, "0.2.0")))).To(Succeed())
		csv := filepath.Join(bad, "manifests", "widget-operator.clusterserviceversion.yaml")
		data, err := os.ReadFile(csv)
		Expect(err).NotTo(HaveOccurred())
		invalid := strings.Replace(string(data), `"spec": {"size": 3, "color": "blue"}`, `"spec": {"size": 0, "color": "blue"}`, 1)
		Expect(invalid).NotTo(Equal(string(data)))
		Expect(os.WriteFile(csv, []byte(invalid), 0o644)).To(Succeed())

		report := filepath.Join(GinkgoT().TempDir(), "report.xml")
		out, code := runAuthorTool(ctx, "olmv1-dev", "bundle-test", "--pods", "simulated", bad, "--install-modes", "OwnNamespace", "--junit", report)
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
		Expect(os.CopyFS(unsafe, os.DirFS(filepath.Join(env.repoRoot, authorFixture, "0.2.0")))).To(Succeed())
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
		out, code := runAuthorTool(ctx, "olmv1-dev", "bundle-test", "--pods", "simulated", unsafe, "--upgrade-from", authorFixture+"/0.1.0", "--install-modes", "OwnNamespace", "--junit", report)
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
		mustKubectlOLMv1(ctx, "bundle", "push", filepath.Join(env.repoRoot, authorFixture, "0.1.0"), prev, "--insecure")
		mustKubectlOLMv1(ctx, "catalog", "add-bundle", catalogDir, prev, "--insecure")
		mustKubectlOLMv1(ctx, "catalog", "push", catalogDir, catalogRef, "--insecure")

		report := filepath.Join(GinkgoT().TempDir(), "report.xml")
		out, code := runAuthorTool(ctx, "kubectl-olmv1", "bundle", "test", authorFixture+"/0.2.0", "--catalog", catalogRef,
			"--install-modes", "AllNamespaces", "--pods", "simulated", "--junit", report)
		Expect(code).To(Equal(0), out)
		Expect(out).To(ContainSubstring("channel stable head widget-operator.v0.1.0 (" + prev + ")"))
		cases, _, failures := readJUnit(report)
		Expect(failures).To(BeZero())
		Expect(cases).To(HaveKey("read catalog " + catalogRef))
		Expect(cases).To(HaveKey("upgrade 0.1.0 -> 0.2.0"))
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
		out, code := runAuthorTool(ctx, "olmv1-dev", "bundle-test", "--pods", "simulated", dir, "--junit", report)
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
