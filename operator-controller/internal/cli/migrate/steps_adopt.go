package migrate

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
)

// The steps until OLM v1 owns everything: nothing of OLM v0 changes in them.

func annotateSubscription(ctx context.Context, m *Migration) error {
	return mergePatch(ctx, m.c, GVKSubscription, m.Namespace, m.Subscription,
		map[string]any{"metadata": map[string]any{"annotations": map[string]any{AnnotationMigratingTo: m.Operator}}})
}

func createCatalog(ctx context.Context, m *Migration) error {
	want := m.Target.Catalog
	if want == nil {
		return nil
	}
	have := &catalogdv1alpha1.Catalog{}
	err := m.c.Get(ctx, types.NamespacedName{Name: want.Name}, have)
	switch {
	case apierrors.IsNotFound(err):
		return ignoreExists(m.c.Create(ctx, want.DeepCopy()))
	case err != nil:
		return err
	}
	if !sameImage(have, want) {
		return fmt.Errorf("Catalog %s exists with another source: rename the CatalogSource's Catalog, or delete the Catalog", want.Name)
	}
	return nil
}

func sameImage(a, b *catalogdv1alpha1.Catalog) bool {
	return a.Spec.Source.Image != nil && b.Spec.Source.Image != nil && a.Spec.Source.Image.Ref == b.Spec.Source.Image.Ref
}

// clearControllerFlags sets controller: false on the ownerReferences to the CSV of the objects OLM
// v1 adopts: collisionPolicy IfNoController adopts no object with a controller. OLM v0 writes these
// references without the flag (ownerutil.AddNonBlockingOwner); this covers objects written otherwise.
// The reference itself stays until OLM v1 owns the object.
func clearControllerFlags(ctx context.Context, m *Migration) error {
	adopt := map[string]bool{}
	for _, o := range m.Plan.Objects {
		if o.Action == ActionAdopt {
			adopt[o.key()] = true
		}
	}
	st, err := m.v0(ctx)
	if err != nil {
		return err
	}
	for _, u := range st.Marked {
		if !adopt[keyOf(u)] {
			continue
		}
		refs, _, _ := unstructured.NestedSlice(u.Object, "metadata", "ownerReferences")
		changed := false
		for _, r := range refs {
			rm, _ := r.(map[string]any)
			if rm["kind"] == CSVOwnerKind && rm["name"] == m.CSV && rm["controller"] == true {
				rm["controller"] = false
				changed = true
			}
		}
		if !changed {
			continue
		}
		if err := patchObject(ctx, m.c, u, map[string]any{"metadata": map[string]any{"resourceVersion": u.GetResourceVersion(), "ownerReferences": refs}}); err != nil {
			return fmt.Errorf("%s %s: %w", u.GetKind(), nsName(u), err)
		}
	}
	return nil
}

func createOperator(ctx context.Context, m *Migration) error {
	op, err := m.operator(ctx)
	if err != nil || op != nil {
		return err
	}
	want := m.Target.Operator.DeepCopy()
	want.Annotations[AnnotationMigrationPhase] = PhaseAdopting
	return ignoreExists(m.c.Create(ctx, want))
}

// waitInstalled waits until the Operator is Installed with the pinned version and Healthy, and every object
// OLM v1 renders and OLM v0 created carries the owner label of the Operator's BundleDeployment.
func waitInstalled(ctx context.Context, m *Migration) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, m.PollInterval, m.Timeout, true, func(ctx context.Context) (bool, error) {
		op, err := m.operator(ctx)
		if err != nil {
			return false, err
		}
		last = installedErr(op, m.Target.Operator.Spec.Version)
		if last != nil {
			return false, nil
		}
		st, err := m.v0(ctx)
		if err != nil {
			return false, err
		}
		for _, o := range m.Plan.Objects {
			if o.Action != ActionAdopt {
				continue
			}
			for _, u := range st.Marked {
				if keyOf(u) == o.key() && u.GetLabels()[rukpakOwnerNameLabel] != m.Operator {
					last = fmt.Errorf("%s %s/%s is not owned by OLM v1 yet", o.Kind, o.Namespace, o.Name)
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("%w; OLM v0's installation is untouched: run migrate again to continue, or roll back with `kubectl delete operator %s` (its deletionPolicy Orphan leaves every object in place)", last, m.Operator)
	}
	return err
}

func installedErr(op *operatorsv1alpha1.Operator, version string) error {
	if op == nil {
		return errors.New("the Operator does not exist")
	}
	c := apimeta.FindStatusCondition(op.Status.Conditions, operatorsv1alpha1.TypeInstalled)
	switch {
	case c == nil || c.ObservedGeneration != op.Generation:
		return fmt.Errorf("Operator %s: not Installed yet", op.Name)
	case c.Status != metav1.ConditionTrue:
		return fmt.Errorf("Operator %s: Installed=%s (%s): %s", op.Name, c.Status, c.Reason, c.Message)
	case op.Status.InstalledBundle == nil || op.Status.InstalledBundle.Version != version:
		return fmt.Errorf("Operator %s: installed bundle %+v, want version %s", op.Name, op.Status.InstalledBundle, version)
	}
	// The adopted Deployments must be ready under OLM v1 before OLM v0 lets go.
	if h := apimeta.FindStatusCondition(op.Status.Conditions, operatorsv1alpha1.TypeHealthy); h == nil || h.ObservedGeneration != op.Generation || h.Status != metav1.ConditionTrue {
		if h == nil {
			return fmt.Errorf("Operator %s: Installed, not Healthy yet", op.Name)
		}
		return fmt.Errorf("Operator %s: Installed, Healthy=%s (%s): %s", op.Name, h.Status, h.Reason, h.Message)
	}
	return nil
}

func setPhase(phase string) func(context.Context, *Migration) error {
	return func(ctx context.Context, m *Migration) error {
		return m.c.Patch(ctx, &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: m.Operator}},
			jsonMerge(map[string]any{"metadata": map[string]any{"annotations": map[string]any{AnnotationMigrationPhase: phase}}}))
	}
}
