package suite

import (
	"context"
	"path/filepath"
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

// lcoBundleDeployment reads the Operator's BundleDeployment: its image and spec.paused.
func lcoBundleDeployment(ctx context.Context, c client.Client, name string) (uid types.UID, image string, paused bool, err error) {
	bd := &rukpakv1alpha1.BundleDeployment{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
		return "", "", false, err
	}
	if bd.Spec.Source.Image != nil {
		image = bd.Spec.Source.Image.Ref
	}
	return bd.UID, image, bd.Spec.Paused, nil
}

var _ = Describe("Operator lifecycle", Label("lifecycle"), func() {
	var (
		dc dynamic.Interface
		c  client.Client
	)

	BeforeEach(func() {
		var err error
		dc, err = dynamic.NewForConfig(env.cfg)
		Expect(err).NotTo(HaveOccurred())
		c = newClient(env.cfg)
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
			catalogRef := newFixtureCatalog().Package(pkg, "candidate").
				Channel(pkg, "stable", "1.0.0", "1.2.0").Channel(pkg, "candidate", "1.0.0", "1.2.0", "2.0.0").
				Bundle(pkg, "1.0.0", img["1.0.0"]).Bundle(pkg, "1.2.0", img["1.2.0"]).Bundle(pkg, "2.0.0", img["2.0.0"]).
				Push(ctx, "lifecycle-channels", "v1")

			By("a Catalog labelled for this spec (the Operator selects only it), served")
			catalogs := dc.Resource(catalogGVR)
			_, err := catalogs.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "catalogd.operatorframework.io/v1alpha1", "kind": "Catalog",
				"metadata": map[string]any{"name": catalogName, "labels": map[string]any{selectorKey: catalogName}},
				"spec":     map[string]any{"source": map[string]any{"type": "Image", "image": map[string]any{"ref": catalogRef}}},
			}}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(func(ctx SpecContext) { _ = catalogs.Delete(ctx, catalogName, metav1.DeleteOptions{}) })
			waitCondition(ctx, c, catalogNamed(catalogName), "Serving", "True", 2*time.Minute, anyGeneration(), pollEvery(lcoPoll), describedAs("catalog %s is served", catalogName))

			By("an Operator with channels [stable] installs stable's head 1.2.0, not 2.0.0 of the default channel")
			ops := dc.Resource(operatorGVR)
			_, err = ops.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "operators.operatorframework.io/v1alpha1", "kind": "Operator",
				"metadata": map[string]any{"name": opName},
				// upgradeScope AnyVersion: the candidate edge 1.2.0 → 2.0.0 crosses a major, which the
				// semver guard rails hold back by default.
				"spec": map[string]any{"packageName": pkg, "channels": []any{"stable"}, "installNamespace": installNS, "upgradeScope": "AnyVersion",
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
			op := operatorNamed(opName)
			waitCondition(ctx, c, op, "Installed", "True", 2*time.Minute, pollEvery(lcoPoll), describedAs("Operator %s installs 1.2.0", opName), andAlso(func(g Gomega) {
				g.Expect(nestedString(op.Object, "status", "installedBundle", "version")).To(Equal("1.2.0"))
				uid, image, _, err := lcoBundleDeployment(ctx, c, opName)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(image).To(Equal(img["1.2.0"]))
				bdUID = uid
			}))

			By("channels [stable, candidate]: the Operator upgrades along candidate's edge 1.2.0 → 2.0.0, in the same BundleDeployment")
			_, err = ops.Patch(ctx, opName, types.MergePatchType, []byte(`{"spec":{"channels":["stable","candidate"]}}`), metav1.PatchOptions{})
			Expect(err).NotTo(HaveOccurred())
			waitCondition(ctx, c, op, "Installed", "True", 2*time.Minute, pollEvery(lcoPoll), describedAs("Operator %s upgrades to 2.0.0", opName), andAlso(func(g Gomega) {
				g.Expect(nestedString(op.Object, "status", "installedBundle", "version")).To(Equal("2.0.0"))
				uid, image, _, err := lcoBundleDeployment(ctx, c, opName)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(image).To(Equal(img["2.0.0"]))
				g.Expect(uid).To(Equal(bdUID), "upgraded in place, not re-created")
			}))

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
			Expect(c.Get(ctx, client.ObjectKeyFromObject(op), op)).To(Succeed())
			Expect(findCondition(op, "Paused")).To(And(HaveKeyWithValue("status", "True"), HaveKeyWithValue("observedGeneration", BeEquivalentTo(op.GetGeneration()))),
				"the command returned only once Paused=True was reported for the current generation")
			Eventually(func(g Gomega) {
				_, _, bdPaused, err := lcoBundleDeployment(ctx, c, opName)
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
			Expect(c.Get(ctx, client.ObjectKeyFromObject(op), op)).To(Succeed())
			Expect(findCondition(op, "Paused")).To(And(HaveKeyWithValue("status", "False"), HaveKeyWithValue("observedGeneration", BeEquivalentTo(op.GetGeneration()))))
			waitCondition(ctx, c, op, "Installed", "True", time.Minute, pollEvery(lcoPoll), describedAs("Operator %s resumed on 2.0.0", opName), andAlso(func(g Gomega) {
				g.Expect(nestedString(op.Object, "status", "installedBundle", "version")).To(Equal("2.0.0"))
				_, image, bdPaused, err := lcoBundleDeployment(ctx, c, opName)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(bdPaused).To(BeFalse())
				g.Expect(image).To(Equal(img["2.0.0"]))
			}))

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
