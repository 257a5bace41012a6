package controller

import (
	"context"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/platform/paused"
)

// Pausing. While spec.paused is true a reconcile only reports the pause: spec.source is not
// resolved, nothing is unpacked, parsed or stored, and no poll is scheduled. Spec changes (a new
// image ref, a new priority) and source changes (a re-pushed tag, an edited ConfigMap, a new
// commit) still trigger reconciles, which end here; nothing is recorded for later: resuming
// resolves the source again and compares it with status.resolvedSource, so whatever changed
// during the pause is unpacked at once then. Unpacked, Serving, status.observedGeneration and the
// fields describing the served content keep what they said when the pause began; only the Paused
// condition follows metadata.generation.
//
// The content the status names stays served. Standby replicas (replica.Syncer) keep loading
// exactly that content, which a pause does not stop: it is not a new unpack of the spec but the
// same content the leader serves. For the same reason the leader itself loads it again when its
// store does not hold it (a restart on an empty store during a pause), the way the standbys do.
//
// Deletion is not paused: deleting a paused Catalog removes its content (finalize runs before this
// step), because a finalizer that waits for a resume would hold the deletion forever.

// reconcilePaused reports the pause, makes sure the content the status names is served, and stops.
func (r *CatalogReconciler) reconcilePaused(ctx context.Context, cat *catalogdv1alpha1.Catalog) (ctrl.Result, error) {
	before := cat.DeepCopy()
	setPaused(cat, r.Now())
	loadErr := r.loadWhatStatusNames(ctx, cat)
	if loadErr != nil {
		// Retried with the controller's backoff, as a standby replica retries it.
		log.FromContext(ctx).Info("paused: the content the status names cannot be loaded again, retrying with backoff",
			"hash", cat.Status.ContentHash, "source", cat.Status.ResolvedSource.String(), "error", loadErr.Error())
	}
	if err := r.patchStatus(ctx, before, cat); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, loadErr
}

// setPaused sets Paused=True; the pause began at the condition's lastTransitionTime when it is
// already True, else now.
func setPaused(cat *catalogdv1alpha1.Catalog, now time.Time) {
	paused.SetCondition(&cat.Status.Conditions, cat.Generation, true, now, func(since string) string {
		msg := fmt.Sprintf("paused since %s (spec.paused): nothing is unpacked or polled until spec.paused is false", since)
		if cat.Status.ContentHash != "" {
			return msg + fmt.Sprintf("; the content of generation %d (%s) stays served as it is", cat.Status.ServedGeneration, cat.Status.ContentHash)
		}
		return msg + "; nothing has been unpacked yet, so nothing is served"
	}, "")
}

// setNotPaused sets Paused=False; its lastTransitionTime says when a pause ended.
func setNotPaused(cat *catalogdv1alpha1.Catalog) {
	paused.SetCondition(&cat.Status.Conditions, cat.Generation, false, time.Time{}, nil, "not paused: the Catalog is reconciled")
}
