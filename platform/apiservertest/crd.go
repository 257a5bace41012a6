package apiservertest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// CRD returns the kind's CustomResourceDefinition as the API server serves it.
func (s *Suite) CRD(t *testing.T, k Kind) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := s.Client.Get(t.Context(), client.ObjectKey{Name: k.CRDName()}, crd); err != nil {
		t.Fatalf("getting CRD %s: %v", k.CRDName(), err)
	}
	return crd
}

func (s *Suite) version(t *testing.T, k Kind) apiextensionsv1.CustomResourceDefinitionVersion {
	t.Helper()
	crd := s.CRD(t, k)
	for _, v := range crd.Spec.Versions {
		if v.Name == k.Version {
			return v
		}
	}
	t.Fatalf("CRD %s does not serve version %s", k.CRDName(), k.Version)
	return apiextensionsv1.CustomResourceDefinitionVersion{}
}

// Column is a printer column expected in `kubectl get` output.
type Column struct {
	// Name of the column as kubectl prints it (upper-cased).
	Name string
	// Priority 0 columns are always printed, priority 1 only with -o wide.
	Priority int32
	// Cell is the value expected in the object's row; empty to skip the check (e.g. Age).
	Cell string
}

// AssertPrinterColumns asks the API server for the object named name as a Table, the way kubectl get
// does, and checks that the columns (including Name) are want, in order, with the expected cells.
func (s *Suite) AssertPrinterColumns(t *testing.T, k Kind, name string, want []Column) {
	t.Helper()
	table := s.table(t, k, name)
	var got []Column
	for _, c := range table.ColumnDefinitions {
		got = append(got, Column{Name: c.Name, Priority: c.Priority})
	}
	var wantDefs []Column
	for _, c := range want {
		wantDefs = append(wantDefs, Column{Name: c.Name, Priority: c.Priority})
	}
	if !slices.Equal(got, wantDefs) {
		t.Fatalf("served printer columns of %s:\n got  %v\n want %v", k.Resource, got, wantDefs)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("want 1 row for %s %q, got %d", k.Kind, name, len(table.Rows))
	}
	row := table.Rows[0]
	for i, c := range want {
		if c.Cell == "" {
			continue
		}
		if i >= len(row.Cells) {
			t.Errorf("column %s: the row has only %d cells", c.Name, len(row.Cells))
			continue
		}
		if got := fmt.Sprint(row.Cells[i]); got != c.Cell {
			t.Errorf("column %s of %s %q: got %q, want %q", c.Name, k.Kind, name, got, c.Cell)
		}
	}
}

func (s *Suite) table(t *testing.T, k Kind, name string) *metav1.Table {
	t.Helper()
	cfg := rest.CopyConfig(s.Config)
	cfg.GroupVersion = &schema.GroupVersion{Group: k.Group, Version: k.Version}
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	rc, err := rest.RESTClientFor(cfg)
	if err != nil {
		t.Fatalf("creating a REST client: %v", err)
	}
	raw, err := rc.Get().Resource(k.Resource).Name(name).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
		DoRaw(t.Context())
	if err != nil {
		t.Fatalf("getting %s %q as a Table: %v", k.Kind, name, err)
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(raw, table); err != nil {
		t.Fatalf("decoding the Table for %s %q: %v", k.Kind, name, err)
	}
	return table
}

// AssertStatusSubresource checks that the CRD has a status subresource and that it behaves as one:
// it creates obj, writes statusYAML through /status and reads it back, then checks that a change
// to status through the main resource is ignored. It returns the stored object; it is deleted when
// the test ends.
func (s *Suite) AssertStatusSubresource(t *testing.T, k Kind, obj *unstructured.Unstructured, statusYAML string) *unstructured.Unstructured {
	t.Helper()
	if v := s.version(t, k); v.Subresources == nil || v.Subresources.Status == nil {
		t.Fatalf("CRD %s version %s has no status subresource", k.CRDName(), k.Version)
	}
	ctx := t.Context()
	if err := s.Client.Create(ctx, obj); err != nil {
		t.Fatalf("creating %s %q: %v", k.Kind, obj.GetName(), err)
	}
	t.Cleanup(func() {
		// t.Context() is already canceled when cleanups run. Best effort: the API server is discarded anyway.
		_ = s.Client.Delete(context.Background(), obj)
	})

	status := map[string]any{}
	if err := yaml.Unmarshal([]byte(statusYAML), &status); err != nil {
		t.Fatalf("status YAML: %v", err)
	}
	obj.Object["status"] = status
	if err := s.Client.Status().Update(ctx, obj); err != nil {
		t.Fatalf("updating the status of %s %q through /status: %v", k.Kind, obj.GetName(), err)
	}
	stored := s.get(t, k, obj.GetName())
	if !sameJSON(stored.Object["status"], status) {
		t.Fatalf("status written through /status was not stored:\n got  %s\n want %s", toJSON(stored.Object["status"]), toJSON(status))
	}

	changed := stored.DeepCopy()
	changed.Object["status"] = map[string]any{"observedGeneration": int64(42)}
	if err := s.Client.Update(ctx, changed); err != nil {
		t.Fatalf("updating %s %q: %v", k.Kind, obj.GetName(), err)
	}
	stored = s.get(t, k, obj.GetName())
	if !sameJSON(stored.Object["status"], status) {
		t.Fatalf("an update of the main resource changed status (no status subresource?):\n got  %s\n want %s", toJSON(stored.Object["status"]), toJSON(status))
	}
	return stored
}

func (s *Suite) get(t *testing.T, k Kind, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(k.GroupVersionKind())
	if err := s.Client.Get(t.Context(), client.ObjectKey{Name: name}, u); err != nil {
		t.Fatalf("getting %s %q: %v", k.Kind, name, err)
	}
	return u
}

func sameJSON(a, b any) bool { return toJSON(a) == toJSON(b) }

func toJSON(v any) string {
	out, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(out)
}

// AssertFieldsDocumented checks that every field of the served schema has a description, so that
// `kubectl explain` documents it.
func (s *Suite) AssertFieldsDocumented(t *testing.T, k Kind) {
	t.Helper()
	v := s.version(t, k)
	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		t.Fatalf("CRD %s version %s has no schema", k.CRDName(), k.Version)
	}
	root := v.Schema.OpenAPIV3Schema
	if root.Description == "" {
		t.Errorf("%s has no description", k.Kind)
	}
	var missing []string
	for name, prop := range root.Properties {
		if name == "metadata" {
			continue // ObjectMeta is documented by Kubernetes itself
		}
		missing = append(missing, undocumented(name, prop)...)
	}
	sort.Strings(missing)
	for _, path := range missing {
		t.Errorf("field %s of %s has no description (add godoc to the Go field)", path, k.Kind)
	}
}

func undocumented(path string, s apiextensionsv1.JSONSchemaProps) []string {
	var missing []string
	if s.Description == "" {
		missing = append(missing, path)
	}
	for name, prop := range s.Properties {
		missing = append(missing, undocumented(path+"."+name, prop)...)
	}
	if s.Items != nil && s.Items.Schema != nil {
		for name, prop := range s.Items.Schema.Properties {
			missing = append(missing, undocumented(path+"[]."+name, prop)...)
		}
	}
	return missing
}
