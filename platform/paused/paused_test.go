package paused

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSinceKeepsTheStartOfAPause: a pause that is already reported keeps its start; a new one (no
// condition, or Paused=False) starts now, to the second.
func TestSinceKeepsTheStartOfAPause(t *testing.T) {
	start := metav1.NewTime(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	now := time.Date(2026, 3, 1, 11, 0, 0, 500_000_000, time.UTC)
	for _, tc := range []struct {
		name  string
		conds []metav1.Condition
		want  time.Time
	}{
		{"no condition", nil, now.Truncate(time.Second)},
		{"not paused before", []metav1.Condition{{Type: ConditionType, Status: metav1.ConditionFalse, LastTransitionTime: start}}, now.Truncate(time.Second)},
		{"already paused", []metav1.Condition{{Type: ConditionType, Status: metav1.ConditionTrue, LastTransitionTime: start}}, start.Time},
	} {
		if got := Since(tc.conds, now); !got.Time.Equal(tc.want) {
			t.Errorf("%s: Since = %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := Format(start); got != "2026-03-01T10:00:00Z" {
		t.Errorf("Format = %q", got)
	}
}
