package paused

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A pause keeps its start while it lasts, and Paused=False says when it ended.
func TestSetCondition(t *testing.T) {
	var conds []metav1.Condition
	start := time.Date(2026, 12, 1, 10, 0, 0, 500, time.UTC)
	msg := func(since string) string { return "paused since " + since }
	SetCondition(&conds, 1, true, start, msg, "not paused")
	SetCondition(&conds, 2, true, start.Add(time.Hour), msg, "not paused")
	c := meta.FindStatusCondition(conds, ConditionType)
	if c.Status != metav1.ConditionTrue || c.Reason != ReasonPaused || c.Message != "paused since 2026-12-01T10:00:00Z" || c.ObservedGeneration != 2 ||
		!c.LastTransitionTime.Time.Equal(start.Truncate(time.Second)) {
		t.Fatalf("paused: %+v", c)
	}
	SetCondition(&conds, 3, false, start.Add(2*time.Hour), msg, "not paused")
	c = meta.FindStatusCondition(conds, ConditionType)
	if c.Status != metav1.ConditionFalse || c.Reason != ReasonNotPaused || c.Message != "not paused" || c.ObservedGeneration != 3 {
		t.Fatalf("not paused: %+v", c)
	}
}
