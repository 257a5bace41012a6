package controller

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/catalogd/internal/storage"
	"github.com/olmv1/olmv1/platform/step"
)

// unpackOutcome is what the unpack steps observed for the current generation.
type unpackOutcome struct {
	// reason is the Unpacked reason: Succeeded, Pending, UnpackFailed or InvalidCatalog.
	reason  string
	message string
}

// outcome is the Unpacked outcome of generation gen's unpack steps: UnpackSucceeded with what they
// did (done) when err is nil, else the Reason of the step error on Unpacked that stopped them
// (UnpackFailed for any other error) with its text.
func outcome(gen int64, done string, err error) unpackOutcome {
	if err == nil {
		return unpackOutcome{reason: catalogdv1alpha1.ReasonUnpackSucceeded, message: fmt.Sprintf("generation %d: %s", gen, done)}
	}
	reason := catalogdv1alpha1.ReasonUnpackFailed
	if se, ok := step.As(err); ok && se.Condition == catalogdv1alpha1.TypeUnpacked && se.Reason != "" {
		reason = se.Reason
	}
	return unpackOutcome{reason: reason, message: fmt.Sprintf("generation %d: %v", gen, err)}
}

// setConditions writes Unpacked and Serving from the outcome and what the store serves, and
// Paused=False. It is the one place conditions are computed for a Catalog that is not paused
// (setPaused in pause.go reports a pause and leaves the others alone).
func setConditions(cat *catalogdv1alpha1.Catalog, out unpackOutcome, served *storage.Content) {
	gen := cat.Generation
	unpacked := metav1.Condition{Type: catalogdv1alpha1.TypeUnpacked, ObservedGeneration: gen, Reason: out.reason, Message: out.message}
	if out.reason == catalogdv1alpha1.ReasonUnpackSucceeded {
		unpacked.Status = metav1.ConditionTrue
	} else {
		unpacked.Status = metav1.ConditionFalse
	}
	meta.SetStatusCondition(&cat.Status.Conditions, unpacked)

	serving := metav1.Condition{Type: catalogdv1alpha1.TypeServing, ObservedGeneration: gen}
	switch {
	case served == nil || served.Hash != cat.Status.ContentHash:
		serving.Status = metav1.ConditionFalse
		serving.Reason = catalogdv1alpha1.ReasonNotServing
		serving.Message = "no content is served yet: the catalog has not been unpacked successfully (see the Unpacked condition)"
	case cat.Status.ServedGeneration == gen:
		serving.Status = metav1.ConditionTrue
		serving.Reason = catalogdv1alpha1.ReasonServing
		serving.Message = fmt.Sprintf("serving generation %d (%s, %s): %d packages, %d channels, %d bundles",
			gen, cat.Status.ResolvedSource.String(), served.Hash, served.Counts.Packages, served.Counts.Channels, served.Counts.Bundles)
	default:
		serving.Status = metav1.ConditionTrue
		serving.Reason = catalogdv1alpha1.ReasonServingPreviousContent
		serving.Message = fmt.Sprintf("stale: serving the last good content, from generation %d (%s, %s), because generation %d is not unpacked (see the Unpacked condition)",
			cat.Status.ServedGeneration, cat.Status.ResolvedSource.String(), served.Hash, gen)
	}
	meta.SetStatusCondition(&cat.Status.Conditions, serving)
	setNotPaused(cat)
	cat.Status.ObservedGeneration = gen
	cat.Status.ShortHash = shortHash(cat.Status.ContentHash)
}

// shortHash is the first 12 hex digits of a "sha256:<hex>" content hash ("" for "").
func shortHash(h string) string {
	_, hex, found := strings.Cut(h, ":")
	if !found {
		hex = h
	}
	if len(hex) > 12 {
		hex = hex[:12]
	}
	return hex
}
