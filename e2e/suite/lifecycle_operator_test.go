package suite

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

// Lifecycle controls of Operators (issue 21): spec.channels end to end (the head of the listed
// channel, then the edge of a channel added to the list), the API refusing channel together with
// channels, and kubectl olmv1 pause/resume setting and clearing the Paused condition.

const lcoPoll = 250 * time.Millisecond

// lcoPushGadgetBundles pushes the gadget-operator fixture's bundles of versions under repo
// (<registry>/bundles/<repo>:<version>) and returns their references by version.
func lcoPushGadgetBundles(ctx context.Context, repo string, versions ...string) map[string]string {
	refs := map[string]string{}
	for _, v := range versions {
		img, err := imagebuild.RegistryV1BundleImage(filepath.Join(env.repoRoot, "e2e", "testdata", "gadget-operator", "bundles", v))
		Expect(err).NotTo(HaveOccurred())
		refs[v] = env.registry.Addr + "/bundles/" + repo + ":" + v
		_, err = imagebuild.Push(ctx, img, refs[v], imagebuild.WithInsecure())
		Expect(err).NotTo(HaveOccurred())
	}
	return refs
}

// lcoOperatorState is what the spec reads of an Operator: its generation, the version installed
// and the status of a condition for the current generation ("" when absent or of an older one).
func lcoOperatorState(ctx context.Context, dc dynamic.Interface, name, condition string) (version, status string, err error) {
	op, err := dc.Resource(operatorGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", "", err
	}
	version, _, _ = unstructured.NestedString(op.Object, "status", "installedBundle", "version")
	if c := findCondition(op, condition); c != nil && fmt.Sprint(c["observedGeneration"]) == fmt.Sprint(op.GetGeneration()) {
		status, _ = c["status"].(string)
	}
	return version, status, nil
}

// lcoBundleDeployment reads the Operator's BundleDeployment: its image and spec.paused.
func lcoBundleDeployment(ctx context.Context, dc dynamic.Interface, name string) (uid types.UID, image string, paused bool, err error) {
	bd, err := dc.Resource(bundleDeploymentGVRForCLI).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", "", false, err
	}
	image, _, _ = unstructured.NestedString(bd.Object, "spec", "source", "image", "ref")
	paused, _, _ = unstructured.NestedBool(bd.Object, "spec", "paused")
	return bd.GetUID(), image, paused, nil
}

