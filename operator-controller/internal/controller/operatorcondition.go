package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// OperatorConditions, as OLM v0 keeps them: for an Operator that installs a registry+v1 bundle from
// a catalog, operator-controller creates an OperatorCondition (operators.coreos.com/v2) named like
// the installed bundle (the ClusterServiceVersion's name) in the install namespace, a Role that lets
// get, update and patch only that object, and a RoleBinding of it to the ServiceAccounts rukpak
// created for the bundle's Deployments. All three carry the owner labels and an ownerReference to
// the Operator, and go with the Operator or with the bundle they were made for (after an upgrade).
// An OperatorCondition, Role or RoleBinding operator-controller did not create is never changed or
// deleted (its cache only sees the labelled ones). The resolved upgrade of an Operator whose
// OperatorCondition says Upgradeable=False is held (holdUpgrade).

// +kubebuilder:rbac:groups=operators.coreos.com,resources=operatorconditions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles,verbs=get;create;update;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=list

const (
	// rukpakOwnerName is the label rukpak puts on every object it applies for a BundleDeployment:
	// its name (rukpak/internal/apply).
	rukpakOwnerName = "core.rukpak.io/owner-name"
	// annotationSubjectsOf is set on the RoleBinding of an OperatorCondition: the BundleDeployment
	// revision whose ServiceAccounts are its subjects. They are looked up again when it changes.
	annotationSubjectsOf = "operators.operatorframework.io/subjects-of-revision"
)

// conditionName is the name of the OperatorCondition of the bundle bd installs: the
// OPERATOR_CONDITION_NAME its Deployments get (the Operator's spec.config may set it, as `kubectl
// olmv1 migrate` does with OLM v0's value), else the bundle's name. "" when it gets none: not a
// registry+v1 bundle, or no bundle name (a direct bundle).
func conditionName(bd *rukpakv1alpha1.BundleDeployment) string {
	if bd == nil || bd.Spec.ProvisionerClassName != rukpakv1alpha1.ProvisionerRegistry || !bd.DeletionTimestamp.IsZero() ||
		bd.Annotations[AnnotationBundleName] == "" {
		return ""
	}
	if v := conditionEnvValue(&bd.Spec); v != "" {
		return v
	}
	return bd.Annotations[AnnotationBundleName]
}

// holdUpgrade sets obs.held when resolution chose an upgrade of op's installed registry+v1 bundle
// and the installed bundle's OperatorCondition says Upgradeable=False. A first install, the same
// bundle and a downgrade are never held; neither is an OperatorCondition operator-controller did not
// create (it does not see it). A read that fails holds nothing (and is logged).
func (r *OperatorReconciler) holdUpgrade(ctx context.Context, op *operatorsv1alpha1.Operator, obs *observations) {
	if r.NoOperatorConditions || obs.direct || obs.outcome == nil || obs.outcome.Bundle == nil {
		return
	}
	name, b := conditionName(obs.bd), obs.outcome.Bundle
	if name == "" || name == b.Name || !isUpgrade(obs.bd.Annotations[AnnotationBundleVersion], b.Version) {
		return
	}
	oc := &operatorsv2.OperatorCondition{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: obs.bd.Spec.InstallNamespace, Name: name}, oc); err != nil {
		if !apierrors.IsNotFound(err) {
			log.FromContext(ctx).Info("reading the installed bundle's OperatorCondition failed; the upgrade is not held", "operatorCondition", name, "error", err.Error())
		}
		return
	}
	if !createdFor(oc, op) {
		return
	}
	if h := upgradeBlocked(oc); h != nil {
		h.bundle = b
		obs.held = h
		log.FromContext(ctx).Info("upgrade held by the OperatorCondition", "operatorCondition", name, "to", b.Name)
	}
}

// createdFor reports whether obj carries op's owner labels and ownerReference.
func createdFor(obj client.Object, op *operatorsv1alpha1.Operator) bool {
	if obj.GetLabels()[LabelOwnerKind] != "Operator" || obj.GetLabels()[LabelOwnerName] != op.Name {
		return false
	}
	return slices.ContainsFunc(obj.GetOwnerReferences(), func(ref metav1.OwnerReference) bool { return ref.UID == op.UID })
}

