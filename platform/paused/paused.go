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

// Reasons of the Paused condition, the same for every kind.
const (
	ReasonPaused    = "Paused"
	ReasonNotPaused = "NotPaused"
)

// SetCondition sets the Paused condition of an object at generation: True while isPaused, with the
// message whilePaused gives for the pause's start (Since, rendered by Format), else False with
// notPaused. Its lastTransitionTime says when the pause began, or ended. It is the one way the
// three controllers report spec.paused.
func SetCondition(conditions *[]metav1.Condition, generation int64, isPaused bool, now time.Time, whilePaused func(since string) string, notPaused string) {
	if !isPaused {
		meta.SetStatusCondition(conditions, metav1.Condition{Type: ConditionType, Status: metav1.ConditionFalse,
			Reason: ReasonNotPaused, Message: notPaused, ObservedGeneration: generation})
		return
	}
	since := Since(*conditions, now)
	meta.SetStatusCondition(conditions, metav1.Condition{Type: ConditionType, Status: metav1.ConditionTrue,
		Reason: ReasonPaused, Message: whilePaused(Format(since)), ObservedGeneration: generation, LastTransitionTime: since})
}
