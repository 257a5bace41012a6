package suite

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	. "github.com/onsi/ginkgo/v2"
)

var (
	catalogGVR          = schema.GroupVersionResource{Group: "catalogd.operatorframework.io", Version: "v1alpha1", Resource: "catalogs"}
	catalogMetadataGVR  = schema.GroupVersionResource{Group: "metadata.catalogd.operatorframework.io", Version: "v1alpha1", Resource: "catalogmetadata"}
	operatorGVR         = schema.GroupVersionResource{Group: "operators.operatorframework.io", Version: "v1alpha1", Resource: "operators"}
	bundleDeploymentGVR = schema.GroupVersionResource{Group: "core.rukpak.io", Version: "v1alpha1", Resource: "bundledeployments"}
	apiServiceGVR       = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
)

// condition returns status.conditions[type=t] of an object, or nil.
func condition(obj *unstructured.Unstructured, t string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == t {
			return m
		}
	}
	return nil
}

// waitCondition waits until the cluster-scoped object name has condition t with status.
func waitCondition(ctx SpecContext, ri dynamic.NamespaceableResourceInterface, name, t, status string, timeout time.Duration) map[string]any {
	var got map[string]any
	Eventually(func(g Gomega) {
		obj, err := ri.Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		got = condition(obj, t)
		g.Expect(got).To(HaveKeyWithValue("status", status), "%s %s: conditions %v", obj.GetKind(), name, obj.Object["status"])
	}).WithContext(ctx).WithTimeout(timeout).Should(Succeed())
	return got
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podSummary says what a pod's containers are doing, for failure messages.
func podSummary(p *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s", p.Status.Phase)
	for _, cs := range p.Status.ContainerStatuses {
		fmt.Fprintf(&b, "; %s restarts=%d", cs.Name, cs.RestartCount)
		if w := cs.State.Waiting; w != nil {
			fmt.Fprintf(&b, " waiting %s: %s", w.Reason, w.Message)
		}
		if t := cs.LastTerminationState.Terminated; t != nil {
			fmt.Fprintf(&b, " last exit %d %s: %s", t.ExitCode, t.Reason, t.Message)
		}
	}
	return b.String()
}

var _ = GinkgoWriter

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	return string(b)
}

// waitNamespaceGone waits until namespace name does not exist (a spec before may have uninstalled the
// chart, and its namespace may still be terminating).
func waitNamespaceGone(ctx SpecContext, name string) {
	Eventually(func(g Gomega) {
		ns, err := env.clientset.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ns).To(BeNil(), "namespace %s is still there: %s, conditions %v", name, ns.Status.Phase, ns.Status.Conditions)
	}).WithContext(ctx).WithTimeout(2 * time.Minute).Should(Succeed())
}
