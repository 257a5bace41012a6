package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

var bundleDeploymentGVRForCLI = schema.GroupVersionResource{Group: "core.rukpak.io", Version: "v1alpha1", Resource: "bundledeployments"}

// kubectlOLMv1 runs the built bin/kubectl-olmv1 as a user would, against the suite's cluster, and
// returns stdout, stderr and the error (an *exec.ExitError for a non-zero exit).
func kubectlOLMv1(ctx context.Context, args ...string) (string, string, error) {
	binDir := os.Getenv("E2E_BIN_DIR")
	if binDir == "" {
		binDir = filepath.Join(env.repoRoot, "bin")
	}
	bin := filepath.Join(binDir, "kubectl-olmv1")
	if _, err := os.Stat(bin); err != nil {
		Fail(fmt.Sprintf("%s not found: run `make build` first (%v)", bin, err))
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	// The suite's kubeconfig, and an empty docker config: the local registry needs no credentials.
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.kubeconfig, "DOCKER_CONFIG="+GinkgoT().TempDir())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	fmt.Fprintf(GinkgoWriter, "$ kubectl olmv1 %s\n", strings.Join(args, " "))
	err := cmd.Run()
	fmt.Fprintf(GinkgoWriter, "%s%s", out.String(), errOut.String())
	return out.String(), errOut.String(), err
}

func mustKubectlOLMv1(ctx context.Context, args ...string) string {
	out, errOut, err := kubectlOLMv1(ctx, args...)
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "kubectl olmv1 %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), out, errOut)
	return out
}

