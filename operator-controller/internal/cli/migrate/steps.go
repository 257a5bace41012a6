package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// ErrStopped is returned when Migrator.StopAfter stopped a migration between two steps.
var ErrStopped = errors.New("stopped between steps (StopAfter)")

// Step is one step of a migration. Each is idempotent and decides from the cluster whether it has
// anything left to do, so a migration killed anywhere is finished by running migrate again.
type Step struct {
	Name string
	// skipFrom: the step is skipped once the Operator's phase reached it ("" never skipped).
	skipFrom string
	do       func(ctx context.Context, m *Migration) error
}

// Steps are the steps of a migration, in order. See docs/migration.md for why in this order.
var Steps = []Step{
	{Name: "mark the Subscription as being migrated", skipFrom: PhaseReleasing, do: annotateSubscription},
	{Name: "create the Catalog", skipFrom: PhaseReleasing, do: createCatalog},
	{Name: "clear the controller flag of ownerReferences to the CSV on the objects to adopt", skipFrom: PhaseReleasing, do: clearControllerFlags},
	{Name: "create the Operator (collisionPolicy IfNoController, deletionPolicy Orphan)", skipFrom: PhaseReleasing, do: createOperator},
	{Name: "wait until the Operator is Installed and Healthy and OLM v1 owns every adopted object", skipFrom: PhaseReleasing, do: waitInstalled},
	{Name: "record phase Releasing on the Operator", skipFrom: PhaseReleasing, do: setPhase(PhaseReleasing)},
	{Name: "delete the Subscription (OLM v0 stops resolving and upgrading)", skipFrom: PhaseComplete, do: deleteSubscription},
	{Name: "remove OLM v0's labels from cluster-scoped objects (OLM v0 deletes what they select with the CSV)", skipFrom: PhaseComplete, do: releaseClusterScoped},
	{Name: "remove ownerReferences to the CSV (the garbage collector deletes what they point from)", skipFrom: PhaseComplete, do: removeOwnerReferences},
	{Name: "delete OLM v0's RBAC that OLM v1 replaced", skipFrom: PhaseComplete, do: deleteSuperseded},
	{Name: "delete the CSV (propagationPolicy Orphan), its copies and its OperatorCondition", skipFrom: PhaseComplete, do: deleteCSV},
	{Name: "remove OLM v0's labels from the remaining objects", skipFrom: PhaseComplete, do: releaseNamespaced},
	{Name: "set deletionPolicy Delete and phase Complete on the Operator", skipFrom: PhaseComplete, do: complete},
}

// Migration is one Subscription's migration in progress.
type Migration struct {
	c client.Client
	// Namespace, Subscription and CSV name the OLM v0 installation.
	Namespace, Subscription, CSV, Package string
	// Operator is the name of the Operator replacing it.
	Operator string
	Target   *Target
	Plan     *Plan
	// Timeout bounds the wait for Installed; PollInterval is how often it reads.
	Timeout, PollInterval time.Duration
	// Log receives one line per step run.
	Log func(format string, args ...any)
}

// Run runs the steps not yet done. stopAfter > 0 returns ErrStopped after that many steps have run
// (tests: a crash between two steps).
func (m *Migration) Run(ctx context.Context, stopAfter int) error {
	ran := 0
	for i, s := range Steps {
		op, err := m.operator(ctx)
		if err != nil {
			return err
		}
		phase := ""
		if op != nil {
			phase = op.Annotations[AnnotationMigrationPhase]
		}
		if phaseReached(phase, s.skipFrom) {
			continue
		}
		if m.Log != nil {
			m.Log("step %d/%d: %s", i+1, len(Steps), s.Name)
		}
		if err := s.do(ctx, m); err != nil {
			return fmt.Errorf("step %d (%s): %w", i+1, s.Name, err)
		}
		ran++
		if stopAfter > 0 && ran >= stopAfter {
			return ErrStopped
		}
	}
	return nil
}

var phaseOrder = map[string]int{"": 0, PhaseAdopting: 1, PhaseReleasing: 2, PhaseComplete: 3}

func phaseReached(phase, from string) bool {
	return from != "" && phaseOrder[phase] >= phaseOrder[from]
}

func (m *Migration) operator(ctx context.Context) (*operatorsv1alpha1.Operator, error) {
	op := &operatorsv1alpha1.Operator{}
	if err := m.c.Get(ctx, types.NamespacedName{Name: m.Operator}, op); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	if op.Annotations[AnnotationMigratedFrom] != MigratedFrom(m.Namespace, m.Subscription, m.CSV) {
		return nil, fmt.Errorf("Operator %s exists and was not created by this migration (annotation %s is %q): delete or rename it, or keep this operator on OLM v0",
			m.Operator, AnnotationMigratedFrom, op.Annotations[AnnotationMigratedFrom])
	}
	return op, nil
}

func (m *Migration) v0(ctx context.Context) (*V0, error) {
	return ReadV0(ctx, m.c, m.Namespace, m.Subscription, m.CSV, m.Package)
}

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

func deleteSubscription(ctx context.Context, m *Migration) error {
	return deleteV0(ctx, m.c, GVKSubscription, m.Namespace, m.Subscription, metav1.DeletePropagationBackground)
}

// releaseClusterScoped removes OLM v0's labels from the cluster-scoped objects that stay: OLM v0
// deletes the cluster-scoped objects selected by the CSV's olm.owner labels when the CSV is deleted.
func releaseClusterScoped(ctx context.Context, m *Migration) error {
	return m.eachKept(ctx, func(u *unstructured.Unstructured) error {
		if u.GetNamespace() != "" {
			return nil
		}
		return m.stripLabels(ctx, u)
	})
}

