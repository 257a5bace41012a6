package catalogs

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	metadatav1alpha1 "github.com/olmv1/olmv1/catalogd/api/metadata/v1alpha1"
)

// fakeMetadataAPI serves CatalogMetadata lists the way catalogd does: filtered by spec.catalog and
// paginated with limit/continue.
type fakeMetadataAPI struct {
	client.Reader
	blobs []metadatav1alpha1.CatalogMetadata
	calls []string // field selector and continue token of each call
}

func (f *fakeMetadataAPI) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := &client.ListOptions{}
	o.ApplyOptions(opts)
	f.calls = append(f.calls, o.FieldSelector.String()+"|"+o.Continue)
	catalog, ok := o.FieldSelector.RequiresExactMatch(metadatav1alpha1.FieldCatalog)
	if !ok {
		return errors.New("want a spec.catalog field selector")
	}
	var match []metadatav1alpha1.CatalogMetadata
	for _, b := range f.blobs {
		if b.Spec.Catalog == catalog {
			match = append(match, b)
		}
	}
	start := 0
	if o.Continue != "" {
		start, _ = strconv.Atoi(o.Continue)
	}
	end := len(match)
	l := list.(*metadatav1alpha1.CatalogMetadataList)
	if o.Limit > 0 && start+int(o.Limit) < end {
		end = start + int(o.Limit)
		l.Continue = strconv.Itoa(end)
	} else {
		l.Continue = ""
	}
	l.Items = match[start:end]
	return nil
}

func blobsOf(t *testing.T, catalog, fbc string) []metadatav1alpha1.CatalogMetadata {
	t.Helper()
	var out []metadatav1alpha1.CatalogMetadata
	for _, line := range strings.Split(strings.TrimSpace(fbc), "\n") {
		var m struct{ Schema, Package, Name string }
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, metadatav1alpha1.CatalogMetadata{Spec: metadatav1alpha1.CatalogMetadataSpec{
			Catalog: catalog, Schema: m.Schema, Package: m.Package, Name: m.Name, Content: runtime.RawExtension{Raw: []byte(line)},
		}})
	}
	return out
}

func TestMetadataReaderPaginatesOneCatalog(t *testing.T) {
	api := &fakeMetadataAPI{blobs: append(blobsOf(t, "one", pkgFBC("a", "1.0.0")+pkgFBC("b", "2.0.0")), blobsOf(t, "two", pkgFBC("c", "1.0.0"))...)}
	r := &MetadataReader{Client: api, PageSize: 2}
	cfg, err := r.ReadCatalog(context.Background(), "one")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Packages) != 2 || len(cfg.Channels) != 2 || len(cfg.Bundles) != 2 || cfg.Bundles[1].Image != "r/b:2.0.0" {
		t.Fatalf("read %d packages, %d channels, %d bundles: %+v", len(cfg.Packages), len(cfg.Channels), len(cfg.Bundles), cfg.Bundles)
	}
	if len(api.calls) != 3 || api.calls[0] != "spec.catalog=one|" || api.calls[1] != "spec.catalog=one|2" {
		t.Errorf("list calls %v", api.calls)
	}
}

type failingAPI struct{ client.Reader }

func (failingAPI) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New(`the server could not find the requested resource`)
}

func TestMetadataReaderSaysWhatToCheck(t *testing.T) {
	_, err := (&MetadataReader{Client: failingAPI{}}).ReadCatalog(context.Background(), "one")
	if err == nil || !strings.Contains(err.Error(), `catalog "one"`) || !strings.Contains(err.Error(), "apiservices") {
		t.Fatalf("error %v", err)
	}
}

func TestAddToSchemeGivesOneKind(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	gvk, err := apiutil.GVKForObject(&metadatav1alpha1.CatalogMetadataList{}, s)
	if err != nil || gvk != metadatav1alpha1.SchemeGroupVersion.WithKind("CatalogMetadataList") {
		t.Fatalf("GVK %v, %v", gvk, err)
	}
}
