// Package paused holds what BundleDeployments, Catalogs and Operators share about spec.paused: when
// a pause began, as their Paused conditions report it.
package paused

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConditionType is the Paused condition of BundleDeployments, Catalogs and Operators.
const ConditionType = "Paused"

// Since is when the pause began: the Paused condition's lastTransitionTime when it is already
// True, else now (to the second, as condition times are stored).
func Since(conditions []metav1.Condition, now time.Time) metav1.Time {
	if c := meta.FindStatusCondition(conditions, ConditionType); c != nil && c.Status == metav1.ConditionTrue {
		return c.LastTransitionTime
	}
	return metav1.NewTime(now.Truncate(time.Second))
}

// Format renders a pause's start for a condition message (RFC 3339, UTC).
func Format(since metav1.Time) string { return since.UTC().Format(time.RFC3339) }
