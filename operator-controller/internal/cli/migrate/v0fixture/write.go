package v0fixture

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	v0 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// Reading the bundle and writing objects as OLM v0's controllers do.

// readBundle reads the CSV and the CRDs of a registry+v1 bundle directory.
func readBundle(dir string) (*v0.ClusterServiceVersion, []*unstructured.Unstructured, error) {
	entries, err := os.ReadDir(filepath.Join(dir, "manifests"))
	if err != nil {
		return nil, nil, err
	}
	var csv *v0.ClusterServiceVersion
	var crdObjs []*unstructured.Unstructured
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, "manifests", e.Name()))
		if err != nil {
			return nil, nil, err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(b, &u.Object); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		switch u.GetKind() {
		case "ClusterServiceVersion":
			csv = &v0.ClusterServiceVersion{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, csv); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", e.Name(), err)
			}
		case "CustomResourceDefinition":
			crdObjs = append(crdObjs, u)
		}
	}
	if csv == nil {
		return nil, nil, fmt.Errorf("%s: no ClusterServiceVersion in manifests/", dir)
	}
	return csv, crdObjs, nil
}

// create writes obj of OLM v0's API as unstructured (the client's scheme may not know it).
func create(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, obj client.Object, manager string) error {
	return write(ctx, c, gvk, obj, manager, false)
}

// createWithStatus creates obj, then writes its status through the status subresource.
func createWithStatus(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, obj client.Object, manager string) error {
	return write(ctx, c, gvk, obj, manager, true)
}

func write(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, obj client.Object, manager string, withStatus bool) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	status := m["status"]
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
	what := fmt.Sprintf("%s %s/%s", gvk.Kind, obj.GetNamespace(), obj.GetName())
	if err := c.Create(ctx, u, client.FieldOwner(manager)); err != nil {
		return fmt.Errorf("creating %s: %w", what, err)
	}
	obj.SetUID(u.GetUID())
	if !withStatus || status == nil {
		return nil
	}
	u.Object["status"] = status
	if err := c.Status().Update(ctx, u, client.FieldOwner(manager)); err != nil {
		return fmt.Errorf("writing the status of %s: %w", what, err)
	}
	return nil
}

func mergeEnv(have, add []corev1.EnvVar) []corev1.EnvVar {
	out := append([]corev1.EnvVar(nil), have...)
next:
	for _, a := range add {
		for i := range out {
			if out[i].Name == a.Name {
				out[i] = a
				continue next
			}
		}
		out = append(out, a)
	}
	return out
}

// merge returns a copy of a with b's entries added (b wins).
func merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range []map[string]string{a, b} {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func ptrNow() *metav1.Time {
	t := metav1.NewTime(time.Now().Truncate(time.Second))
	return &t
}
