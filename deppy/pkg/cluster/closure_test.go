package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/olmv1/olmv1/deppy/pkg/operators"
)

// fakePartReader serves catalogs blob by blob with the field selectors of the CatalogMetadata API,
// each blob annotated with the content hash it is served from, and counts what it lists.
type fakePartReader struct {
	fakeReader
	// emptyPackageField: spec.package of olm.package blobs is empty (declcfg's Meta.Package), not the
	// package's name as catalogd serves it.
	emptyPackageField bool
	metas             map[string][]*declcfg.Meta // by catalog
	// served is the content hash each catalog's blobs carry (the catalog's hash unless a test
	// makes this replica stale); a catalog absent from metas is not served at all.
	served map[string]string
	lists  []string // "catalog?terms" per ReadPart call
	blobs  int      // blobs handed to callbacks
}

func newFakePartReader(content map[string]string, hashes map[string]string) *fakePartReader {
	f := &fakePartReader{fakeReader: fakeReader{content: content, reads: map[string]int{}},
		metas: map[string][]*declcfg.Meta{}, served: map[string]string{}}
	for name, fbc := range content {
		f.metas[name] = metasOf(fbc)
		f.served[name] = hashes[name]
	}
	return f
}

func (f *fakePartReader) ReadBlobs(_ context.Context, name string) ([]*declcfg.Meta, error) {
	f.reads[name]++
	return f.metas[name], nil
}

func (f *fakePartReader) ReadPart(_ context.Context, catalog string, terms map[string]string, pageSize int64, fn func(ServedBlob) error) error {
	var t []string
	for k, v := range terms {
		t = append(t, k+"="+v)
	}
	sort.Strings(t)
	f.lists = append(f.lists, catalog+"?"+strings.Join(t, ","))
	for _, m := range f.metas[catalog] {
		// The API's fields: spec.package is the blob's package field (empty for olm.package).
		if v, ok := terms[FieldSchema]; ok && m.Schema != v {
			continue
		}
		pkg := m.Package
		if pkg == "" && m.Schema == "olm.package" && !f.emptyPackageField {
			pkg = m.Name // as catalogd's spec.package
		}
		if v, ok := terms[FieldPackage]; ok && pkg != v {
			continue
		}
		if v, ok := terms[FieldName]; ok && m.Name != v {
			continue
		}
		f.blobs++
		if err := fn(ServedBlob{Meta: m, ContentHash: f.served[catalog]}); err != nil {
			if errors.Is(err, ErrStopRead) {
				return nil
			}
			return err
		}
	}
	return nil
}

// readPackages lists the packages read (spec.package=... lists) per catalog, sorted.
func (f *fakePartReader) readPackages() []string {
	var out []string
	for _, l := range f.lists {
		if i := strings.Index(l, FieldPackage+"="); i > 0 {
			out = append(out, l[:strings.Index(l, "?")]+"/"+l[i+len(FieldPackage)+1:])
		}
	}
	sort.Strings(out)
	return out
}

// depFBC is a package whose bundle has extra properties (dependencies, provided GVKs).
func depFBC(pkg, version, props string) string {
	return fmt.Sprintf(`{"schema":"olm.package","name":%[1]q,"defaultChannel":"stable"}
{"schema":"olm.channel","package":%[1]q,"name":"stable","entries":[{"name":"%[1]s.v%[2]s"}]}
{"schema":"olm.bundle","package":%[1]q,"name":"%[1]s.v%[2]s","image":"r/%[1]s:%[2]s","properties":[{"type":"olm.package","value":{"packageName":%[1]q,"version":%[2]q}}%[3]s]}
`, pkg, version, props)
}

const (
	needsB      = `,{"type":"olm.package.required","value":{"packageName":"b","versionRange":">=1.0.0"}}`
	needsWidget = `,{"type":"olm.gvk.required","value":{"group":"example.com","version":"v1","kind":"Widget"}}`
	provWidget  = `,{"type":"olm.gvk","value":{"group":"example.com","version":"v1","kind":"Widget"}}`
	celAny      = `,{"type":"olm.constraint","value":{"failureMessage":"x","cel":{"rule":"properties.exists(p, p.type == 'olm.label')"}}}`
	anyOfC      = `,{"type":"olm.constraint","value":{"failureMessage":"x","any":{"constraints":[{"package":{"packageName":"c","versionRange":">=1.0.0"}}]}}}`
)

