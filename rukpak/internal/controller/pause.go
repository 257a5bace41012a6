package controller

import (
	"context"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/olmv1/olmv1/platform/paused"
	"github.com/olmv1/olmv1/platform/statuspatch"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// Pausing. While spec.paused is true a reconcile only reports the pause: nothing is unpacked,
// rendered, applied, pruned or health-checked, drift is not reverted and the progress deadline is
// not evaluated. Watch events of applied objects still arrive and end here. The other conditions
// keep what they said when the pause began (their observedGeneration shows how old they are).
//
// Deletion is not paused: deleting a paused BundleDeployment uninstalls it (finalize runs before
// this step), because a finalizer that waits for a resume would hold the deletion, and the
// namespace it may be in, forever; deletionPolicy Orphan keeps the objects instead.

// reconcilePaused reports the pause and stops.
func (r *BundleDeploymentReconciler) reconcilePaused(ctx context.Context, bd *rukpakv1alpha1.BundleDeployment) (ctrl.Result, error) {
	r.triggers.take(bd.Name) // events that arrived while paused do not make the next reconcile health-only
	orig := bd.DeepCopy()
	setPaused(bd, time.Now())
	r.Metrics.observe(bd)
	patched, err := statuspatch.IfChanged(ctx, r.Client, "BundleDeployment", orig, bd, bundleDeploymentStatus)
	if err != nil {
		return ctrl.Result{}, err
	}
	if patched {
		// Only Paused changes here: its transition gives the Normal Paused Event it gives on Catalogs
		// and Operators ("Paused=True: paused since …").
		eventPolicy.Record(r.Recorder, bd, orig.Status.Conditions, bd.Status.Conditions)
	}
	return ctrl.Result{}, nil
}

// setPaused sets Paused=True; the pause began at the condition's lastTransitionTime when it is
// already True, else now.
func setPaused(bd *rukpakv1alpha1.BundleDeployment, now time.Time) {
	// Status read (6): the Paused condition's lastTransitionTime is when the pause began; the
	// installed revision only goes into the message (bookkeeping).
	paused.SetCondition(&bd.Status.Conditions, bd.Generation, true, now, func(since string) string {
		msg := fmt.Sprintf("paused since %s (spec.paused): nothing is unpacked, applied, pruned or health-checked until spec.paused is false", since)
		if bd.Status.InstalledRevision > 0 {
			msg += fmt.Sprintf("; revision %d stays installed as it is", bd.Status.InstalledRevision)
		}
		return msg
	}, "")
}

// setNotPaused sets Paused=False; its lastTransitionTime says when a pause ended.
func setNotPaused(bd *rukpakv1alpha1.BundleDeployment) {
	paused.SetCondition(&bd.Status.Conditions, bd.Generation, false, time.Time{}, nil, "not paused: the BundleDeployment is reconciled")
}