// ensureOperatorCondition creates the OperatorCondition of the bundle op's BundleDeployment installs,
// with its Role and RoleBinding, when missing; points the RoleBinding at the ServiceAccounts of the
// installed revision; and, once that bundle is installed, removes those it made for other bundles
// (an upgrade that is rolling out or failed leaves the previous one in place). A reconcile that finds them
// current makes no API request (they are cached).
func (r *OperatorReconciler) ensureOperatorCondition(ctx context.Context, op *operatorsv1alpha1.Operator, bd *rukpakv1alpha1.BundleDeployment) error {
	name := conditionName(bd)
	if name == "" || r.NoOperatorConditions {
		return nil
	}
	ns := bd.Spec.InstallNamespace
	key := types.NamespacedName{Namespace: ns, Name: name}
	oc := &operatorsv2.OperatorCondition{}
	switch err := r.Client.Get(ctx, key, oc); {
	case apierrors.IsNotFound(err):
		oc = &operatorsv2.OperatorCondition{ObjectMeta: ownedMeta(op, key)}
		if err := r.Client.Create(ctx, oc); apierrors.IsAlreadyExists(err) {
			// Not in the cache: someone else's (or ours, not seen yet). Left alone either way.
			log.FromContext(ctx).Info("an OperatorCondition of this name exists that operator-controller did not create (or has not seen yet): left alone", "operatorCondition", key.String())
			return nil
		} else if err != nil {
			return fmt.Errorf("creating OperatorCondition %s: %w", key, err)
		}
		log.FromContext(ctx).Info("created OperatorCondition", "operatorCondition", key.String())
	case err != nil:
		return fmt.Errorf("reading OperatorCondition %s: %w", key, err)
	case !createdFor(oc, op):
		return nil
	}
	if err := r.ensureConditionRBAC(ctx, op, bd, key); err != nil {
		return err
	}
	// The previous bundle's go once this one is installed: until then its pods may still run.
	if c := bdCondition(bd, rukpakv1alpha1.TypeInstalled); c == nil || c.Status != metav1.ConditionTrue {
		return nil
	}
	return r.removeOperatorConditions(ctx, op, key)
}

// ensureConditionRBAC writes the Role that lets the OperatorCondition key be read and updated, and
// its RoleBinding to the ServiceAccounts rukpak created for bd's installed revision. Before bd has
// an installed revision there are no such ServiceAccounts (and no pods to read the OperatorCondition):
// both wait for it, which spares a RoleBinding without subjects and its update on every install.
func (r *OperatorReconciler) ensureConditionRBAC(ctx context.Context, op *operatorsv1alpha1.Operator, bd *rukpakv1alpha1.BundleDeployment, key types.NamespacedName) error {
	if bd.Status.InstalledRevision == 0 {
		return nil
	}
	revision := strconv.FormatInt(bd.Status.InstalledRevision, 10)
	rb := &rbacv1.RoleBinding{}
	err := r.Client.Get(ctx, key, rb)
	switch {
	case err == nil && (!createdFor(rb, op) || rb.Annotations[annotationSubjectsOf] == revision):
		return nil
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("reading RoleBinding %s: %w", key, err)
	}
	exists := err == nil
	if !exists {
		role := &rbacv1.Role{ObjectMeta: ownedMeta(op, key), Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{operatorsv2.GroupVersion.Group}, Resources: []string{"operatorconditions"},
			ResourceNames: []string{key.Name}, Verbs: []string{"get", "update", "patch"},
		}}}
		if err := r.Client.Create(ctx, role); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating Role %s for OperatorCondition %s: %w", key, key, err)
		}
	}
	sas := &corev1.ServiceAccountList{}
	if err := r.APIReader.List(ctx, sas, client.InNamespace(key.Namespace), client.MatchingLabels{rukpakOwnerName: bd.Name}); err != nil {
		return fmt.Errorf("listing the ServiceAccounts of BundleDeployment %q: %w", bd.Name, err)
	}
	want := &rbacv1.RoleBinding{ObjectMeta: ownedMeta(op, key),
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: key.Name}}
	want.Annotations = map[string]string{annotationSubjectsOf: revision}
	for _, sa := range sas.Items {
		want.Subjects = append(want.Subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: key.Namespace})
	}
	if !exists {
		if err := r.Client.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating RoleBinding %s for OperatorCondition %s: %w", key, key, err)
		}
		return nil
	}
	rb.Subjects, rb.Annotations[annotationSubjectsOf] = want.Subjects, revision
	if err := r.Client.Update(ctx, rb); err != nil {
		return fmt.Errorf("updating the subjects of RoleBinding %s: %w", key, err)
	}
	return nil
}

