package preflight

import (
	"context"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// widgetCRD is a namespaced CRD of Widgets (widgets.example.com) serving and storing v1 with the
// given spec schema.
func widgetCRD(t *testing.T, scope apiextensionsv1.ResourceScope, specSchema string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	root := schemaOf(t, `{type: object, properties: {spec: `+specSchema+`}}`)
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: scope,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: root},
			}},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: []string{"v1"}},
	}
}

func toUnstructured(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func TestCheckCRDsFindings(t *testing.T) {
	const lenient = `{type: object, properties: {size: {type: integer}}}`
	const strict = `{type: object, properties: {size: {type: integer, maximum: 5}}}`
	installed := widgetCRD(t, apiextensionsv1.NamespaceScoped, lenient)
	big := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "big", "namespace": "team-a"},
		"spec":     map[string]any{"size": int64(9)},
	}}
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	scheme.AddKnownTypeWithName(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, &unstructured.Unstructured{})
	scheme.AddKnownTypeWithName(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "WidgetList"}, &unstructured.UnstructuredList{})
	writes := 0
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(installed, big).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				writes++
				return c.Create(ctx, obj, opts...)
			},
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				writes++
				return c.Update(ctx, obj, opts...)
			},
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				writes++
				return c.Patch(ctx, obj, patch, opts...)
			},
		}).Build()

	other := widgetCRD(t, apiextensionsv1.NamespaceScoped, lenient)
	other.Name, other.Spec.Names.Plural, other.Spec.Names.Kind = "gadgets.example.com", "gadgets", "Gadget"
	configMap := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x"}}}

	for _, tc := range []struct {
		name string
		next *apiextensionsv1.CustomResourceDefinition
		want Finding
		// wantProblem is a substring of the only problem; "" means safe.
		wantProblem string
	}{
		{name: "same schema", next: widgetCRD(t, apiextensionsv1.NamespaceScoped, lenient), want: Finding{CRD: "widgets.example.com", Installed: true}},
		{name: "new CRD", next: other, want: Finding{CRD: "gadgets.example.com"}},
		{name: "scope change", next: widgetCRD(t, apiextensionsv1.ClusterScoped, lenient), want: Finding{CRD: "widgets.example.com", Installed: true},
			wantProblem: "changes scope from Namespaced to Cluster"},
		{name: "existing object rejected", next: widgetCRD(t, apiextensionsv1.NamespaceScoped, strict), want: Finding{CRD: "widgets.example.com", Installed: true},
			wantProblem: "rejects 1 existing object(s), e.g. Widget team-a/big: spec.size: Invalid value: 9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			findings, err := CheckCRDs(t.Context(), reader, []*unstructured.Unstructured{configMap, toUnstructured(t, tc.next)})
			if err != nil {
				t.Fatal(err)
			}
			if len(findings) != 1 {
				t.Fatalf("want one finding (the ConfigMap is no CRD), got %+v", findings)
			}
			f := findings[0]
			if f.CRD != tc.want.CRD || f.Installed != tc.want.Installed {
				t.Errorf("finding %+v, want CRD %s installed %v", f, tc.want.CRD, tc.want.Installed)
			}
			if tc.wantProblem == "" {
				if !f.Safe() {
					t.Errorf("want safe, got %q", f.Problems)
				}
				return
			}
			if len(f.Problems) != 1 || !strings.Contains(f.Problems[0], tc.wantProblem) {
				t.Errorf("problems %q, want one containing %q", f.Problems, tc.wantProblem)
			}
			// The controller's preflight is the same check, as one error that says how to proceed.
			err = CRDUpgradeSafety(reader)(t.Context(), []*unstructured.Unstructured{toUnstructured(t, tc.next)})
			if err == nil || !strings.Contains(err.Error(), tc.wantProblem) || !strings.Contains(err.Error(), SkipAnnotation+"=true") {
				t.Errorf("CRDUpgradeSafety: %v", err)
			}
		})
	}
	if writes != 0 {
		t.Errorf("the check wrote %d times; it must only read", writes)
	}
}
