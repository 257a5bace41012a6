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

// expectPodListings checks that withPodProblems lists workload u's pods (answered with p) lists times,
// and names p's problem exactly when it listed them.
func expectPodListings(t *testing.T, u *unstructured.Unstructured, p corev1.Pod, problem string, lists int) {
	t.Helper()
	r := &countingReader{pods: []corev1.Pod{p}}
	got := withPodProblems(context.Background(), r, u, "not ready")
	if r.lists != lists {
		t.Errorf("%d pod listings, want %d", r.lists, lists)
	}
	if want := lists > 0; strings.Contains(got, problem) != want {
		t.Errorf("message %q: names the pod's problem: %v, want %v", got, !want, want)
	}
}

// TestPodsAreListedOnlyOnceTheWorkloadCountsThem: a workload whose status counts no pod (its
// controller has not created one yet: the first look after every install), or only pods of the spec
// before (its controller has not observed the current one: the first looks after an upgrade), costs
// no pod listing; once it counts one of its current spec, its pods' problem is in the message.
func TestPodsAreListedOnlyOnceTheWorkloadCountsThem(t *testing.T) {
	unready := corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "manager",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "no such image"}}}}}
	for _, tc := range []struct {
		name       string
		obj        string
		generation int64
		status     map[string]interface{}
		lists      int
	}{
		{"Deployment without status", "Deployment", 1, nil, 0},
		{"Deployment with no replicas yet", "Deployment", 1, map[string]interface{}{"observedGeneration": int64(1)}, 0},
		{"Deployment with a pod", "Deployment", 1, map[string]interface{}{"observedGeneration": int64(1), "replicas": int64(1), "unavailableReplicas": int64(1)}, 1},
		{"Deployment with a pod of the spec before (generation 2 not observed yet)", "Deployment", 2,
			map[string]interface{}{"observedGeneration": int64(1), "replicas": int64(1), "unavailableReplicas": int64(1)}, 0},
		{"StatefulSet with a pod", "StatefulSet", 1, map[string]interface{}{"observedGeneration": int64(1), "replicas": int64(1)}, 1},
		{"DaemonSet with nothing scheduled", "DaemonSet", 1, map[string]interface{}{"observedGeneration": int64(1), "desiredNumberScheduled": int64(2)}, 0},
		{"DaemonSet with pods scheduled", "DaemonSet", 1, map[string]interface{}{"observedGeneration": int64(1), "desiredNumberScheduled": int64(2), "currentNumberScheduled": int64(2)}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]interface{}{
				"apiVersion": "apps/v1", "kind": tc.obj,
				"metadata": map[string]interface{}{"name": "w", "namespace": "ns"},
				"spec":     map[string]interface{}{"selector": map[string]interface{}{"matchLabels": map[string]interface{}{"app": "w"}}},
			}}
			u.SetGeneration(tc.generation)
			if tc.status != nil {
				u.Object["status"] = tc.status
			}
			expectPodListings(t, u, pod("w-1", time.Second, unready), "ImagePullBackOff", tc.lists)
		})
	}
}

// TestPodsAreNotListedWhileTheRolloutAdvances: a Deployment whose rollout took a step within the last
// 20 s is moving, and its pods are not listed; one whose rollout has not moved for longer, or that is
// not rolling out (complete, or past its deadline), has its pods' problem in the message.
func TestPodsAreNotListedWhileTheRolloutAdvances(t *testing.T) {
	at := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	defer func(f func() time.Time) { now = f }(now)
	now = func() time.Time { return at }
	unready := corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "manager",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off"}}}}}
	for _, tc := range []struct {
		name           string
		status, reason string
		ago            time.Duration
		lists          int
	}{
		{"a replica updated 5 s ago", "True", "ReplicaSetUpdated", 5 * time.Second, 0},
		{"a new ReplicaSet created 1 s ago", "True", "NewReplicaSetCreated", time.Second, 0},
		{"no step for 25 s", "True", "ReplicaSetUpdated", 25 * time.Second, 1},
		{"clocks a minute apart", "True", "ReplicaSetUpdated", -time.Minute, 1},
		{"rollout complete a second ago (a pod crashed since)", "True", "NewReplicaSetAvailable", time.Second, 1},
		{"past its progress deadline", "False", "ProgressDeadlineExceeded", time.Second, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]interface{}{
				"apiVersion": "apps/v1", "kind": "Deployment",
				"metadata": map[string]interface{}{"name": "w", "namespace": "ns"},
				"spec":     map[string]interface{}{"selector": map[string]interface{}{"matchLabels": map[string]interface{}{"app": "w"}}},
				"status": map[string]interface{}{"replicas": int64(2), "updatedReplicas": int64(1), "unavailableReplicas": int64(1),
					"conditions": []interface{}{map[string]interface{}{"type": "Progressing", "status": tc.status, "reason": tc.reason,
						"lastUpdateTime": at.Add(-tc.ago).Format(time.RFC3339)}}},
			}}
			expectPodListings(t, u, pod("w-2", time.Second, unready), "CrashLoopBackOff", tc.lists)
		})
	}
}
