// Package objmeta writes the metadata a controller keeps on the objects it reconciles (its finalizer,
// labels it owns), the same way in every controller.
package objmeta

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// Ensure gives obj (a kind named kind, for the error) the finalizer and labels when one is missing
// or a label differs, in one merge patch under optimistic locking: a patch based on a stale read
// fails with a conflict (and the reconcile is retried) rather than overwrite what someone else just
// wrote. It does nothing when everything is in place.
func Ensure(ctx context.Context, c client.Client, obj client.Object, kind, finalizer string, labels map[string]string) error {
	missing := !controllerutil.ContainsFinalizer(obj, finalizer)
	for k, v := range labels {
		if obj.GetLabels()[k] != v {
			missing = true
		}
	}
	if !missing {
		return nil
	}
	patch := client.MergeFromWithOptions(obj.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(obj, finalizer)
	if len(labels) > 0 {
		l := obj.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		for k, v := range labels {
			l[k] = v
		}
		obj.SetLabels(l)
	}
	if err := c.Patch(ctx, obj, patch); err != nil {
		return fmt.Errorf("adding finalizer %s to %s %q: %w", finalizer, kind, obj.GetName(), err)
	}
	return nil
}

// RemoveFinalizer takes finalizer off obj (a kind named kind, for the error) in one merge patch,
// when it is there: the last step of finalizing, after which the API server may delete obj. There is
// no optimistic lock: removing a finalizer is right whatever else changed meanwhile. The error wraps
// the API server's (a NotFound means the object is gone already; callers decide what that means).
func RemoveFinalizer(ctx context.Context, c client.Client, obj client.Object, kind, finalizer string) error {
	if !controllerutil.ContainsFinalizer(obj, finalizer) {
		return nil
	}
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	controllerutil.RemoveFinalizer(obj, finalizer)
	if err := c.Patch(ctx, obj, patch); err != nil {
		return fmt.Errorf("removing finalizer %s from %s %q: %w", finalizer, kind, obj.GetName(), err)
	}
	return nil
}
