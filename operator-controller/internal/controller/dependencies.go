package controller

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	operators "github.com/olmv1/olmv1/deppy/pkg/operators"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/platform/conditionevents"
)

// Dependencies (spec.dependencyPolicy Install). For every dependency of the resolved bundle that no
// Operator installs, operator-controller creates an Operator named after the package, labelled
// LabelDependency, with an ownerReference (not a controller one) to every Operator that needs it.
// Such an Operator is released by an Operator that no longer needs it (its ownerReference is
// removed) and deleted once nobody needs it; the garbage collector deletes it too when its last
// owner is deleted. An Operator without the label (one a person created) is used as it is: it is
// never changed or deleted here.

// dependencyOperator returns the Operator to create for package pkg, needed by op.
func dependencyOperator(op *operatorsv1alpha1.Operator, pkg string) *operatorsv1alpha1.Operator {
	return &operatorsv1alpha1.Operator{
		ObjectMeta: metav1.ObjectMeta{
			Name:            pkg,
			Labels:          map[string]string{operatorsv1alpha1.LabelDependency: "true"},
			OwnerReferences: []metav1.OwnerReference{dependentRef(op)},
		},
		Spec: operatorsv1alpha1.OperatorSpec{
			PackageName: pkg,
			// Its own dependencies are installed the same way: the dependent's resolution allowed
			// them already.
			DependencyPolicy: operatorsv1alpha1.DependencyPolicyInstall,
			// What the dependent was installed with applies to what it pulls in.
			CollisionPolicy: op.Spec.CollisionPolicy,
			DeletionPolicy:  op.Spec.DeletionPolicy,
		},
	}
}

func dependentRef(op *operatorsv1alpha1.Operator) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: operatorsv1alpha1.GroupVersion.String(), Kind: "Operator", Name: op.Name, UID: op.UID,
		BlockOwnerDeletion: ptr.To(false),
	}
}

func isDependencyOperator(o *operatorsv1alpha1.Operator) bool {
	return o.Labels[operatorsv1alpha1.LabelDependency] == "true"
}

func ownedBy(o *operatorsv1alpha1.Operator, uid types.UID) bool {
	return slices.ContainsFunc(o.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == uid })
}

// ensureDependencies creates or joins the Operators that install b's dependencies (Install only),
// releases those op no longer needs, and returns status.dependencies. A dependency that cannot be
// given an Operator is reported in the returned error, which names it and what to do.
func (r *OperatorReconciler) ensureDependencies(ctx context.Context, op *operatorsv1alpha1.Operator, b *operators.Bundle) ([]operatorsv1alpha1.Dependency, error) {
	install := op.Spec.DependencyPolicy == operatorsv1alpha1.DependencyPolicyInstall
	var deps []operatorsv1alpha1.Dependency
	needed := map[string]bool{}
	var problems []string
	for _, d := range b.Dependencies {
		name := d.Operator
		if name == "" && install {
			var err error
			if name, err = r.ensureDependencyOperator(ctx, op, d.Package); err != nil {
				problems = append(problems, err.Error())
				continue
			}
		}
		if name == "" || needed[name] {
			continue
		}
		needed[name] = true
		if install && name != op.Name {
			if err := r.joinDependencyOperator(ctx, op, name); err != nil {
				problems = append(problems, err.Error())
			}
		}
		deps = append(deps, operatorsv1alpha1.Dependency{Package: d.Package, Version: d.Version, Operator: name, RequiredBy: d.Requirement})
	}
	sort.Slice(deps, func(i, j int) bool { return deps[i].Package < deps[j].Package })
	if err := r.releaseDependencies(ctx, op, needed); err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		return deps, fmt.Errorf("installing the dependencies: %s", strings.Join(problems, "; "))
	}
	return deps, nil
}