func partFixture(t *testing.T) (map[string]string, []Catalog) {
	main := depFBC("a", "1.0.0", needsB) + depFBC("b", "1.0.0", needsWidget) + depFBC("w", "1.0.0", provWidget) +
		depFBC("unrelated", "1.0.0", "") + depFBC("other", "1.0.0", "")
	extra := depFBC("w2", "2.0.0", provWidget) + depFBC("lonely", "1.0.0", "")
	content := map[string]string{"main": main, "extra": extra}
	return content, []Catalog{catalog("main", hashOf(t, main), true, 0), catalog("extra", hashOf(t, extra), true, 0)}
}

func TestIndexForReadsOnlyTheDependencyClosure(t *testing.T) {
	ctx := context.Background()
	content, cats := partFixture(t)
	r := newFakePartReader(content, map[string]string{"main": cats[0].ContentHash, "extra": cats[1].ContentHash})
	c := &Cache{Reader: r, Hasher: standInHash}

	idx, names, err := c.IndexFor(ctx, cats, []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(names, ",") != "extra,main" {
		t.Fatalf("names %v", names)
	}
	// a needs b; b needs a Widget, provided by w (main) and w2 (extra): nothing else is read.
	want := "extra/a,extra/b,extra/w,extra/w2,main/a,main/b,main/w,main/w2"
	if got := strings.Join(r.readPackages(), ","); got != want {
		t.Fatalf("packages read:\n got %s\nwant %s", got, want)
	}
	if got := strings.Join(idx.Packages(), ","); got != "a,b,w,w2" {
		t.Fatalf("indexed packages %s, want a,b,w,w2", got)
	}
	if len(idx.Bundles("unrelated")) != 0 || r.reads["main"] != 0 {
		t.Fatalf("read whole catalogs or unrelated packages: reads %v", r.reads)
	}

	// The same roots and content: the same index, nothing listed.
	lists := len(r.lists)
	again, _, err := c.IndexFor(ctx, cats, []string{"a"})
	if err != nil || again != idx || len(r.lists) != lists {
		t.Fatalf("unchanged: same index %v, new lists %d, err %v", again == idx, len(r.lists)-lists, err)
	}

	// A new root reads only that package (of each catalog); providers are not scanned again.
	lists = len(r.lists)
	idx, _, err = c.IndexFor(ctx, cats, []string{"a", "lonely"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.lists[lists:], " "); !strings.Contains(got, "lonely") || strings.Contains(got, "a,") || strings.Contains(got, "olm.bundle") {
		t.Fatalf("lists for the new root: %s", got)
	}
	if len(idx.Bundles("lonely")) != 1 || len(idx.Bundles("a")) != 1 {
		t.Fatalf("index after new root: %v", idx.Packages())
	}
}

func TestIndexForResolvesLikeIndex(t *testing.T) {
	ctx := context.Background()
	content, cats := partFixture(t)
	hashes := map[string]string{"main": cats[0].ContentHash, "extra": cats[1].ContentHash}
	whole, _, err := (&Cache{Reader: newFakePartReader(content, hashes), Hasher: standInHash}).Index(ctx, cats)
	if err != nil {
		t.Fatal(err)
	}
	part, _, err := (&Cache{Reader: newFakePartReader(content, hashes)}).IndexFor(ctx, cats, []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	reqs := []operators.Request{{Name: "op-a", Package: "a", InstallDependencies: true}}
	if w, p := outcomes(operators.Resolve(ctx, whole, reqs)), outcomes(operators.Resolve(ctx, part, reqs)); w != p {
		t.Fatalf("resolutions differ:\nwhole %s\npart  %s", w, p)
	}
}

func TestIndexForChecksTheServedContent(t *testing.T) {
	ctx := context.Background()
	content, cats := partFixture(t)

	// A stale replica: its blobs carry another content hash.
	r := newFakePartReader(content, map[string]string{"main": "sha256:0000000000000000old", "extra": cats[1].ContentHash})
	c := &Cache{Reader: r}
	_, _, err := c.IndexFor(ctx, cats, []string{"a"})
	var mismatch *ContentMismatchError
	if !errors.As(err, &mismatch) || mismatch.Catalog != "main" || mismatch.RetryAfter <= 0 {
		t.Fatalf("want a mismatch of catalog main with a retry, got %v", err)
	}
	if !strings.Contains(err.Error(), "served from content sha256:000000000000") {
		t.Fatalf("message does not say what was read: %v", err)
	}
	// Until the retry time, the same error comes back without listing.
	lists := len(r.lists)
	if _, _, err := c.IndexFor(ctx, cats, []string{"a"}); !errors.As(err, &mismatch) || len(r.lists) != lists {
		t.Fatalf("retry before its time: %v, %d lists", err, len(r.lists)-lists)
	}

	// A replica without the catalog answers empty lists: an absent package is not believed.
	r = newFakePartReader(content, map[string]string{"main": cats[0].ContentHash, "extra": cats[1].ContentHash})
	delete(r.metas, "extra")
	_, _, err = (&Cache{Reader: r}).IndexFor(ctx, cats, []string{"a"})
	if !errors.As(err, &mismatch) || mismatch.Catalog != "extra" || !strings.Contains(err.Error(), "none of the catalog") {
		t.Fatalf("want a mismatch for the unserved catalog extra, got %v", err)
	}

	// Blobs without the annotation (an older catalogd) are refused with a message that says so.
	r = newFakePartReader(content, map[string]string{"main": "", "extra": ""})
	if _, _, err = (&Cache{Reader: r}).IndexFor(ctx, cats, []string{"a"}); err == nil || !strings.Contains(err.Error(), AnnotationContentHash) {
		t.Fatalf("want a mismatch naming the annotation, got %v", err)
	}
}

func TestIndexForConstraints(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, props string
		whole       bool
		packages    string
	}{
		{"package constraint reads the package", anyOfC, false, "a,c"},
		{"cel constraint reads catalogs whole", celAny, true, "a,c,z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fbc := depFBC("a", "1.0.0", tc.props) + depFBC("c", "1.0.0", "") + depFBC("z", "1.0.0", "")
			cats := []Catalog{catalog("main", hashOf(t, fbc), true, 0)}
			r := newFakePartReader(map[string]string{"main": fbc}, map[string]string{"main": cats[0].ContentHash})
			idx, _, err := (&Cache{Reader: r}).IndexFor(ctx, cats, []string{"a"})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(idx.Packages(), ","); got != tc.packages {
				t.Fatalf("indexed %s, want %s", got, tc.packages)
			}
			if (r.reads["main"] > 0) != tc.whole {
				t.Fatalf("whole reads %d, want whole=%v", r.reads["main"], tc.whole)
			}
		})
	}
}

// TestIndexForRealCatalog resolves every package of a real community catalog with a part index and
// with the whole catalog: the decisions must be the same.
func TestIndexForRealCatalog(t *testing.T) {
	root := os.Getenv("OLMV1_TESTDATA")
	if root == "" {
		root = filepath.Join("..", "..", "..", "..", "shared", "testdata")
	}
	dir := filepath.Join(root, "catalogs", "community-v4.20")
	cfg, err := declcfg.LoadFS(context.Background(), os.DirFS(dir))
	if err != nil {
		t.Skipf("real catalog %s is absent (set OLMV1_TESTDATA to the shared testdata folder to run this): %v", dir, err)
	}
	var metas []*declcfg.Meta
	var mu sync.Mutex // WalkMetasFS calls back from several goroutines at once
	if err := declcfg.WalkMetasFS(context.Background(), os.DirFS(dir), func(_ string, m *declcfg.Meta, err error) error {
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		metas = append(metas, m)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	hash, err := standInHash(context.Background(), metas)
	if err != nil {
		t.Fatal(err)
	}
	cats := []Catalog{catalog("community", hash, true, 0)}
	r := &fakePartReader{fakeReader: fakeReader{reads: map[string]int{}}, metas: map[string][]*declcfg.Meta{"community": metas},
		served: map[string]string{"community": hash}}
	ctx := context.Background()
	whole, _, err := (&Cache{Reader: r, Hasher: standInHash}).Index(ctx, cats)
	if err != nil {
		t.Fatal(err)
	}
	pc := &Cache{Reader: r}
	checked, fewer := 0, 0
	for _, p := range cfg.Packages {
		reqs := []operators.Request{{Name: "op", Package: p.Name, InstallDependencies: true}}
		part, _, err := pc.IndexFor(ctx, cats, []string{p.Name})
		if err != nil {
			t.Fatalf("package %s: %v", p.Name, err)
		}
		if w, got := outcomes(operators.Resolve(ctx, whole, reqs)), outcomes(operators.Resolve(ctx, part, reqs)); w != got {
			t.Fatalf("package %s resolves differently:\nwhole %s\npart  %s", p.Name, w, got)
		}
		checked++
		if len(part.AllBundles()) < len(whole.AllBundles()) {
			fewer++
		}
	}
	if checked < 30 || fewer != checked {
		t.Fatalf("checked %d packages, %d with a smaller index", checked, fewer)
	}
}

// outcomes prints resolution outcomes by value, in name order.
func outcomes(m map[string]operators.Outcome) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		o := m[n]
		fmt.Fprintf(&b, "%s: ", n)
		if o.Bundle != nil {
			fmt.Fprintf(&b, "%+v ", *o.Bundle)
		}
		if o.UpgradeAvailable != nil {
			fmt.Fprintf(&b, "upgrade %+v ", *o.UpgradeAvailable)
		}
		fmt.Fprintf(&b, "%q\n", o.Message)
	}
	return b.String()
}

// TestIndexForServerWithEmptyPackageField: a server whose spec.package of olm.package blobs is empty
// is asked for the olm.package blob by name; nothing is read twice.
func TestIndexForServerWithEmptyPackageField(t *testing.T) {
	ctx := context.Background()
	content, cats := partFixture(t)
	r := newFakePartReader(content, map[string]string{"main": cats[0].ContentHash, "extra": cats[1].ContentHash})
	r.emptyPackageField = true
	idx, _, err := (&Cache{Reader: r}).IndexFor(ctx, cats, []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(idx.Packages(), ","); got != "a,b,w,w2" {
		t.Fatalf("indexed packages %s, want a,b,w,w2", got)
	}
	if len(idx.PackageInfo("a")) != 1 {
		t.Fatalf("package a: %d olm.package entries, want 1", len(idx.PackageInfo("a")))
	}
}

// TestIndexForReadsManyPackagesInOnePass: the first resolution of many Operators reads each catalog
// in one pass (one list without a package selector), keeping only the packages needed.
func TestIndexForReadsManyPackagesInOnePass(t *testing.T) {
	ctx := context.Background()
	var fbc strings.Builder
	var roots []string
	for i := 0; i < 12; i++ {
		pkg := fmt.Sprintf("p%02d", i)
		fbc.WriteString(pkgFBC(pkg, "1.0.0"))
		if i < 10 {
			roots = append(roots, pkg)
		}
	}
	cats := []Catalog{catalog("main", hashOf(t, fbc.String()), true, 0)}
	r := newFakePartReader(map[string]string{"main": fbc.String()}, map[string]string{"main": cats[0].ContentHash})
	c := &Cache{Reader: r}
	idx, _, err := c.IndexFor(ctx, cats, append(roots, "absent"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(r.lists, " ") != "main?" {
		t.Fatalf("lists %v, want one pass over the catalog", r.lists)
	}
	if got := len(idx.Packages()); got != 10 {
		t.Fatalf("indexed %d packages, want the 10 roots: %v", got, idx.Packages())
	}
	// One more root: one list of its own.
	if _, _, err := c.IndexFor(ctx, cats, append(roots, "p11")); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.lists[1:], " "); got != "main?spec.package=p11" {
		t.Fatalf("lists for one new root: %s", got)
	}

	// The same pass from a replica that serves nothing is a mismatch, not ten absent packages.
	r = newFakePartReader(map[string]string{"main": fbc.String()}, map[string]string{"main": cats[0].ContentHash})
	delete(r.metas, "main")
	var mismatch *ContentMismatchError
	if _, _, err := (&Cache{Reader: r}).IndexFor(ctx, cats, roots); !errors.As(err, &mismatch) {
		t.Fatalf("want a mismatch, got %v", err)
	}
}
