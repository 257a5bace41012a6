package controller

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// Install namespaces. A namespace operator-controller creates for an Operator carries the owner
// labels and an ownerReference to it, so the garbage collector removes it with the last Operator
// that owns it; a namespace that existed before is never touched.
//
// With deletionPolicy Orphan nothing installed in the namespace may disappear with the Operator, so
// the namespace must not either: operator-controller releases it (removes every Operator
// ownerReference and the owner labels) before it passes Orphan on to the BundleDeployment. From then
// on it is an ordinary namespace that OLM never deletes, whatever later Operators in it say: it
// holds objects that nobody owns any more.

// desiredNamespace is the Namespace created for op when its install namespace does not exist: owned
// by op, or, with deletionPolicy Orphan, by nobody.
func desiredNamespace(op *operatorsv1alpha1.Operator, name string) *corev1.Namespace {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if deletionPolicy(op) != rukpakv1alpha1.DeletionPolicyOrphan {
		ns.Labels, ns.OwnerReferences = ownerLabels(op), []metav1.OwnerReference{ownerRef(op)}
	}
	return ns
}

// ensureNamespaceUnlessInstalled is ensureNamespace, skipped when op's BundleDeployment is installed
// in ns with op's deletionPolicy: the namespace existed then, and this Operator was made one of its
// owners (or, for Orphan, released it) before the BundleDeployment was written. That keeps the
// reconciles that change nothing (a catalog update re-reconciles every Operator) free of API
// requests. If the namespace is deleted anyway, rukpak reports the BundleDeployment not Installed,
// which brings the check back.
func (r *OperatorReconciler) ensureNamespaceUnlessInstalled(ctx context.Context, op *operatorsv1alpha1.Operator, bd *rukpakv1alpha1.BundleDeployment, ns string) error {
	if bd != nil && bd.Spec.InstallNamespace == ns && bd.Spec.DeletionPolicy == deletionPolicy(op) &&
		apimeta.IsStatusConditionTrue(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled) {
		return nil
	}
	return r.ensureNamespace(ctx, op, ns)
}

// ensureNamespace creates the install namespace when it is missing, owned by and labelled for op, so
// that it is removed with op. A namespace an earlier Operator created is shared: op becomes one more
// owner. A namespace that existed before is left alone. With deletionPolicy Orphan a namespace OLM
// created is released instead (see releaseNamespace).
//
// The namespace is created without a read first (an Operator's own namespace is new: one request
// instead of two); only when it exists already is it read, to see who made it.
func (r *OperatorReconciler) ensureNamespace(ctx context.Context, op *operatorsv1alpha1.Operator, name string) error {
	err := r.Client.Create(ctx, desiredNamespace(op, name))
	switch {
	case err == nil:
		return nil
	case !apierrors.IsAlreadyExists(err):
		return fmt.Errorf("creating install namespace %q: %w", name, err)
	}
	ns := &corev1.Namespace{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Name: name}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("install namespace %q was deleted while it was being created for Operator %q: retrying", name, op.Name)
		}
		return fmt.Errorf("getting install namespace %q: %w", name, err)
	}
	if ns.Labels[LabelOwnerKind] != "Operator" {
		return nil
	}
	if deletionPolicy(op) == rukpakv1alpha1.DeletionPolicyOrphan {
		return r.releaseNamespace(ctx, op, ns)
	}
	for _, ref := range ns.OwnerReferences {
		if ref.UID == op.UID {
			return nil
		}
	}
	if !ns.DeletionTimestamp.IsZero() {
		return fmt.Errorf("install namespace %q is being deleted (its Operator was removed): retrying once it is gone", name)
	}
	ref := ownerRef(op)
	ref.Controller = nil
	ns.OwnerReferences = append(ns.OwnerReferences, ref)
	if err := r.Client.Update(ctx, ns); err != nil {
		return fmt.Errorf("adding Operator %q as an owner of namespace %q: %w", op.Name, name, err)
	}
	return nil
}

// releaseNamespace makes a namespace OLM created for Operators an ordinary one, for op whose
// deletionPolicy is Orphan: it removes every Operator ownerReference and the owner labels, so that
// neither op's deletion nor that of another Operator sharing it deletes it.
func (r *OperatorReconciler) releaseNamespace(ctx context.Context, op *operatorsv1alpha1.Operator, ns *corev1.Namespace) error {
	if !ns.DeletionTimestamp.IsZero() {
		return fmt.Errorf("install namespace %q is being deleted (the Operator that created it was removed), so Operator %q cannot keep it "+
			"with deletionPolicy Orphan: retrying once it is gone", ns.Name, op.Name)
	}
	if err := r.Client.Update(ctx, released(ns)); err != nil {
		return fmt.Errorf("releasing install namespace %q for Operator %q (deletionPolicy Orphan: removing the Operators' ownerReferences and labels): %w",
			ns.Name, op.Name, err)
	}
	log.FromContext(ctx).Info("released the install namespace: deletionPolicy is Orphan, OLM will not delete it", "namespace", ns.Name)
	return nil
}

// released is ns without the Operator ownerReferences and owner labels.
func released(ns *corev1.Namespace) *corev1.Namespace {
	out := ns.DeepCopy()
	out.OwnerReferences = nil
	for _, ref := range ns.OwnerReferences {
		if ref.Kind != "Operator" || !strings.HasPrefix(ref.APIVersion, operatorsv1alpha1.GroupVersion.Group+"/") {
			out.OwnerReferences = append(out.OwnerReferences, ref)
		}
	}
	delete(out.Labels, LabelOwnerKind)
	delete(out.Labels, LabelOwnerName)
	return out
}