// ownedMeta is the metadata of an object operator-controller creates for op at key.
func ownedMeta(op *operatorsv1alpha1.Operator, key types.NamespacedName) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: ownerLabels(op), OwnerReferences: []metav1.OwnerReference{ownerRef(op)}}
}

// removeOperatorConditions deletes the OperatorConditions op owns, with their Roles and
// RoleBindings, except keep (none for a zero keep: the Operator is deleted). The garbage collector
// would delete them with the Operator too; this does not wait for it, and removes those of a bundle
// that was upgraded.
func (r *OperatorReconciler) removeOperatorConditions(ctx context.Context, op *operatorsv1alpha1.Operator, keep types.NamespacedName) error {
	return r.eachConditionObject(ctx, op, keep, func(obj client.Object) error {
		if err := r.Client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			return err
		}
		log.FromContext(ctx).Info("deleted an object made for an OperatorCondition no longer in use", "kind", fmt.Sprintf("%T", obj), "name", client.ObjectKeyFromObject(obj).String())
		return nil
	})
}

// releaseOperatorConditions makes the OperatorConditions op owns, with their Roles and
// RoleBindings, ordinary objects, for op deleted with deletionPolicy Orphan: the operator it
// installed keeps running and keeps reading and writing its OperatorCondition. The owner labels and
// ownerReferences to op go, so neither the garbage collector nor operator-controller deletes them,
// and operator-controller no longer sees them.
func (r *OperatorReconciler) releaseOperatorConditions(ctx context.Context, op *operatorsv1alpha1.Operator) error {
	return r.eachConditionObject(ctx, op, types.NamespacedName{}, func(obj client.Object) error {
		labels := obj.GetLabels()
		delete(labels, LabelOwnerKind)
		delete(labels, LabelOwnerName)
		obj.SetLabels(labels)
		obj.SetOwnerReferences(slices.DeleteFunc(obj.GetOwnerReferences(), func(ref metav1.OwnerReference) bool { return ref.UID == op.UID }))
		return client.IgnoreNotFound(r.Client.Update(ctx, obj))
	})
}

// eachConditionObject calls fn on each OperatorCondition, RoleBinding and Role operator-controller
// created for op, except those at keep, and joins the errors.
func (r *OperatorReconciler) eachConditionObject(ctx context.Context, op *operatorsv1alpha1.Operator, keep types.NamespacedName, fn func(client.Object) error) error {
	if r.NoOperatorConditions {
		return nil
	}
	sel := client.MatchingLabels(ownerLabels(op))
	ocs, rbs := &operatorsv2.OperatorConditionList{}, &rbacv1.RoleBindingList{}
	if err := r.Client.List(ctx, ocs, sel); err != nil {
		return fmt.Errorf("listing the OperatorConditions of Operator %q: %w", op.Name, err)
	}
	if err := r.Client.List(ctx, rbs, sel); err != nil {
		return fmt.Errorf("listing the RoleBindings of Operator %q: %w", op.Name, err)
	}
	var objs []client.Object
	for i := range ocs.Items {
		objs = append(objs, &ocs.Items[i])
	}
	var errs []error
	for i := range rbs.Items {
		rb := &rbs.Items[i]
		objs = append(objs, rb)
		if key := client.ObjectKeyFromObject(rb); key != keep && createdFor(rb, op) {
			// Roles are not cached: read it to be sure it is ours.
			role := &rbacv1.Role{}
			if err := r.APIReader.Get(ctx, key, role); err == nil {
				objs = append(objs, role)
			} else if client.IgnoreNotFound(err) != nil {
				errs = append(errs, fmt.Errorf("reading Role %s: %w", key, err))
			}
		}
	}
	for _, obj := range objs {
		key := client.ObjectKeyFromObject(obj)
		if key == keep || !createdFor(obj, op) {
			continue
		}
		if err := fn(obj); err != nil {
			errs = append(errs, fmt.Errorf("%T %s of OperatorCondition: %w", obj, key, err))
		}
	}
	return errors.Join(errs...)
}
