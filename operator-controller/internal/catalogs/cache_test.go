package catalogs

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
)

type fakeReader struct {
	content map[string]string
	reads   map[string]int
}

func (f *fakeReader) ReadCatalog(_ context.Context, name string) (*declcfg.DeclarativeConfig, error) {
	f.reads[name]++
	fbc, ok := f.content[name]
	if !ok {
		return nil, fmt.Errorf("catalog %q not found", name)
	}
	return declcfg.LoadReader(strings.NewReader(fbc))
}

func pkgFBC(pkg, version string) string {
	return fmt.Sprintf(`{"schema":"olm.package","name":%[1]q,"defaultChannel":"stable"}
{"schema":"olm.channel","package":%[1]q,"name":"stable","entries":[{"name":"%[1]s.v%[2]s"}]}
{"schema":"olm.bundle","package":%[1]q,"name":"%[1]s.v%[2]s","image":"r/%[1]s:%[2]s","properties":[{"type":"olm.package","value":{"packageName":%[1]q,"version":%[2]q}}]}
`, pkg, version)
}

func catalog(name, hash string, serving bool, priority int32) catalogdv1alpha1.Catalog {
	c := catalogdv1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: catalogdv1alpha1.CatalogSpec{Priority: priority}}
	c.Status.ContentHash = hash
	status := metav1.ConditionFalse
	if serving {
		status = metav1.ConditionTrue
	}
	c.Status.Conditions = []metav1.Condition{{Type: catalogdv1alpha1.TypeServing, Status: status, Reason: "Test"}}
	return c
}

// TestCacheReadsServingCatalogsWithTheirPriority: what this wrapper adds to deppy's cluster.Cache
// (whose own tests cover re-reads, hash checks and backoff): catalogd Catalogs are read when they
// are Serving with a content hash, with spec.priority as the bundles' catalog priority, and an
// unreadable catalog fails the call.
func TestCacheReadsServingCatalogsWithTheirPriority(t *testing.T) {
	ctx := context.Background()
	r := &fakeReader{content: map[string]string{"one": pkgFBC("a", "1.0.0"), "two": pkgFBC("b", "1.0.0"), "off": pkgFBC("c", "1.0.0")}, reads: map[string]int{}}
	c := &Cache{Reader: r}

	cats := []catalogdv1alpha1.Catalog{catalog("two", "h2", true, 0), catalog("one", "h1", true, 5), catalog("off", "h3", false, 0), catalog("nohash", "", true, 0)}
	idx, names, err := c.Index(ctx, cats)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(names, ",") != "one,two" || len(idx.Bundles("a")) != 1 || len(idx.Bundles("c")) != 0 {
		t.Fatalf("names %v, packages %v", names, idx.Packages())
	}
	if idx.Bundles("a")[0].CatalogPriority != 5 || idx.Bundles("b")[0].CatalogPriority != 0 {
		t.Errorf("priorities %d and %d, want 5 and 0", idx.Bundles("a")[0].CatalogPriority, idx.Bundles("b")[0].CatalogPriority)
	}
	if r.reads["off"] != 0 || r.reads["nohash"] != 0 {
		t.Errorf("catalogs that are not serving were read: %v", r.reads)
	}
	if _, _, err := c.Index(ctx, []catalogdv1alpha1.Catalog{catalog("missing", "x", true, 0)}); err == nil {
		t.Fatal("want an error for an unreadable catalog")
	}
}
