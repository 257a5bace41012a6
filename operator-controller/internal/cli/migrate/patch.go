package migrate

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

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
