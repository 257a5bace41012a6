package suite

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/olmv1/olmv1/e2e/realnode/widgetbundle"
)

// holdMessage is what widget-operator writes into its Upgradeable=False condition.
const holdMessage = "widgets are being migrated to the new layout; upgrade me later"

// holdAndReleaseUpgrade is the OperatorCondition contract with a real operator (issue 34 item 1):
// widget-operator 1.1.0, installed with OPERATOR_CONDITION_NAME, is told to hold upgrades
// (WIDGET_REPORT_UPGRADEABLE and WIDGET_HOLD_UPGRADES through the Operator's spec.config) and writes Upgradeable=False on its
// OperatorCondition itself, with its own ServiceAccount; the catalog then offers 1.2.0, which the
// Operator shows as available but UpgradeBlocked, quoting the operator's message; the hold removed,
// the operator's new pod writes Upgradeable=True and the upgrade follows.
func holdAndReleaseUpgrade(ctx SpecContext, dc dynamic.Interface, fix *upgradeFixture) {
	ocName := widgetbundle.CSVName("1.1.0")
	oc := dc.Resource(operatorConditionGVR).Namespace(widgetbundle.SuggestedNamespace)
	upgradeable := func(g Gomega) map[string]any {
		obj, err := oc.Get(ctx, ocName, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		conds, _, _ := unstructured.NestedSlice(obj.Object, "spec", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == "Upgradeable" {
				return m
			}
		}
		return nil
	}

	By("the operator, told to hold upgrades, sets Upgradeable=False on its OperatorCondition " + ocName)
	report := map[string]any{"name": "WIDGET_REPORT_UPGRADEABLE", "value": "true"}
	setOperatorEnv(ctx, dc, []any{report, map[string]any{"name": "WIDGET_HOLD_UPGRADES", "value": holdMessage}})
	Eventually(func(g Gomega) {
		g.Expect(upgradeable(g)).To(And(HaveKeyWithValue("status", "False"), HaveKeyWithValue("message", holdMessage)))
	}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
	// The rollout of the hold ends with the hold's pod alone: the 1.1.0 pod before it (whose
	// Deployment template the release must not bring back) is gone.
	var holdPod *corev1.Pod
	Eventually(func(g Gomega) {
		holdPod = widgetPod(g, ctx)
		g.Expect(podEnv(holdPod)).To(HaveKeyWithValue("WIDGET_HOLD_UPGRADES", holdMessage), podSummary(holdPod))
		g.Expect(podReady(holdPod)).To(BeTrue(), podSummary(holdPod))
	}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())

	By("the catalog offers 1.2.0: available, but held with UpgradeBlocked quoting the operator")
	work := GinkgoT().TempDir()
	Expect(widgetbundle.RenderBundleSpec(work, widgetbundle.BundleSpec{Version: "1.2.0", OperatorImage: fix.widget.OperatorImages["1.1.0"], Replaces: "1.1.0"})).To(Succeed())
	opts := widgetbundle.Options{PushAddr: env.registry.Addr, ClusterAddr: env.registry.ClusterAddr}
	bundle, err := opts.PushBundle(ctx, work, "1.2.0")
	Expect(err).NotTo(HaveOccurred())
	var widgets []widgetbundle.CatalogBundle
	for _, v := range widgetbundle.Versions {
		widgets = append(widgets, widgetbundle.CatalogBundle{Version: v, Image: fix.widget.Bundles[v]})
	}
	ref, err := fix.pushCatalog(ctx, "v3", append(widgets, widgetbundle.CatalogBundle{Version: "1.2.0", Image: bundle}))
	Expect(err).NotTo(HaveOccurred())
	patch := fmt.Sprintf(`{"spec":{"source":{"image":{"ref":%q}}}}`, ref)
	_, err = dc.Resource(catalogGVR).Patch(ctx, upgradeCatalog, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	Expect(err).NotTo(HaveOccurred())
	var held map[string]any
	Eventually(func(g Gomega) {
		op, err := dc.Resource(operatorGVR).Get(ctx, widgetOperator, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		held = condition(op, "UpgradeAvailable")
		g.Expect(held).To(And(HaveKeyWithValue("status", "True"), HaveKeyWithValue("reason", "UpgradeBlocked")), "conditions %v", op.Object["status"])
		g.Expect(held["message"]).To(And(ContainSubstring("1.2.0"), ContainSubstring(holdMessage)))
		v, _, _ := unstructured.NestedString(op.Object, "status", "installedBundle", "version")
		g.Expect(v).To(Equal("1.1.0"))
	}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
	fmt.Fprintf(GinkgoWriter, "held: UpgradeAvailable=True %s: %s\n", held["reason"], held["message"])

	By("the hold removed, the operator's new pod sets Upgradeable=True and 1.2.0 is installed")
	// The True is looked for in a watch of the OperatorCondition, not by polling it: once the operator
	// writes it, 1.2.0 is installed within a second (0.3-1.3 s measured) and the 1.1.0
	// OperatorCondition deleted with it, so a poll slowed by a loaded machine could miss the True
	// altogether and then find no OperatorCondition at all (a CI run failed that way).
	current, err := oc.Get(ctx, ocName, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	watchOC := &cache.ListWatch{WatchFuncWithContext: func(wctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.FieldSelector = "metadata.name=" + ocName
		return oc.Watch(wctx, o)
	}}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	rw, err := watchtools.NewRetryWatcherWithContext(wctx, current.GetResourceVersion(), watchOC)
	Expect(err).NotTo(HaveOccurred())
	defer rw.Stop()
	released := time.Now().UTC().Truncate(time.Second)
	setOperatorEnv(ctx, dc, []any{report})
	// The release must start a pod that did not run before, so its template (reporting on, no hold)
	// is one no earlier ReplicaSet had. Removing the hold alone (as this spec first did) brought back
	// the 1.1.0 template: the Deployment scaled that old ReplicaSet up again instead of starting a
	// pod, and when the 1.1.0 pod was still running (the hold's pod not yet Ready) no pod started and
	// nothing wrote Upgradeable=True (the failed run in docs/deploy.md). The True must be newer than
	// the release.
	var seen []string
	_, err = watchtools.UntilWithoutRetry(wctx, rw, func(ev watch.Event) (bool, error) {
		obj, ok := ev.Object.(*unstructured.Unstructured)
		if !ok {
			return false, fmt.Errorf("watching OperatorCondition %s: %s event of %T", ocName, ev.Type, ev.Object)
		}
		if ev.Type == watch.Deleted {
			return false, fmt.Errorf("OperatorCondition %s was deleted before any Upgradeable=True newer than the release (%s); updates seen: %v", ocName, released.Format(time.RFC3339), seen)
		}
		conds, _, _ := unstructured.NestedSlice(obj.Object, "spec", "conditions")
		for _, c := range conds {
			m, ok := c.(map[string]any)
			if !ok || m["type"] != "Upgradeable" {
				continue
			}
			seen = append(seen, fmt.Sprintf("%s %v at %v", ev.Type, m["status"], m["lastTransitionTime"]))
			at, err := time.Parse(time.RFC3339, fmt.Sprint(m["lastTransitionTime"]))
			return m["status"] == "True" && err == nil && !at.Before(released), nil
		}
		return false, nil
	})
	if err != nil {
		pods, perr := env.clientset.CoreV1().Pods(widgetbundle.SuggestedNamespace).List(ctx, metav1.ListOptions{})
		Expect(perr).NotTo(HaveOccurred())
		op, oerr := dc.Resource(operatorGVR).Get(ctx, widgetOperator, metav1.GetOptions{})
		Expect(oerr).NotTo(HaveOccurred())
		Fail(fmt.Sprintf("no Upgradeable=True written by a pod started after the hold was removed (the hold's pod was %s): %v; updates seen: %v; widget-operator pods: %s; Operator status: %s",
			holdPod.Name, err, seen, podNames(pods.Items), mustJSON(op.Object["status"])))
	}
	cleared := time.Now()
	Eventually(func(g Gomega) {
		op, err := dc.Resource(operatorGVR).Get(ctx, widgetOperator, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		v, _, _ := unstructured.NestedString(op.Object, "status", "installedBundle", "version")
		g.Expect(v).To(Equal("1.2.0"))
	}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	fmt.Fprintf(GinkgoWriter, "1.2.0 installed %s after the operator cleared Upgradeable\n", time.Since(cleared).Round(100*time.Millisecond))
	waitCondition(ctx, dc.Resource(operatorGVR), widgetOperator, "Healthy", "True", 2*time.Minute)
}

// podEnv is the environment of pod's manager container (values only; none from references).
func podEnv(pod *corev1.Pod) map[string]string {
	env := map[string]string{}
	for _, c := range pod.Spec.Containers {
		if c.Name != "manager" {
			continue
		}
		for _, e := range c.Env {
			env[e.Name] = e.Value
		}
	}
	return env
}
