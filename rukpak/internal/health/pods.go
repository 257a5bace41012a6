package health

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// maxPodMessage bounds what a pod contributes to a Healthy message (a container's termination message
// may be up to 4 KiB, and the condition message must stay readable).
const maxPodMessage = 512

// withPodProblems appends to why what the workload's pods say about why they are not ready: the
// scheduler's reason, a container waiting on an image pull or in CrashLoopBackOff with its last
// termination message, or a container that runs but fails its readiness probe. The pods are read with
// reader (the API server directly: rukpak does not label them and they are not in its cache); when they
// cannot be read, why is returned as it is.
//
// A Deployment whose rollout advanced within the last rolloutAdvancedWithin is not stuck, and its pods
// are not read either: they would say at most that they are starting. That spares a pod listing at
// every step of every rollout (the steps are what brings the health checks); a rollout that stops
// advancing has its pods read at the first look after that (the re-check of an unhealthy
// BundleDeployment comes every 30 s). Nor are the pods of a workload whose controller has not
// observed its current spec yet (specObserved).
func withPodProblems(ctx context.Context, reader client.Reader, u *unstructured.Unstructured, why string) string {
	if reader == nil || !reportsPods(u) || !specObserved(u) || rolloutAdvancedRecently(u, now()) {
		return why
	}
	sel, found, _ := unstructured.NestedMap(u.Object, "spec", "selector")
	if !found {
		return why
	}
	ls := &metav1.LabelSelector{}
	if ml, ok := sel["matchLabels"].(map[string]interface{}); ok {
		ls.MatchLabels = map[string]string{}
		for k, v := range ml {
			if s, ok := v.(string); ok {
				ls.MatchLabels[k] = s
			}
		}
	}
	if exprs, ok := sel["matchExpressions"].([]interface{}); ok {
		for _, e := range exprs {
			m, _ := e.(map[string]interface{})
			req := metav1.LabelSelectorRequirement{}
			req.Key, _ = m["key"].(string)
			op, _ := m["operator"].(string)
			req.Operator = metav1.LabelSelectorOperator(op)
			vals, _ := m["values"].([]interface{})
			for _, v := range vals {
				if s, ok := v.(string); ok {
					req.Values = append(req.Values, s)
				}
			}
			ls.MatchExpressions = append(ls.MatchExpressions, req)
		}
	}
	selector, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil || selector.Empty() {
		return why
	}
	pods := &corev1.PodList{}
	if err := reader.List(ctx, pods, client.InNamespace(u.GetNamespace()), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return why
	}
	if p := PodProblem(pods.Items); p != "" {
		return why + "; " + p
	}
	return why
}

// rolloutAdvancedWithin is how recent a Deployment's last rollout step must be for its pods not to be
// read (see withPodProblems).
const rolloutAdvancedWithin = 20 * time.Second

// now is the clock of rolloutAdvancedRecently (tests set it).
var now = time.Now

// rolloutAdvancedRecently reports whether u is a Deployment in the middle of a rollout that advanced
// within rolloutAdvancedWithin of at: its Progressing condition is True with a reason the Deployment
// controller gives a rollout under way (a new ReplicaSet created or found, a replica updated, ready
// or available, an old one gone), and its lastUpdateTime, which that controller moves at every such
// step, is that recent. A lastUpdateTime further in the future than that (clocks apart) does not count.
func rolloutAdvancedRecently(u *unstructured.Unstructured, at time.Time) bool {
	if u.GetKind() != "Deployment" {
		return false
	}
	c := findCondition(u, "Progressing")
	if c == nil || c.status != "True" {
		return false
	}
	switch c.reason {
	case "NewReplicaSetCreated", "FoundNewReplicaSet", "ReplicaSetUpdated":
	default:
		return false
	}
	t, err := time.Parse(time.RFC3339, c.lastUpdateTime)
	if err != nil {
		return false
	}
	d := at.Sub(t)
	return d > -rolloutAdvancedWithin && d < rolloutAdvancedWithin
}

