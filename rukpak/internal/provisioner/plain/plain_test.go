package plain

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
)

const multiDoc = `apiVersion: v1
kind: ConfigMap
metadata:
  name: one
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: two
  namespace: elsewhere
---
# only a comment
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: reader
rules: []
`

const crdAndCRs = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Cluster
  names: {kind: Widget, plural: widgets}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
---
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w
`

func render(t *testing.T, files map[string]string) ([]string, error) {
	t.Helper()
	return renderIn(t, "install-ns", files)
}

func renderIn(t *testing.T, ns string, files map[string]string) ([]string, error) {
	t.Helper()
	fsys := fstest.MapFS{}
	for n, c := range files {
		fsys[n] = &fstest.MapFile{Data: []byte(c)}
	}
	objs, err := New().Render(context.Background(), provisioner.Request{Content: fsys, Name: "bd", InstallNamespace: ns})
	var out []string
	for _, o := range objs {
		out = append(out, o.GetObjectKind().GroupVersionKind().Kind+" "+o.GetNamespace()+"/"+o.GetName())
	}
	return out, err
}

func TestRenderMultiDocAndNamespaces(t *testing.T) {
	got, err := render(t, map[string]string{
		"manifests/a.yaml":      multiDoc,
		"manifests/sub/b.json":  `{"apiVersion":"v1","kind":"Service","metadata":{"name":"svc"},"spec":{"ports":[{"port":80}]}}`,
		"manifests/z_crd.yml":   crdAndCRs,
		"metadata/ignored.yaml": "not: read",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ConfigMap install-ns/one", "ConfigMap elsewhere/two", "ClusterRole /reader",
		"Service install-ns/svc",
		"CustomResourceDefinition /widgets.example.com", "Widget /w",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestRenderErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		files   map[string]string
		wantMsg string
	}{
		"no manifests dir": {map[string]string{"other/x.yaml": multiDoc}, "no manifests/ directory"},
		"empty":            {map[string]string{"manifests/a.yaml": "---\n"}, "no objects"},
		"bad yaml":         {map[string]string{"manifests/a.yaml": multiDoc + "---\nkind: [\n"}, "manifests/a.yaml (document 5): invalid YAML"},
		"no kind":          {map[string]string{"manifests/a.yaml": "apiVersion: v1\nmetadata: {name: x}\n"}, "manifests/a.yaml (document 1): kind is missing"},
		"no apiVersion":    {map[string]string{"manifests/a.yaml": "kind: ConfigMap\nmetadata: {name: x}\n"}, "apiVersion is missing"},
		"no name":          {map[string]string{"manifests/a.yaml": "apiVersion: v1\nkind: ConfigMap\n"}, "(document 1): ConfigMap has no metadata.name"},
		"not a manifest":   {map[string]string{"manifests/README.md": "hi"}, "manifests/README.md: not a manifest"},
		"cluster with ns":  {map[string]string{"manifests/a.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: x, namespace: other}\n"}, "cluster-scoped but sets metadata.namespace"},
		"duplicate":        {map[string]string{"manifests/a.yaml": multiDoc, "manifests/b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\n"}, "manifests/b.yaml (document 1): ConfigMap \"one\" is also declared in manifests/a.yaml (document 1)"},
		"list":             {map[string]string{"manifests/a.yaml": "apiVersion: v1\nkind: List\nitems: []\n"}, "is a list"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := render(t, tc.files)
			var ib *provisioner.InvalidBundleError
			if !errors.As(err, &ib) {
				t.Fatalf("want InvalidBundleError, got %v", err)
			}
			if !strings.Contains(ib.Message, tc.wantMsg) {
				t.Fatalf("message %q does not contain %q", ib.Message, tc.wantMsg)
			}
		})
	}
}

func TestRenderWithoutInstallNamespace(t *testing.T) {
	got, err := renderIn(t, "", map[string]string{"manifests/a.yaml": "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: x}\n"})
	if err != nil || len(got) != 2 {
		t.Fatalf("objects that need no install namespace render without one: %v %v", got, err)
	}
	_, err = renderIn(t, "", map[string]string{"manifests/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"})
	var ib *provisioner.InvalidBundleError
	if !errors.As(err, &ib) || !strings.Contains(ib.Message, `manifests/a.yaml (document 1): ConfigMap "c" has no namespace and installNamespace is empty`) {
		t.Fatalf("got %v", err)
	}
}

// The scope of a kind the bundle does not define comes from the Request (gathered from the cluster
// before the render), else the kind is namespaced.
func TestRenderWithGatheredScopes(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Tenant"}, meta.RESTScopeRoot)
	fsys := fstest.MapFS{"manifests/t.yaml": &fstest.MapFile{Data: []byte("apiVersion: example.com/v1\nkind: Tenant\nmetadata: {name: t}\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n")}}
	req, err := (&provisioner.Gatherer{Mapper: mapper}).Gather(context.Background(), New(), provisioner.Request{Content: fsys, InstallNamespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[schema.GroupKind]bool{{Group: "example.com", Kind: "Tenant"}: false}; !reflect.DeepEqual(req.Scopes, want) {
		t.Fatalf("gathered scopes %v, want %v (Widget is not served)", req.Scopes, want)
	}
	objs, err := New().Render(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if objs[0].GetNamespace() != "" || objs[1].GetNamespace() != "ns" {
		t.Fatalf("Tenant (cluster-scoped per the cluster) in %q, Widget (unknown: namespaced) in %q", objs[0].GetNamespace(), objs[1].GetNamespace())
	}
	// A cluster-scoped kind must not name a namespace, whoever scopes it.
	fsys["manifests/t.yaml"] = &fstest.MapFile{Data: []byte("apiVersion: example.com/v1\nkind: Tenant\nmetadata: {name: t, namespace: x}\n")}
	_, err = New().Render(context.Background(), provisioner.Request{Content: fsys, InstallNamespace: "ns", Scopes: req.Scopes})
	var ib *provisioner.InvalidBundleError
	if !errors.As(err, &ib) || !strings.Contains(ib.Message, `Tenant "t" is cluster-scoped but sets metadata.namespace "x"`) {
		t.Fatalf("got %v", err)
	}
}
