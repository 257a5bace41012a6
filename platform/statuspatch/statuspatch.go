// Package statuspatch writes the status of a reconciled object the one way the three controllers
// do: only when it changed, as one merge patch of the status subresource computed from the object
// as the reconcile read it; and (Lag) tells a reconcile that reads the object from a cache that has
// not seen the controller's own last write yet.
package statuspatch

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// IfChanged patches the status of after (an object of the kind named kind, for the error) with
// what changed since before, when status(before) and status(after) differ (equality.Semantic),
// and reports whether it patched. Most reconciles (drift, health and poll events) change nothing,
// and then no request is made.
//
// The patch is a JSON merge patch without optimistic locking. Each controller is the only writer
// of its kind's status, and every field the patch carries was computed by this reconcile, so a
// stale read cannot overwrite another writer's work; a lock would only turn every cache lag into a
// conflict and a retried reconcile. (Metadata is different: objmeta.Ensure patches under
// optimistic locking, since users and other controllers write metadata too.)
func IfChanged[T client.Object, S any](ctx context.Context, c client.Client, kind string, before, after T, status func(T) S) (bool, error) {
	if equality.Semantic.DeepEqual(status(before), status(after)) {
		return false, nil
	}
	if err := c.Status().Patch(ctx, after, client.MergeFrom(before)); err != nil {
		return false, fmt.Errorf("patching the status of %s %q: %w", kind, after.GetName(), err)
	}
	return true, nil
}
