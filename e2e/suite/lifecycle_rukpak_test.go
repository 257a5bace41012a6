package suite

import (
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

// Lifecycle controls of BundleDeployments (issue 21): pause, progress deadline with Rollback, drift
// correction that leaves other field managers' fields alone, and a Helm chart following the
// ConfigMap its valuesFrom names, against the local control plane (kwok nodes make schedulable
// Deployments Available).

// lcValuesPrompt bounds how long a change of a valuesFrom ConfigMap may take to become a revision:
// much less than rukpak's 30 s re-check, so only the watch of the ConfigMap (controller.ValuesWatch)
// can meet it.
const lcValuesPrompt = 15 * time.Second

// lcConfigMap is a plain ConfigMap manifest.
func lcConfigMap(name, value string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n  value: " + value + "\n"
}

// lcUnschedulable is a Deployment whose pods no node accepts: it never becomes Available.
const lcUnschedulable = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: stuck
spec:
  replicas: 1
  selector: {matchLabels: {app: stuck}}
  template:
    metadata: {labels: {app: stuck}}
    spec:
      nodeSelector: {e2e.olmv1.io/no-such-node: "true"}
      containers:
      - {name: stuck, image: registry.invalid/stuck:1}
`

// lcWebNoReplicas is a Deployment that leaves replicas to others.
const lcWebNoReplicas = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: registry.invalid/web:1}
`

var _ = Describe("rukpak BundleDeployment lifecycle", Label("lifecycle"), func() {
	var c client.Client

	BeforeEach(func() {
		c = newClient(env.cfg)
	})

	newBD := func(ctx SpecContext, name, ns, ref string, mutate func(*rukpakv1alpha1.BundleDeployment)) *rukpakv1alpha1.BundleDeployment {
		bd := &rukpakv1alpha1.BundleDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: rukpakv1alpha1.BundleDeploymentSpec{
				ProvisionerClassName: rukpakv1alpha1.ProvisionerPlain, InstallNamespace: ns, Source: bdImageSource(ref),
			},
		}
		if mutate != nil {
			mutate(bd)
		}
		Expect(c.Create(ctx, bd)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			_ = c.Delete(ctx, bd)
			bdExpectNothingLeft(ctx, c, name, ns)
		})
		return bd
	}
	update := func(ctx SpecContext, name string, mutate func(*rukpakv1alpha1.BundleDeployment)) {
		Eventually(func() error {
			bd := &rukpakv1alpha1.BundleDeployment{}
			if err := c.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
				return err
			}
			mutate(bd)
			return c.Update(ctx, bd)
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	}
	getCM := func(ctx SpecContext, ns, name string) map[string]string {
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
			return nil
		}
		return cm.Data
	}

	It("keeps a paused BundleDeployment on its revision while its source changes, and resumes", func(ctx SpecContext) {
		const name = "e2e-lifecycle-paused"
		ns := createNamespace(ctx, "e2e-lc-paused-")
		ref1 := bdPushPlainBundle(ctx, "lifecycle-paused-v1", map[string]string{"a.yaml": lcConfigMap("a", "one")})
		ref2 := bdPushPlainBundle(ctx, "lifecycle-paused-v2", map[string]string{"a.yaml": lcConfigMap("a", "two")})
		newBD(ctx, name, ns, ref1, nil)
		waitCondition(ctx, c, bundleDeploymentNamed(name), rukpakv1alpha1.TypeHealthy, "True", 2*time.Minute, anyGeneration())

		By("pausing it, then changing its source")
		update(ctx, name, func(bd *rukpakv1alpha1.BundleDeployment) { bd.Spec.Paused = true })
		got := waitCondition(ctx, c, bundleDeploymentNamed(name), rukpakv1alpha1.TypePaused, "True", time.Minute, anyGeneration())
		Expect(meta.FindStatusCondition(got.Status.Conditions, rukpakv1alpha1.TypePaused).Message).To(ContainSubstring("paused since"))
		update(ctx, name, func(bd *rukpakv1alpha1.BundleDeployment) { bd.Spec.Source = bdImageSource(ref2) })
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKey{Name: name}, got)).To(Succeed())
			cond := meta.FindStatusCondition(got.Status.Conditions, rukpakv1alpha1.TypePaused)
			g.Expect(cond.ObservedGeneration).To(Equal(got.Generation), "the paused reconcile of the new source")
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		Expect(got.Status.InstalledRevision).To(Equal(int64(1)))
		Expect(getCM(ctx, ns, "a")).To(HaveKeyWithValue("value", "one"))

		By("resuming: revision 2 is installed")
		update(ctx, name, func(bd *rukpakv1alpha1.BundleDeployment) { bd.Spec.Paused = false })
		waitCondition(ctx, c, got, rukpakv1alpha1.TypePaused, "False", 2*time.Minute, anyGeneration(), andAlso(func(g Gomega) {
			g.Expect(got.Status.InstalledRevision).To(Equal(int64(2)))
		}))
		Expect(getCM(ctx, ns, "a")).To(HaveKeyWithValue("value", "two"))
	})

	It("rolls a failing upgrade back to the healthy revision within the deadline plus 30 s", func(ctx SpecContext) {
		const name = "e2e-lifecycle-rollback"
		const deadline = 20 * time.Second
		ns := createNamespace(ctx, "e2e-lc-rollback-")
		ref1 := bdPushPlainBundle(ctx, "lifecycle-rollback-v1", map[string]string{"a.yaml": lcConfigMap("a", "one"), "web.yaml": bdWebDeployment})
		ref2 := bdPushPlainBundle(ctx, "lifecycle-rollback-v2", map[string]string{"a.yaml": lcConfigMap("a", "two"), "web.yaml": bdWebDeployment, "stuck.yaml": lcUnschedulable})
		newBD(ctx, name, ns, ref1, func(bd *rukpakv1alpha1.BundleDeployment) {
			bd.Spec.ProgressDeadline = &metav1.Duration{Duration: deadline}
			bd.Spec.UpgradeFailurePolicy = rukpakv1alpha1.UpgradeFailurePolicyRollback
		})
		got := &rukpakv1alpha1.BundleDeployment{}
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKey{Name: name}, got)).To(Succeed())
			g.Expect(got.Status.History).NotTo(BeEmpty())
			g.Expect(got.Status.History[0].HealthyAt).NotTo(BeNil(), "revision 1 recorded Healthy")
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())

		By("upgrading to a revision whose Deployment never becomes Available")
		update(ctx, name, func(bd *rukpakv1alpha1.BundleDeployment) { bd.Spec.Source = bdImageSource(ref2) })
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKey{Name: name}, got)).To(Succeed())
			g.Expect(got.Status.InstalledRevision).To(Equal(int64(2)))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		upgraded := time.Now()

		By("rolling back to revision 1's content as revision 3")
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKey{Name: name}, got)).To(Succeed())
			g.Expect(got.Status.InstalledRevision).To(Equal(int64(3)), "conditions: %v", got.Status.Conditions)
		}).WithContext(ctx).WithTimeout(deadline + 30*time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
		GinkgoWriter.Printf("rolled back %s after the upgrade (progressDeadline %s)\n", time.Since(upgraded).Round(time.Second), deadline)
		Expect(got.Status.History[0].Description).To(ContainSubstring("rollback to revision 1: revision 2 was not Healthy within the progress deadline"))
		Expect(got.Status.History[0].ContentHash).To(Equal(got.Status.History[2].ContentHash))
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "stuck"}, &appsv1.Deployment{})).To(Satisfy(apierrors.IsNotFound))
			g.Expect(getCM(ctx, ns, "a")).To(HaveKeyWithValue("value", "one"))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		got = waitCondition(ctx, c, bundleDeploymentNamed(name), rukpakv1alpha1.TypeHealthy, "True", 2*time.Minute, anyGeneration())
		installed := meta.FindStatusCondition(got.Status.Conditions, rukpakv1alpha1.TypeInstalled)
		Expect(installed.Reason).To(Equal(rukpakv1alpha1.ReasonUpgradeFailed))
		Expect(installed.Message).To(ContainSubstring("core.rukpak.io/retry-upgrade"))
	})

	It("keeps fields other managers set when it reverts drift", func(ctx SpecContext) {
		const name = "e2e-lifecycle-drift"
		ns := createNamespace(ctx, "e2e-lc-drift-")
		ref := bdPushPlainBundle(ctx, "lifecycle-drift-v1", map[string]string{"web.yaml": lcWebNoReplicas})
		newBD(ctx, name, ns, ref, nil)
		waitCondition(ctx, c, bundleDeploymentNamed(name), rukpakv1alpha1.TypeHealthy, "True", 2*time.Minute, anyGeneration())

		By("kubectl rollout restart, a scale by another manager, and an image change by a third")
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
		restartedAt := time.Now().UTC().Format(time.RFC3339)
		Expect(c.Patch(ctx, d, client.RawPatch(types.StrategicMergePatchType,
			[]byte(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"`+restartedAt+`"}}}}}`)),
			client.FieldOwner("kubectl-rollout"))).To(Succeed())
		Expect(c.SubResource("scale").Update(ctx, d, client.WithSubResourceBody(&autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: 2}}),
			client.FieldOwner("hpa-controller"))).To(Succeed())
		Expect(c.Patch(ctx, d, client.RawPatch(types.StrategicMergePatchType,
			[]byte(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"registry.invalid/web:hand-edited"}]}}}}`)),
			client.FieldOwner("intruder"))).To(Succeed())

		By("restoring the image the bundle sets, keeping the annotation and the replicas")
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d)).To(Succeed())
			g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.invalid/web:1"))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		Expect(d.Spec.Template.Annotations).To(HaveKeyWithValue("kubectl.kubernetes.io/restartedAt", restartedAt))
		Expect(d.Spec.Replicas).To(HaveValue(Equal(int32(2))))
		got := &rukpakv1alpha1.BundleDeployment{}
		Expect(c.Get(ctx, client.ObjectKey{Name: name}, got)).To(Succeed())
		Expect(got.Status.InstalledRevision).To(Equal(int64(1)))
	})

	It("installs a new revision promptly when only a valuesFrom ConfigMap changes", func(ctx SpecContext) {
		const name = "e2e-lifecycle-values"
		ns := createNamespace(ctx, "e2e-lc-values-")
		img, err := imagebuild.HelmChartArtifact(filepath.Join(env.repoRoot, "e2e", "testdata", "helm-greeter"))
		Expect(err).NotTo(HaveOccurred())
		ref := env.registry.Addr + "/charts/greeter-lifecycle:0.1.0"
		_, err = imagebuild.Push(ctx, img, ref, imagebuild.WithInsecure())
		Expect(err).NotTo(HaveOccurred())
		values := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "greeter-values"},
			Data:       map[string]string{"values.yaml": "greeting: first\n"},
		}
		Expect(c.Create(ctx, values)).To(Succeed())
		newBD(ctx, name, ns, ref, func(bd *rukpakv1alpha1.BundleDeployment) {
			bd.Spec.ProvisionerClassName = rukpakv1alpha1.ProvisionerHelm
			bd.Spec.Config = &rukpakv1alpha1.BundleConfig{
				ValuesFrom: []rukpakv1alpha1.ValuesReference{{Kind: "ConfigMap", Name: values.Name}},
			}
		})
		got := waitCondition(ctx, c, bundleDeploymentNamed(name), rukpakv1alpha1.TypeHealthy, "True", 2*time.Minute, anyGeneration())
		Expect(got.Status.InstalledRevision).To(Equal(int64(1)))
		Expect(got.Status.History).To(HaveLen(1))
		first := got.Status.History[0]
		Expect(first.ChartVersion).To(Equal("0.1.0"))
		Expect(first.ValuesHash).To(HavePrefix("sha256:"))
		Expect(getCM(ctx, ns, name+"-settings")).To(HaveKeyWithValue("greeting", "first"))
		generation := got.Generation

		By("changing the ConfigMap, and nothing else")
		Expect(c.Get(ctx, client.ObjectKeyFromObject(values), values)).To(Succeed())
		values.Data["values.yaml"] = "greeting: second\n"
		Expect(c.Update(ctx, values)).To(Succeed())
		changed := time.Now()
		Eventually(func(g Gomega) {
			g.Expect(c.Get(ctx, client.ObjectKey{Name: name}, got)).To(Succeed())
			g.Expect(got.Status.InstalledRevision).To(Equal(int64(2)), "Installed: %v", meta.FindStatusCondition(got.Status.Conditions, rukpakv1alpha1.TypeInstalled))
			g.Expect(getCM(ctx, ns, name+"-settings")).To(HaveKeyWithValue("greeting", "second"))
		}).WithContext(ctx).WithTimeout(lcValuesPrompt).WithPolling(100 * time.Millisecond).Should(Succeed())
		GinkgoWriter.Printf("valuesFrom ConfigMap changed: revision 2 installed with the new value %s later (bound %s, re-check 30s)\n",
			time.Since(changed).Round(10*time.Millisecond), lcValuesPrompt)

		Expect(got.Generation).To(Equal(generation), "the BundleDeployment itself did not change")
		Expect(got.Status.History).To(HaveLen(2))
		newest := got.Status.History[0]
		Expect(newest.Revision).To(Equal(int64(2)))
		Expect(newest.ChartVersion).To(Equal("0.1.0"))
		Expect(newest.ValuesHash).To(HavePrefix("sha256:"))
		Expect(newest.ValuesHash).NotTo(Equal(first.ValuesHash), "the new values are a new valuesHash")
		Expect(got.Status.History[1].ValuesHash).To(Equal(first.ValuesHash))
		waitCondition(ctx, c, bundleDeploymentNamed(name), rukpakv1alpha1.TypeHealthy, "True", time.Minute, anyGeneration())
	})
})