var _ = Describe("kubectl-olmv1", Label("cli"), func() {
	var dc dynamic.Interface

	BeforeEach(func() {
		var err error
		dc, err = dynamic.NewForConfig(env.cfg)
		Expect(err).NotTo(HaveOccurred())
	})

	It("publishes bundles and a catalog without Docker, then installs, approves and uninstalls through the plugin", func(ctx SpecContext) {
		const catalogName, opName, installNS = "cli-catalog", "cli-example", "cli-example-system"
		bundles := filepath.Join(exampleOperatorDir(), "bundles")
		reg := env.registry.Addr
		bundleRef := func(v string) string { return reg + "/cli/example-operator-bundle:" + v }
		catalogRef := reg + "/cli/catalog:latest"
		catalogDir := filepath.Join(GinkgoT().TempDir(), "catalog")

		By("bundle validate + bundle push of 0.1.0 and 0.2.0 into the local registry")
		for _, v := range []string{"0.1.0", "0.2.0"} {
			Expect(mustKubectlOLMv1(ctx, "bundle", "validate", filepath.Join(bundles, v))).To(ContainSubstring("valid"))
			out := mustKubectlOLMv1(ctx, "bundle", "push", filepath.Join(bundles, v), bundleRef(v), "--insecure")
			Expect(out).To(ContainSubstring(reg + "/cli/example-operator-bundle@sha256:"))
		}

		By("bundle validate exits 1 on a misspelled install mode, with one line naming file, field and fix")
		broken := filepath.Join(GinkgoT().TempDir(), "broken")
		Expect(os.CopyFS(broken, os.DirFS(filepath.Join(bundles, "0.1.0")))).To(Succeed())
		csv := filepath.Join(broken, "manifests", "example-operator.clusterserviceversion.yaml")
		data, err := os.ReadFile(csv)
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(csv, []byte(strings.Replace(string(data), "type: OwnNamespace", "type: OwnNamespacejl", 1)), 0o644)).To(Succeed())
		out, _, err := kubectlOLMv1(ctx, "bundle", "validate", broken)
		var exitErr *exec.ExitError
		Expect(errors.As(err, &exitErr)).To(BeTrue(), "want a non-zero exit, got %v", err)
		Expect(exitErr.ExitCode()).To(Equal(1))
		Expect(out).To(ContainSubstring(`manifests/example-operator.clusterserviceversion.yaml: spec.installModes[0].type: "OwnNamespacejl" is not an install mode; fix: did you mean OwnNamespace?`))
		_, errOut, err := kubectlOLMv1(ctx, "bundle", "push", broken, bundleRef("broken"), "--insecure")
		Expect(err).To(HaveOccurred())
		Expect(errOut).To(ContainSubstring("not pushed"))

		By("catalog add-bundle 0.1.0 (read back from its image) + catalog push")
		Expect(mustKubectlOLMv1(ctx, "catalog", "add-bundle", catalogDir, bundleRef("0.1.0"), "--insecure")).To(ContainSubstring("channel stable (new channel): first entry"))
		mustKubectlOLMv1(ctx, "catalog", "push", catalogDir, catalogRef, "--insecure")
		var local struct{ Hash string }
		Expect(json.Unmarshal([]byte(mustKubectlOLMv1(ctx, "catalog", "validate", catalogDir, "-o", "json")), &local)).To(Succeed())

		By("catalog add (polling the tag every 2s) waits until catalogd serves it, with the hash catalog validate computed")
		DeferCleanup(func(ctx SpecContext) { _ = dc.Resource(catalogGVR).Delete(ctx, catalogName, metav1.DeleteOptions{}) })
		mustKubectlOLMv1(ctx, "catalog", "add", catalogName, catalogRef, "--poll", "2s", "--wait", "--timeout", "2m")
		Eventually(func(g Gomega) {
			var list struct {
				Items []struct {
					Metadata struct{ Name string }
					Status   struct{ ContentHash string }
				}
			}
			g.Expect(json.Unmarshal([]byte(mustKubectlOLMv1(ctx, "catalog", "list", "-o", "json")), &list)).To(Succeed())
			found := false
			for _, c := range list.Items {
				if c.Metadata.Name == catalogName {
					found = true
					g.Expect(c.Status.ContentHash).To(Equal(local.Hash))
				}
			}
			g.Expect(found).To(BeTrue())
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(mustKubectlOLMv1(ctx, "catalog", "list")).To(MatchRegexp(`(?m)^` + catalogName + `\s+` + regexp.QuoteMeta(catalogRef) + `\s+0\s+True\s+`))

		By("search lists the package's channel and version through CatalogMetadata")
		Eventually(func() string {
			out, _, _ := kubectlOLMv1(ctx, "search", "example-operator", "--catalog", catalogName)
			return out
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(MatchRegexp(`example-operator\s+` + catalogName + `\s+stable \(default\)\s+0\.1\.0\s+example-operator\.v0\.1\.0`))

		By("install --wait with upgradePolicy Manual reaches Installed and Healthy on 0.1.0")
		DeferCleanup(func(ctx SpecContext) { _ = dc.Resource(operatorGVR).Delete(ctx, opName, metav1.DeleteOptions{}) })
		_, errOut, err = kubectlOLMv1(ctx, "install", "example-operator", "--name", opName, "--namespace", installNS,
			"--upgrade-policy", "Manual", "--upgrade-scope", "AnyVersion", "--wait", "--timeout", "3m")
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(errOut).To(ContainSubstring("operator " + opName + ": installed example-operator.v0.1.0 0.1.0 in namespace " + installNS))
		op, err := dc.Resource(operatorGVR).Get(ctx, opName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(findCondition(op, "Installed")).To(HaveKeyWithValue("status", "True"))
		Expect(nestedString(op.Object, "status", "installedBundle", "version")).To(Equal("0.1.0"))

		By("approve without a pending upgrade is refused")
		_, errOut, err = kubectlOLMv1(ctx, "approve", opName)
		Expect(err).To(HaveOccurred())
		Expect(errOut).To(ContainSubstring("has no upgrade awaiting approval"))

		By("catalog add-bundle 0.2.0 (from its directory) computes the edge from 0.1.0; the re-pushed tag is polled")
		Expect(mustKubectlOLMv1(ctx, "catalog", "add-bundle", catalogDir, filepath.Join(bundles, "0.2.0"), "--image", bundleRef("0.2.0"))).
			To(ContainSubstring("channel stable: replaces example-operator.v0.1.0"))
		mustKubectlOLMv1(ctx, "catalog", "push", catalogDir, catalogRef, "--insecure")

		By("the Manual Operator waits for approval: status shows the offered version")
		Eventually(func() string {
			out, _, _ := kubectlOLMv1(ctx, "status")
			return out
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(MatchRegexp(opName + `\s+example-operator\s+0\.1\.0\s+.*0\.2\.0 \(AwaitingApproval\)`))

		By("approve --wait moves it to 0.2.0")
		_, errOut, err = kubectlOLMv1(ctx, "approve", opName, "--wait", "--timeout", "3m")
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(errOut).To(ContainSubstring("approved version 0.2.0"))
		op, err = dc.Resource(operatorGVR).Get(ctx, opName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(nestedString(op.Object, "status", "installedBundle", "version")).To(Equal("0.2.0"))
		Expect(nestedString(op.Object, "spec", "approvedVersion")).To(Equal("0.2.0"))
		bd, err := dc.Resource(bundleDeploymentGVRForCLI).Get(ctx, opName, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(nestedString(bd.Object, "spec", "source", "image", "ref")).To(Equal(bundleRef("0.2.0")))

		By("uninstall --wait leaves no Operator, BundleDeployment, Deployment or namespace")
		_, errOut, err = kubectlOLMv1(ctx, "uninstall", opName, "--wait", "--timeout", "3m")
		Expect(err).NotTo(HaveOccurred(), errOut)
		Expect(errOut).To(ContainSubstring("uninstalled"))
		_, err = dc.Resource(operatorGVR).Get(ctx, opName, metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Operator: %v", err)
		_, err = dc.Resource(bundleDeploymentGVRForCLI).Get(ctx, opName, metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "BundleDeployment: %v", err)
		_, err = env.clientset.CoreV1().Namespaces().Get(ctx, installNS, metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "namespace %s: %v", installNS, err)
		_, err = env.clientset.AppsV1().Deployments(installNS).Get(ctx, "example-operator", metav1.GetOptions{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Deployment: %v", err)
		Expect(mustKubectlOLMv1(ctx, "status")).NotTo(ContainSubstring(opName))
	})
})
