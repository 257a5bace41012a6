package health

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func pod(name string, age time.Duration, status corev1.PodStatus) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(time.Unix(1e9, 0).Add(-age))},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", ReadinessProbe: &corev1.Probe{}}}},
		Status:     status,
	}
}

func TestPodProblem(t *testing.T) {
	crashLoop := corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "manager", RestartCount: 3,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s restarting failed container=manager"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 1, Reason: "Error", Message: "widget-operator: crashing because WIDGET_CRASH=true (unset it to recover)\n"}},
	}}}
	pull := corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
		Name:  "manager",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "registry.example.test/x:v1"`}},
	}}}
	unschedulable := corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
		Message: "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."}}}
	starting := corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "manager", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}
	notReady := corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "manager", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
	ready := corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "manager", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}

	for _, tc := range []struct {
		name string
		pods []corev1.Pod
		want string
	}{
		{"crash loop with the last termination message", []corev1.Pod{pod("a", 0, crashLoop)},
			"pod a: container manager is waiting (CrashLoopBackOff): back-off 40s restarting failed container=manager; last exit code 1 (Error): widget-operator: crashing because WIDGET_CRASH=true (unset it to recover)"},
		{"image pull", []corev1.Pod{pod("a", 0, pull)}, `pod a: container manager is waiting (ImagePullBackOff): Back-off pulling image "registry.example.test/x:v1"`},
		{"unschedulable", []corev1.Pod{pod("a", 0, unschedulable)},
			"pod a cannot be scheduled (Unschedulable): 0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."},
		{"a container problem wins over a pending pod", []corev1.Pod{pod("old", time.Hour, pull), pod("new", 0, unschedulable)}, "pod old: container manager is waiting (ImagePullBackOff)"},
		{"newest pod first", []corev1.Pod{pod("old", time.Hour, pull), pod("new", 0, crashLoop)}, "pod new: container manager is waiting (CrashLoopBackOff)"},
		{"readiness probe not passed", []corev1.Pod{pod("a", 0, notReady)}, "pod a: container manager is running but not ready (its readiness probe has not passed)"},
		{"starting is no problem", []corev1.Pod{pod("a", 0, starting)}, ""},
		{"ready pods say nothing", []corev1.Pod{pod("a", 0, ready)}, ""},
		{"no pods", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PodProblem(tc.pods)
			if tc.want == "" && got != "" || !strings.HasPrefix(got, tc.want) {
				t.Fatalf("PodProblem:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestPodProblemIsBounded(t *testing.T) {
	st := corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "m",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: strings.Repeat("x ", 3000)}}}}}
	if got := PodProblem([]corev1.Pod{pod("a", 0, st)}); len(got) > maxPodMessage+len("…") {
		t.Fatalf("message of %d bytes, want at most %d", len(got), maxPodMessage)
	}
}

// countingReader counts the pod listings of withPodProblems and answers with pods.
type countingReader struct {
	client.Reader
	lists int
	pods  []corev1.Pod
}

func (c *countingReader) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	c.lists++
	list.(*corev1.PodList).Items = c.pods
	return nil
}

// TestPodsAreListedOnlyOnceTheWorkloadCountsThem: a workload whose status counts no pod (its
// controller has not created one yet: the first look after every install) costs no pod listing;
// once it counts one, its pods' problem is in the message.
func TestPodsAreListedOnlyOnceTheWorkloadCountsThem(t *testing.T) {
	unready := corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "manager",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "no such image"}}}}}
	for _, tc := range []struct {
		name   string
		obj    string
		status map[string]interface{}
		lists  int
	}{
		{"Deployment without status", "Deployment", nil, 0},
		{"Deployment with no replicas yet", "Deployment", map[string]interface{}{"observedGeneration": int64(1)}, 0},
		{"Deployment with a pod", "Deployment", map[string]interface{}{"replicas": int64(1), "unavailableReplicas": int64(1)}, 1},
		{"StatefulSet with a pod", "StatefulSet", map[string]interface{}{"replicas": int64(1)}, 1},
		{"DaemonSet with nothing scheduled", "DaemonSet", map[string]interface{}{"desiredNumberScheduled": int64(2)}, 0},
		{"DaemonSet with pods scheduled", "DaemonSet", map[string]interface{}{"desiredNumberScheduled": int64(2), "currentNumberScheduled": int64(2)}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]interface{}{
				"apiVersion": "apps/v1", "kind": tc.obj,
				"metadata": map[string]interface{}{"name": "w", "namespace": "ns"},
				"spec":     map[string]interface{}{"selector": map[string]interface{}{"matchLabels": map[string]interface{}{"app": "w"}}},
			}}
			if tc.status != nil {
				u.Object["status"] = tc.status
			}
			r := &countingReader{pods: []corev1.Pod{pod("w-1", time.Second, unready)}}
			got := withPodProblems(context.Background(), r, u, "not ready")
			if r.lists != tc.lists {
				t.Errorf("%d pod listings, want %d", r.lists, tc.lists)
			}
			if want := tc.lists > 0; strings.Contains(got, "ImagePullBackOff") != want {
				t.Errorf("message %q: names the pod's problem: %v, want %v", got, !want, want)
			}
		})
	}
}