var _ = Describe("Operator lifecycle", Label("lifecycle"), func() {
	var dc dynamic.Interface

	BeforeEach(func() {
		var err error
		dc, err = dynamic.NewForConfig(env.cfg)
		Expect(err).NotTo(HaveOccurred())
	})

	It("installs the head of spec.channels, upgrades along the edge of a channel added to the list, refuses channel with channels, and pauses and resumes through kubectl olmv1",
		func(ctx SpecContext) {
			const (
				pkg, catalogName, opName, installNS = "gadget-operator", "lifecycle-channels", "lifecycle-channels", "lifecycle-channels"
				selectorKey                         = "e2e.olmv1.io/spec"
			)
			img := lcoPushGadgetBundles(ctx, "lifecycle-gadget", "1.0.0", "1.2.0", "2.0.0")
			// stable: 1.0.0 → 1.2.0; candidate, the default channel: 1.0.0 → 1.2.0 → 2.0.0. Only
			// candidate has an edge to 2.0.0, the highest version of the package.
			fbc := `{"schema":"olm.package","name":"gadget-operator","defaultChannel":"candidate"}
{"schema":"olm.channel","package":"gadget-operator","name":"stable","entries":[{"name":"gadget-operator.v1.0.0"},{"name":"gadget-operator.v1.2.0","replaces":"gadget-operator.v1.0.0"}]}
{"schema":"olm.channel","package":"gadget-operator","name":"candidate","entries":[{"name":"gadget-operator.v1.0.0"},{"name":"gadget-operator.v1.2.0","replaces":"gadget-operator.v1.0.0"},{"name":"gadget-operator.v2.0.0","replaces":"gadget-operator.v1.2.0"}]}
` + fbcBundle(pkg, "1.0.0", img["1.0.0"], "") + fbcBundle(pkg, "1.2.0", img["1.2.0"], "") + fbcBundle(pkg, "2.0.0", img["2.0.0"], "")
			catalogRef := pushCatalog(ctx, fbc, "lifecycle-channels", "v1")

			By("a Catalog labelled for this spec (the Operator selects only it), served")
			catalogs := dc.Resource(catalogGVR)
			_, err := catalogs.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "catalogd.operatorframework.io/v1alpha1", "kind": "Catalog",
				"metadata": map[string]any{"name": catalogName, "labels": map[string]any{selectorKey: catalogName}},
				"spec":     map[string]any{"source": map[string]any{"type": "Image", "image": map[string]any{"ref": catalogRef}}},
			}}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func(ctx SpecContext) { _ = catalogs.Delete(ctx, catalogName, metav1.DeleteOptions{}) })
			Eventually(func(g Gomega) {
				got, err := catalogs.Get(ctx, catalogName, metav1.GetOptions{})
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(findCondition(got, "Serving")).To(HaveKeyWithValue("status", "True"))
			}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(lcoPoll).Should(Succeed(), "catalog %s is served", catalogName)

			By("an Operator with channels [stable] installs stable's head 1.2.0, not 2.0.0 of the default channel")
			ops := dc.Resource(operatorGVR)
			_, err = ops.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "operators.operatorframework.io/v1alpha1", "kind": "Operator",
				"metadata": map[string]any{"name": opName},
				"spec": map[string]any{"packageName": pkg, "channels": []any{"stable"}, "installNamespace": installNS,
					"catalogSelector": map[string]any{"matchLabels": map[string]any{selectorKey: catalogName}}},
			}}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func(ctx SpecContext) {
				_ = ops.Delete(ctx, opName, metav1.DeleteOptions{})
				Eventually(func() bool {
					_, err := dc.Resource(bundleDeploymentGVRForCLI).Get(ctx, opName, metav1.GetOptions{})
					return apierrors.IsNotFound(err)
				}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(lcoPoll).Should(BeTrue(), "BundleDeployment %s is removed with its Operator", opName)
			})
			var bdUID types.UID
			Eventually(func(g Gomega) {
				version, installed, err := lcoOperatorState(ctx, dc, opName, "Installed")
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(installed).To(Equal("True"))
				g.Expect(version).To(Equal("1.2.0"))
				uid, image, _, err := lcoBundleDeployment(ctx, dc, opName)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(image).To(Equal(img["1.2.0"]))
				bdUID = uid
			}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(lcoPoll).Should(Succeed(), "Operator %s installs 1.2.0", opName)

			By("channels [stable, candidate]: the Operator upgrades along candidate's edge 1.2.0 → 2.0.0, in the same BundleDeployment")
			_, err = ops.Patch(ctx, opName, types.MergePatchType, []byte(`{"spec":{"channels":["stable","candidate"]}}`), metav1.PatchOptions{})
			Expect(err).NotTo(HaveOccurred())
			Eventually(func(g Gomega) {
				version, installed, err := lcoOperatorState(ctx, dc, opName, "Installed")
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(installed).To(Equal("True"))
				g.Expect(version).To(Equal("2.0.0"))
				uid, image, _, err := lcoBundleDeployment(ctx, dc, opName)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(image).To(Equal(img["2.0.0"]))
				g.Expect(uid).To(Equal(bdUID), "upgraded in place, not re-created")
			}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(lcoPoll).Should(Succeed(), "Operator %s upgrades to 2.0.0", opName)

			By("channel together with channels is refused by the API server, on update and on create")
			_, err = ops.Patch(ctx, opName, types.MergePatchType, []byte(`{"spec":{"channel":"stable"}}`), metav1.PatchOptions{})
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			Expect(err.Error()).To(ContainSubstring("set channel or channels, not both"))
			_, err = ops.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "operators.operatorframework.io/v1alpha1", "kind": "Operator",
				"metadata": map[string]any{"name": opName + "-both"},
				"spec":     map[string]any{"packageName": pkg, "channel": "stable", "channels": []any{"candidate"}},
			}}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			Expect(err.Error()).To(ContainSubstring("set channel or channels, not both"))

			By("kubectl olmv1 pause --wait: spec.paused, Paused=True with its message, the BundleDeployment paused")
			out, errOut, err := kubectlOLMv1(ctx, "pause", opName, "--wait", "--timeout", "2m")
			Expect(err).NotTo(HaveOccurred(), "stdout:\n%s\nstderr:\n%s", out, errOut)
			Expect(errOut).To(ContainSubstring("operator " + opName + " paused (spec.paused set to true)"))
			Expect(errOut).To(MatchRegexp(`operator %s: Paused=True: paused since \S+`, opName))
			Expect(out).To(MatchRegexp(`%s\s+true\s+Paused=True\s+paused since`, opName))
			_, paused, err := lcoOperatorState(ctx, dc, opName, "Paused")
			Expect(err).NotTo(HaveOccurred())
			Expect(paused).To(Equal("True"), "the command returned only once Paused=True was reported for the current generation")
			Eventually(func(g Gomega) {
				_, _, bdPaused, err := lcoBundleDeployment(ctx, dc, opName)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(bdPaused).To(BeTrue())
			}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(lcoPoll).Should(Succeed(), "BundleDeployment %s is paused", opName)

			By("pausing again changes nothing")
			_, errOut, err = kubectlOLMv1(ctx, "pause", opName)
			Expect(err).NotTo(HaveOccurred(), "stderr:\n%s", errOut)
			Expect(errOut).To(ContainSubstring("operator " + opName + " is already paused"))

			By("kubectl olmv1 resume --wait: Paused=False, the BundleDeployment resumed, 2.0.0 still installed")
			out, errOut, err = kubectlOLMv1(ctx, "resume", opName, "--wait", "--timeout", "2m")
			Expect(err).NotTo(HaveOccurred(), "stdout:\n%s\nstderr:\n%s", out, errOut)
			Expect(errOut).To(ContainSubstring("operator " + opName + " resumed (spec.paused set to false)"))
			Expect(out).To(MatchRegexp(`%s\s+false\s+Paused=False`, opName))
			_, paused, err = lcoOperatorState(ctx, dc, opName, "Paused")
			Expect(err).NotTo(HaveOccurred())
			Expect(paused).To(Equal("False"))
			Eventually(func(g Gomega) {
				version, installed, err := lcoOperatorState(ctx, dc, opName, "Installed")
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(installed).To(Equal("True"))
				g.Expect(version).To(Equal("2.0.0"))
				_, image, bdPaused, err := lcoBundleDeployment(ctx, dc, opName)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(bdPaused).To(BeFalse())
				g.Expect(image).To(Equal(img["2.0.0"]))
			}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(lcoPoll).Should(Succeed(), "Operator %s resumed on 2.0.0", opName)

			By("kubectl olmv1 catalog pause --wait and catalog resume --wait on the Catalog: its content stays served throughout")
			out, errOut, err = kubectlOLMv1(ctx, "catalog", "pause", catalogName, "--wait", "--timeout", "2m")
			Expect(err).NotTo(HaveOccurred(), "stdout:\n%s\nstderr:\n%s", out, errOut)
			Expect(errOut).To(MatchRegexp(`catalog %s: Paused=True: paused since \S+ \(spec.paused\).*stays served`, catalogName))
			out, errOut, err = kubectlOLMv1(ctx, "catalog", "resume", catalogName, "--wait", "--timeout", "2m")
			Expect(err).NotTo(HaveOccurred(), "stdout:\n%s\nstderr:\n%s", out, errOut)
			Expect(errOut).To(ContainSubstring("catalog " + catalogName + ": Paused=False: "))
			Expect(errOut).To(ContainSubstring("Serving=True"))
		})
})