// removeOwnerReferences removes the ownerReferences to the CSV from the namespaced objects that
// stay; their olm.owner labels stay until the CSV is gone, since OLM v0 finds a CSV's Deployments by
// them (and would otherwise re-create them while the CSV exists).
func removeOwnerReferences(ctx context.Context, m *Migration) error {
	return m.eachKept(ctx, func(u *unstructured.Unstructured) error {
		var keep []any
		refs, _, _ := unstructured.NestedSlice(u.Object, "metadata", "ownerReferences")
		changed := false
		for _, r := range refs {
			rm, _ := r.(map[string]any)
			if rm["kind"] == CSVOwnerKind && rm["name"] == m.CSV {
				changed = true
				continue
			}
			keep = append(keep, r)
		}
		if !changed {
			return nil
		}
		// A merge patch replaces the whole list; the resourceVersion makes it fail on a concurrent change.
		return patchObject(ctx, m.c, u, map[string]any{"metadata": map[string]any{"resourceVersion": u.GetResourceVersion(), "ownerReferences": keep}})
	})
}

// deleteSuperseded deletes OLM v0's RBAC that OLM v1 does not own (OLM v1 created its own).
func deleteSuperseded(ctx context.Context, m *Migration) error {
	st, err := m.v0(ctx)
	if err != nil {
		return err
	}
	for _, u := range st.Marked {
		if !m.superseded(u) {
			continue
		}
		uid := u.GetUID()
		if err := m.c.Delete(ctx, u, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s %s: %w", u.GetKind(), nsName(u), err)
		}
	}
	return nil
}

func (m *Migration) superseded(u *unstructured.Unstructured) bool {
	return supersededKinds[u.GetKind()] && u.GetLabels()[LabelOwner] == m.CSV && u.GetLabels()[rukpakOwnerNameLabel] != m.Operator
}

// deleteCSV deletes the CSV with propagationPolicy Orphan: should an ownerReference to it have
// come back meanwhile, the garbage collector removes it instead of deleting the object.
func deleteCSV(ctx context.Context, m *Migration) error {
	st, err := m.v0(ctx)
	if err != nil {
		return err
	}
	if err := deleteV0(ctx, m.c, GVKCSV, m.Namespace, m.CSV, metav1.DeletePropagationOrphan); err != nil {
		return err
	}
	// OLM v0 deletes the copies of a deleted CSV itself; OLM v0 may be gone already.
	for _, cp := range st.CopiedCSVs {
		if err := deleteV0(ctx, m.c, GVKCSV, cp.Namespace, cp.Name, metav1.DeletePropagationBackground); err != nil {
			return err
		}
	}
	return deleteV0(ctx, m.c, GVKOperatorCondition, m.Namespace, m.CSV, metav1.DeletePropagationBackground)
}

func releaseNamespaced(ctx context.Context, m *Migration) error {
	return m.eachKept(ctx, func(u *unstructured.Unstructured) error {
		if u.GetNamespace() == "" {
			return nil
		}
		return m.stripLabels(ctx, u)
	})
}

func complete(ctx context.Context, m *Migration) error {
	return m.c.Patch(ctx, &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: m.Operator}}, jsonMerge(map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{AnnotationMigrationPhase: PhaseComplete}},
		"spec":     map[string]any{"deletionPolicy": string(rukpakv1alpha1.DeletionPolicyDelete)},
	}))
}

// eachKept calls f with each object carrying OLM v0's marks that stays (everything but the RBAC
// OLM v1 replaced).
func (m *Migration) eachKept(ctx context.Context, f func(u *unstructured.Unstructured) error) error {
	st, err := m.v0(ctx)
	if err != nil {
		return err
	}
	for _, u := range st.Marked {
		if m.superseded(u) || u.GetDeletionTimestamp() != nil {
			continue
		}
		if err := f(u); err != nil {
			return fmt.Errorf("%s %s: %w", u.GetKind(), nsName(u), err)
		}
	}
	return nil
}

// stripLabels removes OLM v0's labels from u.
func (m *Migration) stripLabels(ctx context.Context, u *unstructured.Unstructured) error {
	rm := map[string]any{}
	for _, k := range []string{LabelOwner, LabelOwnerKind, LabelOwnerNamespace, LabelDeploymentSpecHash, ComponentLabel(m.Package, m.Namespace)} {
		if _, ok := u.GetLabels()[k]; ok {
			rm[k] = nil
		}
	}
	if len(rm) == 0 {
		return nil
	}
	return patchObject(ctx, m.c, u, map[string]any{"metadata": map[string]any{"resourceVersion": u.GetResourceVersion(), "labels": rm}})
}

func patchObject(ctx context.Context, c client.Client, u *unstructured.Unstructured, patch map[string]any) error {
	return c.Patch(ctx, u.DeepCopy(), jsonMerge(patch))
}

func mergePatch(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, ns, name string, patch map[string]any) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(ns)
	u.SetName(name)
	if err := c.Patch(ctx, u, jsonMerge(patch)); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// deleteV0 deletes an object of OLM v0's API if it exists, with its UID as a precondition.
func deleteV0(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, ns, name string, propagation metav1.DeletionPropagation) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, u); err != nil {
		if apierrors.IsNotFound(err) || apimeta.IsNoMatchError(err) {
			return nil
		}
		return err
	}
	if u.GetDeletionTimestamp() != nil {
		return nil
	}
	uid := u.GetUID()
	if err := c.Delete(ctx, u, client.PropagationPolicy(propagation), client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s %s/%s: %w", gvk.Kind, ns, name, err)
	}
	return nil
}

func jsonMerge(v map[string]any) client.Patch {
	b, _ := json.Marshal(v)
	return client.RawPatch(types.MergePatchType, b)
}

func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
