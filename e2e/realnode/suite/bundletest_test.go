package suite

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/olmv1/olmv1/e2e/bundletest"
	"github.com/olmv1/olmv1/e2e/chart/images"
	"github.com/olmv1/olmv1/e2e/realnode/widgetbundle"
)

// authorImage is the name the widget bundles under test give their operator image: a registry that
// does not exist, as an author's bundle names the image it will publish; bundle test's --load-image
// serves it to the node from the test's own registry.
const authorImage = "registry.example.test/widget-operator:v1"

// The operator author's bundle test with the operator's pods really running (issue 32 item 2): a
// throw-away control plane and real kubelet of the bundle test's own, OLM v1 from the chart, and
// widget-operator's container pulled under its own name through --load-image. The widget operator's
// webhooks are then called by kube-apiserver when the bundle test creates its alm-examples.
var _ = Describe("bundle test with real pods", Label("real-node", "bundle-test"), func() {
	It("installs, exercises through the operator's webhooks, uninstalls and upgrades widget-operator with its container really running", func(ctx SpecContext) {
		work := GinkgoT().TempDir()
		By("building widget-operator's image into a tarball, as `docker save` leaves it, and bundles 1.0.0 and 1.1.0 naming " + authorImage)
		bin := filepath.Join(work, "widget-operator")
		Expect(widgetbundle.BuildBinary(ctx, filepath.Join(env.repoRoot, "e2e"), bin)).To(Succeed())
		img, err := images.Build("widget-operator", bin, images.Options{})
		Expect(err).NotTo(HaveOccurred())
		tag, err := name.NewTag(authorImage)
		Expect(err).NotTo(HaveOccurred())
		archive := filepath.Join(work, "widget-operator.tar")
		Expect(tarball.WriteToFile(archive, tag, img)).To(Succeed())
		for _, v := range widgetbundle.Versions {
			Expect(widgetbundle.RenderBundle(filepath.Join(work, v), v, authorImage)).To(Succeed())
		}
		prev, next := widgetbundle.Versions[0], widgetbundle.Versions[1]

		report := filepath.Join(work, "report.xml")
		args := []string{"bundle-test", filepath.Join(work, next), "--upgrade-from", filepath.Join(work, prev),
			"--pods", "real", "--load-image", authorImage + "=" + archive, "--junit", report, "--repo", env.repoRoot}
		start := time.Now()
		out, code := runDev(ctx, args...)
		took := time.Since(start).Round(time.Second)
		fmt.Fprintf(GinkgoWriter, "bundle test with real pods took %s\n", took)
		AddReportEntry("bundle test with real pods", took.String())
		Expect(code).To(Equal(0), "bundle test failed:\n%s", out)
		Expect(out).To(ContainSubstring(bundletest.RealPodsNote))
		Expect(out).NotTo(ContainSubstring("simulated"))
		Expect(out).To(ContainSubstring("image " + authorImage))
		Expect(out).To(ContainSubstring("bundle-test widget-operator " + next + ": PASSED"))

		By("reading the JUnit report: every step passed, the examples went through the webhooks, the upgrade ran")
		data, err := os.ReadFile(report)
		Expect(err).NotTo(HaveOccurred())
		var r struct {
			Suites []struct {
				Failures  int    `xml:"failures,attr"`
				SystemOut string `xml:"system-out"`
				Cases     []struct {
					Name string `xml:"name,attr"`
				} `xml:"testcase"`
			} `xml:"testsuite"`
		}
		Expect(xml.Unmarshal(data, &r)).To(Succeed())
		Expect(r.Suites).To(HaveLen(1))
		Expect(r.Suites[0].Failures).To(BeZero())
		Expect(r.Suites[0].SystemOut).To(Equal(bundletest.RealPodsNote))
		var names []string
		for _, c := range r.Suites[0].Cases {
			names = append(names, c.Name)
		}
		Expect(names).To(ContainElements(
			"install AllNamespaces",
			"example Widget example (AllNamespaces)",
			"example Widget example-v2 (AllNamespaces)",
			"uninstall AllNamespaces",
			"install previous "+prev+" (AllNamespaces)",
			"create examples of "+prev,
			"upgrade "+prev+" -> "+next,
			"uninstall after upgrade",
		), "steps: %s", strings.Join(names, "; "))
	}, NodeTimeout(15*time.Minute))
})

// runDev runs bin/olmv1-dev with args from the repository root and returns its combined output and
// exit code. It uses no cluster of the suite's: the bundle test starts its own.
func runDev(ctx SpecContext, args ...string) (string, int) {
	cmd := exec.CommandContext(ctx, filepath.Join(env.binDir, "olmv1-dev"), args...)
	cmd.Dir = env.repoRoot
	cmd.Env = append(os.Environ(), "KUBECONFIG=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	fmt.Fprintf(GinkgoWriter, "$ olmv1-dev %s\n", strings.Join(args, " "))
	err := cmd.Run()
	fmt.Fprint(GinkgoWriter, out.String())
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), ee.ExitCode()
	}
	Expect(err).NotTo(HaveOccurred())
	return out.String(), 0
}
