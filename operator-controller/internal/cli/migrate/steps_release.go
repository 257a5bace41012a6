package migrate

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// The steps after OLM v1 owns everything: OLM v0 is told to let go.

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
	return supersededKinds[u.GetKind()] && (u.GetLabels()[LabelOwner] == m.CSV || ownedByCSV(u, m.CSV)) && u.GetLabels()[rukpakOwnerNameLabel] != m.Operator
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
