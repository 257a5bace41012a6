package controller

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/catalogd/internal/storage"
)

// TestSetPausedKeepsItsStart: a pause keeps the time it began across reconciles, follows the
// generation, leaves every other condition and status field alone, and ends with Paused=False.
func TestSetPausedKeepsItsStart(t *testing.T) {
	unpacked := metav1.Condition{Type: catalogdv1alpha1.TypeUnpacked, Status: metav1.ConditionTrue, Reason: catalogdv1alpha1.ReasonUnpackSucceeded,
		Message: "generation 4: unpacked", ObservedGeneration: 4, LastTransitionTime: metav1.NewTime(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC))}
	cat := &catalogdv1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Generation: 5}, Status: catalogdv1alpha1.CatalogStatus{
		ObservedGeneration: 4, ServedGeneration: 4, ContentHash: "sha256:abc", Conditions: []metav1.Condition{unpacked}}}
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	setPaused(cat, start)
	cat.Generation = 6 // a spec change while paused
	setPaused(cat, start.Add(time.Hour))

	c := meta.FindStatusCondition(cat.Status.Conditions, catalogdv1alpha1.TypePaused)
	if c.Status != metav1.ConditionTrue || c.Reason != catalogdv1alpha1.ReasonPaused || !c.LastTransitionTime.Time.Equal(start) || c.ObservedGeneration != 6 {
		t.Errorf("Paused: %+v", c)
	}
	for _, want := range []string{"paused since 2026-03-01T10:00:00Z (spec.paused)", "nothing is unpacked or polled until spec.paused is false",
		"the content of generation 4 (sha256:abc) stays served as it is"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("Paused message %q does not say %q", c.Message, want)
		}
	}
	if u := meta.FindStatusCondition(cat.Status.Conditions, catalogdv1alpha1.TypeUnpacked); !equality.Semantic.DeepEqual(*u, unpacked) {
		t.Errorf("Unpacked changed while paused: %+v", u)
	}
	if cat.Status.ObservedGeneration != 4 || cat.Status.ServedGeneration != 4 {
		t.Errorf("observedGeneration %d, servedGeneration %d: want both left at 4", cat.Status.ObservedGeneration, cat.Status.ServedGeneration)
	}

	// Resuming: the next normal reconcile sets Paused=False.
	setConditions(cat, unpackOutcome{reason: catalogdv1alpha1.ReasonUnpackSucceeded}, &storage.Content{Hash: "sha256:abc"})
	if c := meta.FindStatusCondition(cat.Status.Conditions, catalogdv1alpha1.TypePaused); c.Status != metav1.ConditionFalse ||
		c.Reason != catalogdv1alpha1.ReasonNotPaused || c.ObservedGeneration != 6 || c.LastTransitionTime.Time.Equal(start) {
		t.Errorf("resumed: %+v", c)
	}
}

func TestSetPausedBeforeAnythingWasServed(t *testing.T) {
	cat := &catalogdv1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
	setPaused(cat, time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC))
	if c := meta.FindStatusCondition(cat.Status.Conditions, catalogdv1alpha1.TypePaused); !strings.HasSuffix(c.Message, "nothing has been unpacked yet, so nothing is served") {
		t.Errorf("Paused message %q", c.Message)
	}
	if len(cat.Status.Conditions) != 1 {
		t.Errorf("a pause before the first unpack sets only Paused: %+v", cat.Status.Conditions)
	}
}
