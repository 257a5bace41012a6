package controller

// Finalizing: a BundleDeployment carries Finalizer while it exists, and deleting it uninstalls what
// it applied (or, with deletionPolicy Orphan, leaves it in place without rukpak's ownership labels),
// removes its unpacked content and forgets what rukpak remembers of it.

import (
	"context"
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/olmv1/olmv1/platform/conditionevents"
	"github.com/olmv1/olmv1/platform/objmeta"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

func (r *BundleDeploymentReconciler) ensureFinalizer(ctx context.Context, bd *rukpakv1alpha1.BundleDeployment) error {
	return objmeta.Ensure(ctx, r.Client, bd, "BundleDeployment", Finalizer, nil)
}

func (r *BundleDeploymentReconciler) finalize(ctx context.Context, bd *rukpakv1alpha1.BundleDeployment) error {
	if !controllerutil.ContainsFinalizer(bd, Finalizer) {
		return nil
	}
	orphan := bd.Spec.DeletionPolicy == rukpakv1alpha1.DeletionPolicyOrphan
	revs, err := r.Engine.History(bd.Name)
	if err != nil {
		conditionevents.Warning(r.Recorder, bd, "UninstallFailed", "Uninstall", fmt.Sprintf("reading the revision history: %v", err))
		return fmt.Errorf("reading the revision history of BundleDeployment %q: %w", bd.Name, err)
	}
	leftAlone, err := r.Engine.Uninstall(ctx, bd.Name, bd.Annotations[DeleteCRDsAnnotation] == "true", orphan)
	if len(leftAlone) > 0 {
		conditionevents.Normal(r.Recorder, bd, "LeftAlone", "Uninstall",
			fmt.Sprintf("left %d object(s) in place that another owner holds now: %s", len(leftAlone), keyList(leftAlone)))
	}
	if err != nil {
		conditionevents.Warning(r.Recorder, bd, "UninstallFailed", "Uninstall", fmt.Sprintf("uninstalling: %v", err))
		return fmt.Errorf("uninstalling BundleDeployment %q: %w", bd.Name, err)
	}
	if orphan && len(revs) > 0 { // once, not again on the reconcile that sees the finalizer go
		conditionevents.Normal(r.Recorder, bd, "Orphaned", "Orphan", "deletionPolicy Orphan: every installed object was left in place without rukpak's ownership labels")
	}
	if err := r.Unpacker.Cleanup(ctx, unpackKey(bd)); err != nil {
		return fmt.Errorf("removing the unpacked content of BundleDeployment %q: %w", bd.Name, err)
	}
	if err := objmeta.RemoveFinalizer(ctx, r.Client, bd, "BundleDeployment", Finalizer); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.Metrics.forget(bd.Name)
	r.installed.Delete(bd.Name)
	r.healthyMarked.Delete(bd.Name)
	if r.ValuesWatch != nil {
		r.ValuesWatch.Forget(bd.Name)
	}
	return nil
}

// keyList names at most five objects.
func keyList(keys []string) string {
	var names []string
	for i, k := range keys {
		if i == 5 {
			names = append(names, fmt.Sprintf("and %d more", len(keys)-5))
			break
		}
		names = append(names, k)
	}
	return strings.Join(names, ", ")
}