// ensureDependencyOperator creates the Operator for pkg (or finds the one created before) and
// returns its name.
func (r *OperatorReconciler) ensureDependencyOperator(ctx context.Context, op *operatorsv1alpha1.Operator, pkg string) (string, error) {
	want := dependencyOperator(op, pkg)
	err := r.Client.Create(ctx, want)
	if err == nil {
		log.FromContext(ctx).Info("created an Operator for a dependency", "operator", want.Name, "package", pkg)
		conditionevents.Normal(r.Recorder, op, "DependencyCreated", "Create",
			fmt.Sprintf("created Operator %q to install package %q, which the bundle needs", want.Name, pkg))
		return want.Name, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating Operator %q for package %q: %w", want.Name, pkg, err)
	}
	have := &operatorsv1alpha1.Operator{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: want.Name}, have); err != nil {
		return "", fmt.Errorf("reading Operator %q: %w", want.Name, err)
	}
	if have.Spec.PackageName != pkg {
		return "", fmt.Errorf("package %q is needed but the Operator %q that would install it already exists for package %q: create an Operator with packageName %q under another name",
			pkg, want.Name, have.Spec.PackageName, pkg)
	}
	// Created before (the cache has not seen it yet), or one a person created since resolution ran.
	return want.Name, nil
}

// joinDependencyOperator adds op's ownerReference to the dependency Operator name when
// operator-controller created it (an Operator a person created is left as it is).
func (r *OperatorReconciler) joinDependencyOperator(ctx context.Context, op *operatorsv1alpha1.Operator, name string) error {
	dep := &operatorsv1alpha1.Operator{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, dep); err != nil {
		if apierrors.IsNotFound(err) {
			return nil // just created; the cache catches up and the next reconcile looks again
		}
		return fmt.Errorf("reading Operator %q: %w", name, err)
	}
	if !isDependencyOperator(dep) || ownedBy(dep, op.UID) || !dep.DeletionTimestamp.IsZero() {
		return nil
	}
	patch := client.MergeFromWithOptions(dep.DeepCopy(), client.MergeFromWithOptimisticLock{})
	dep.OwnerReferences = append(dep.OwnerReferences, dependentRef(op))
	if err := r.Client.Patch(ctx, dep, patch); err != nil {
		return fmt.Errorf("recording that Operator %q needs Operator %q: %w", op.Name, name, err)
	}
	return nil
}

// releaseDependencies removes op's ownerReference from the dependency Operators it no longer needs
// (all of them when needed is nil) and deletes those that nobody needs any more.
func (r *OperatorReconciler) releaseDependencies(ctx context.Context, op *operatorsv1alpha1.Operator, needed map[string]bool) error {
	list := &operatorsv1alpha1.OperatorList{}
	if err := r.Client.List(ctx, list, client.MatchingLabels{operatorsv1alpha1.LabelDependency: "true"}); err != nil {
		return fmt.Errorf("listing dependency Operators: %w", err)
	}
	for i := range list.Items {
		dep := &list.Items[i]
		if needed[dep.Name] || !ownedBy(dep, op.UID) || !dep.DeletionTimestamp.IsZero() {
			continue
		}
		rest := slices.DeleteFunc(slices.Clone(dep.OwnerReferences), func(ref metav1.OwnerReference) bool { return ref.UID == op.UID })
		if len(rest) == 0 {
			// Nobody needs it: delete it with a precondition, so that one that another Operator
			// joined meanwhile is kept (the conflict is retried).
			err := r.Client.Delete(ctx, dep, client.Preconditions{UID: &dep.UID, ResourceVersion: &dep.ResourceVersion})
			if client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting dependency Operator %q, which nothing needs any more: %w", dep.Name, err)
			}
			log.FromContext(ctx).Info("deleted a dependency Operator nothing needs any more", "operator", dep.Name)
			conditionevents.Normal(r.Recorder, op, "DependencyDeleted", "Delete",
				fmt.Sprintf("deleted Operator %q (package %q): nothing needs it any more", dep.Name, dep.Spec.PackageName))
			continue
		}
		patch := client.MergeFromWithOptions(dep.DeepCopy(), client.MergeFromWithOptimisticLock{})
		dep.OwnerReferences = rest
		if err := r.Client.Patch(ctx, dep, patch); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("recording that Operator %q no longer needs Operator %q: %w", op.Name, dep.Name, err)
		}
	}
	return nil
}
