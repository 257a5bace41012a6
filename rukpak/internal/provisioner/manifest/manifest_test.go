package manifest

import (
	"strings"
	"testing"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestScoper(t *testing.T) {
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "gadgets.example.com"},
		"spec":     map[string]any{"group": "example.com", "scope": "Cluster", "names": map[string]any{"kind": "Gadget"}},
	}}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Group: "other.io", Version: "v1", Kind: "Global"}, meta.RESTScopeRoot)
	mapper.Add(schema.GroupVersionKind{Group: "other.io", Version: "v1", Kind: "Local"}, meta.RESTScopeNamespace)
	s := NewScoper([]*unstructured.Unstructured{crd}, mapper)
	for gvk, want := range map[schema.GroupVersionKind]bool{
		{Group: "example.com", Version: "v1", Kind: "Gadget"}:                                          false, // from the bundle's CRD
		{Group: "other.io", Version: "v1", Kind: "Global"}:                                             false, // from the mapper
		{Group: "other.io", Version: "v1", Kind: "Local"}:                                              true,
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}:                       false, // built in
		{Group: "", Version: "v1", Kind: "ConfigMap"}:                                                  true,
		{Group: "unknown.io", Version: "v1", Kind: "Thing"}:                                            true, // unknown: namespaced
		{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"}: false,
	} {
		if got := s.Namespaced(gvk); got != want {
			t.Errorf("Namespaced(%v) = %v, want %v", gvk, got, want)
		}
	}
}

func TestReadDirOrderAndSources(t *testing.T) {
	fsys := fstest.MapFS{
		"manifests/b.yaml":     {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b1}\n---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b2}\n")},
		"manifests/a/x.json":   {Data: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ax"}}`)},
		"manifests/.hidden":    {Data: []byte("ignored")},
		"manifests/c.yml":      {Data: []byte("# empty\n")},
		"elsewhere/ignored.md": {Data: []byte("#")},
	}
	objs, err := ReadDir(fsys, "manifests")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.Obj.GetName()+"@"+o.Source())
	}
	want := "ax@manifests/a/x.json (document 1),b1@manifests/b.yaml (document 1),b2@manifests/b.yaml (document 2)" // empty documents between separators are not counted
	if strings.Join(got, ",") != want {
		t.Fatalf("got %v\nwant %s", got, want)
	}
}
