package health

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The rollout rules follow `kubectl rollout status`: a workload is healthy only when its controller
// has observed the current generation (checked by Evaluate), every replica runs the current template,
// no replica of an older template is left, and every replica is available. An upgrade whose new pods
// never become ready is therefore not healthy, even while the old pods keep the workload available.

func int64At(u *unstructured.Unstructured, fields ...string) int64 {
	v, _, _ := unstructured.NestedInt64(u.Object, fields...)
	return v
}

func specReplicas(u *unstructured.Unstructured) int64 {
	if r, ok, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); ok {
		return r
	}
	return 1
}

// evaluateDeploymentRollout is the Deployment rule once Available is True.
func evaluateDeploymentRollout(u *unstructured.Unstructured) (bool, string) {
	want := specReplicas(u)
	replicas, updated, available := int64At(u, "status", "replicas"), int64At(u, "status", "updatedReplicas"), int64At(u, "status", "availableReplicas")
	switch {
	case updated < want:
		return false, withWorkloadFailures(u, fmt.Sprintf("rollout in progress: %d of %d replicas updated", updated, want))
	case replicas > updated:
		return false, withWorkloadFailures(u, fmt.Sprintf("rollout in progress: %d of %d replicas updated, %d old replicas pending termination", updated, want, replicas-updated))
	case available < want:
		return false, withWorkloadFailures(u, fmt.Sprintf("rollout in progress: %d of %d updated replicas available", available, want))
	}
	return true, ""
}

// evaluateStatefulSet: every replica ready and updated and, with the RollingUpdate strategy, the
// current revision equal to the update revision.
func evaluateStatefulSet(u *unstructured.Unstructured) (bool, string) {
	want := specReplicas(u)
	ready, updated := int64At(u, "status", "readyReplicas"), int64At(u, "status", "updatedReplicas")
	if ready < want || updated < want {
		return false, withWorkloadFailures(u, fmt.Sprintf("%d of %d replicas ready, %d updated", ready, want, updated))
	}
	strategy, _, _ := unstructured.NestedString(u.Object, "spec", "updateStrategy", "type")
	current, _, _ := unstructured.NestedString(u.Object, "status", "currentRevision")
	update, _, _ := unstructured.NestedString(u.Object, "status", "updateRevision")
	if strategy != "OnDelete" && update != "" && current != update {
		return false, withWorkloadFailures(u, fmt.Sprintf("rollout in progress: current revision %s, update revision %s", current, update))
	}
	return true, ""
}

// evaluateDaemonSet: every scheduled pod updated, ready and available, and none where it should not run.
func evaluateDaemonSet(u *unstructured.Unstructured) (bool, string) {
	desired := int64At(u, "status", "desiredNumberScheduled")
	ready, updated := int64At(u, "status", "numberReady"), int64At(u, "status", "updatedNumberScheduled")
	if ready < desired || updated < desired {
		return false, withWorkloadFailures(u, fmt.Sprintf("%d of %d pods ready, %d updated", ready, desired, updated))
	}
	if _, found, _ := unstructured.NestedInt64(u.Object, "status", "numberAvailable"); found {
		if available := int64At(u, "status", "numberAvailable"); available < desired {
			return false, withWorkloadFailures(u, fmt.Sprintf("rollout in progress: %d of %d pods available", available, desired))
		}
	}
	if mis := int64At(u, "status", "numberMisscheduled"); mis > 0 {
		return false, fmt.Sprintf("%d pods run on nodes they should not run on", mis)
	}
	return true, ""
}
