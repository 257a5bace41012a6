package manifest

import (
	"strings"
	"testing"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestScoper(t *testing.T) {
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "gadgets.example.com"},
		"spec":     map[string]any{"group": "example.com", "scope": "Cluster", "names": map[string]any{"kind": "Gadget"}},
	}}
	gathered := map[schema.GroupKind]bool{{Group: "other.io", Kind: "Global"}: false, {Group: "other.io", Kind: "Local"}: true}
	s := NewScoper([]*unstructured.Unstructured{crd}, gathered)
	for gvk, want := range map[schema.GroupVersionKind]bool{
		{Group: "example.com", Version: "v1", Kind: "Gadget"}:                                          false, // from the bundle's CRD
		{Group: "other.io", Version: "v1", Kind: "Global"}:                                             false, // gathered from the cluster
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

// ClusterKinds are the kinds only the cluster can scope: not defined by the bundle's CRDs, not in
// the built-in table of cluster-scoped kinds; each once.
func TestClusterKinds(t *testing.T) {
	obj := func(apiVersion, kind string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	}
	crd := obj("apiextensions.k8s.io/v1", "CustomResourceDefinition")
	crd.Object["spec"] = map[string]any{"group": "example.com", "scope": "Cluster", "names": map[string]any{"kind": "Gadget"}}
	got := ClusterKinds([]*unstructured.Unstructured{
		crd, obj("example.com/v1", "Gadget"), obj("v1", "Namespace"), obj("v1", "ConfigMap"),
		obj("other.io/v1", "Tenant"), obj("v1", "ConfigMap"), obj("rbac.authorization.k8s.io/v1", "ClusterRole"),
	})
	want := []schema.GroupVersionKind{{Version: "v1", Kind: "ConfigMap"}, {Group: "other.io", Version: "v1", Kind: "Tenant"}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("ClusterKinds = %v, want %v", got, want)
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