// specObserved reports whether u's controller has observed its current spec: status.observedGeneration
// is not behind metadata.generation. Until it has, its status and the pods it counts are those of the
// spec before (after an upgrade, a new pod template has no pod yet; a busy Deployment controller
// takes minutes at 1,000 Operators): their problems are not what the workload waits for, and the
// message already says that it waits for its controller.
func specObserved(u *unstructured.Unstructured) bool {
	return int64At(u, "status", "observedGeneration") >= u.GetGeneration()
}

// reportsPods reports whether workload u's status counts any pod: a Deployment or StatefulSet with
// status.replicas, a DaemonSet with pods scheduled. One whose controller has not created a pod yet
// (a new workload, the first look after an apply) has none to read, and its pods are not listed.
func reportsPods(u *unstructured.Unstructured) bool {
	if u.GetKind() == "DaemonSet" {
		return int64At(u, "status", "currentNumberScheduled") > 0 || int64At(u, "status", "numberMisscheduled") > 0
	}
	return int64At(u, "status", "replicas") > 0
}

// PodProblem describes the most telling problem among pods (the pods of one workload), or "" when
// none says why it is not ready. Pods are looked at newest first, so that during a rollout the new
// pods' problem is the one named.
func PodProblem(pods []corev1.Pod) string {
	sorted := append([]corev1.Pod(nil), pods...)
	sort.SliceStable(sorted, func(i, j int) bool {
		return sorted[j].CreationTimestamp.Before(&sorted[i].CreationTimestamp)
	})
	// The first pod with a container problem wins over one that is merely unscheduled or starting.
	for _, p := range sorted {
		if p.DeletionTimestamp != nil {
			continue
		}
		if msg := containerProblem(&p); msg != "" {
			return bound("pod " + p.Name + ": " + msg)
		}
	}
	for _, p := range sorted {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				return bound(fmt.Sprintf("pod %s cannot be scheduled (%s): %s", p.Name, c.Reason, c.Message))
			}
		}
	}
	return ""
}

// containerProblem says why one of the pod's containers is not ready, or "".
func containerProblem(p *corev1.Pod) string {
	statuses := append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, cs := range statuses {
		if cs.Ready {
			continue
		}
		last := ""
		if t := cs.LastTerminationState.Terminated; t != nil {
			last = "; last exit code " + fmt.Sprint(t.ExitCode)
			if t.Reason != "" {
				last += " (" + t.Reason + ")"
			}
			if m := strings.TrimSpace(t.Message); m != "" {
				last += ": " + m
			}
		}
		switch {
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "" && cs.State.Waiting.Reason != "ContainerCreating" && cs.State.Waiting.Reason != "PodInitializing":
			w := cs.State.Waiting
			s := fmt.Sprintf("container %s is waiting (%s)", cs.Name, w.Reason)
			if m := strings.TrimSpace(w.Message); m != "" {
				s += ": " + m
			}
			return s + last
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode != 0:
			t := cs.State.Terminated
			s := fmt.Sprintf("container %s exited with code %d", cs.Name, t.ExitCode)
			if t.Reason != "" {
				s += " (" + t.Reason + ")"
			}
			if m := strings.TrimSpace(t.Message); m != "" {
				s += ": " + m
			}
			return s
		case cs.State.Running != nil && cs.RestartCount > 0 && last != "":
			return fmt.Sprintf("container %s restarted %d times and is not ready%s", cs.Name, cs.RestartCount, last)
		case cs.State.Running != nil && p.Status.Phase == corev1.PodRunning && hasReadinessProbe(p, cs.Name):
			return fmt.Sprintf("container %s is running but not ready (its readiness probe has not passed)", cs.Name)
		}
	}
	return ""
}

func hasReadinessProbe(p *corev1.Pod, container string) bool {
	for _, c := range p.Spec.Containers {
		if c.Name == container {
			return c.ReadinessProbe != nil
		}
	}
	return false
}

func bound(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxPodMessage {
		return s[:maxPodMessage] + "…"
	}
	return s
}
