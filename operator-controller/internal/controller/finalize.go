package controller

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/platform/objmeta"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// Finalizer holds a deleted Operator until its deletionPolicy and collisionPolicy have reached its
// BundleDeployment (and, for Orphan, its install namespace was released). Without it, deleting an
// Operator right after setting deletionPolicy: Orphan could let the garbage collector delete the
// BundleDeployment, and everything it installed, under the old policy.
const Finalizer = "operators.operatorframework.io/pass-deletion-policy"

func (r *OperatorReconciler) ensureFinalizer(ctx context.Context, op *operatorsv1alpha1.Operator) error {
	return objmeta.Ensure(ctx, r.Client, op, "Operator", Finalizer, nil)
}

// finalize passes the deleted Operator's policies to its BundleDeployment and deletes it (rukpak then
// deletes or orphans what it installed), then lets the Operator go; the garbage collector removes the
// namespace created for the Operator, unless it was released for Orphan.
func (r *OperatorReconciler) finalize(ctx context.Context, op *operatorsv1alpha1.Operator) error {
	if !controllerutil.ContainsFinalizer(op, Finalizer) {
		return nil
	}
	bd, err := r.currentBundleDeployment(ctx, op)
	if err != nil {
		return err
	}
	// The dependency Operators it created go when nothing else needs them (the garbage collector
	// would delete them once this Operator is gone; this does not wait for it).
	if err := r.releaseDependencies(ctx, op, nil); err != nil {
		return err
	}
	// Its OperatorConditions, Roles and RoleBindings go too (the garbage collector would, later),
	// unless what it installed stays (Orphan): then the operator keeps them.
	if deletionPolicy(op) == rukpakv1alpha1.DeletionPolicyOrphan {
		if err := r.releaseOperatorConditions(ctx, op); err != nil {
			return err
		}
	} else if err := r.removeOperatorConditions(ctx, op, types.NamespacedName{}); err != nil {
		return err
	}
	if bd != nil && bd.DeletionTimestamp.IsZero() {
		if err := r.passDeletionPolicy(ctx, op, bd); err != nil {
			return err
		}
		// Delete it now rather than leave it to the garbage collector, which may not watch the
		// Operator kind yet on a fresh cluster (its discovery refresh takes up to 30 s).
		if err := r.Client.Delete(ctx, bd, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting BundleDeployment %q of the deleted Operator: %w", bd.Name, err)
		}
	}
	if err := objmeta.RemoveFinalizer(ctx, r.Client, op, "Operator", Finalizer); err != nil {
		return client.IgnoreNotFound(err)
	}
	if r.Metrics != nil {
		r.Metrics.Forget(op.Name)
	}
	return nil
}

// passDeletionPolicy gives bd op's deletionPolicy before bd is deleted with op (an Orphan set just
// before the Operator was deleted must still orphan); the install namespace is released first for
// Orphan. Nothing else of the spec is passed: a config the bundle cannot use must not block an
// uninstall.
func (r *OperatorReconciler) passDeletionPolicy(ctx context.Context, op *operatorsv1alpha1.Operator, bd *rukpakv1alpha1.BundleDeployment) error {
	if bd.Spec.DeletionPolicy == deletionPolicy(op) {
		return nil
	}
	if err := r.ensureNamespace(ctx, op, bd.Spec.InstallNamespace); err != nil {
		return err
	}
	updated := bd.DeepCopy()
	updated.Spec.DeletionPolicy = deletionPolicy(op)
	if err := r.Client.Update(ctx, updated); err != nil {
		return fmt.Errorf("passing deletionPolicy %s to BundleDeployment %q: %w", updated.Spec.DeletionPolicy, bd.Name, err)
	}
	return nil
}
