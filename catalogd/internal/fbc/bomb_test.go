package fbc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/olmv1/olmv1/platform/sharedtestdata"
)

// The bounds of issue 18 for a catalog of nested YAML aliases (stated for `kubectl olmv1 catalog
// validate`, which runs Load): refused within 5 s, using less than 200 MB.
const (
	bombTimeBound  = 5 * time.Second
	bombAllocBound = 200 << 20
)

// nestedAliases is the classic "billion laughs": levels anchors, each a list of fan aliases of the
// one before, under a package blob's keys: fan^levels strings.
func nestedAliases(levels, fan int) string {
	var b strings.Builder
	b.WriteString("schema: olm.package\nname: laughs\nl0: &l0 \"lol\"\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", i-1), fan), ","))
	}
	return b.String()
}

// longStringAliases references one long string many times: few nodes (go-yaml's own guard counts
// nodes and lets it through), but refs*size bytes of JSON.
func longStringAliases(size, refs int) string {
	return "schema: olm.package\nname: strings\ns: &s \"" + strings.Repeat("x", size) + "\"\nl: [" +
		strings.TrimSuffix(strings.Repeat("*s,", refs), ",") + "]\n"
}

// underGoYAMLRatio keeps the share of aliased nodes under go-yaml's guard with real nodes: it
// makes go-yaml build a tree of a few hundred thousand nodes before refusing or accepting it.
func underGoYAMLRatio() string {
	var b strings.Builder
	b.WriteString("schema: olm.package\nname: tuned\nfill: [")
	for i := range 4000 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("{a: 1}")
	}
	b.WriteString("]\na0: &a0 {k: v}\n")
	for l := 1; l <= 5; l++ {
		fmt.Fprintf(&b, "a%d: &a%d [%s]\n", l, l, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d,", l-1), 10), ","))
	}
	return b.String()
}

// mergeKeys expands through YAML merge keys ("<<: *x") rather than plain aliases.
func mergeKeys(levels int) string {
	var b strings.Builder
	b.WriteString("schema: olm.package\nname: merges\nm0: &m0 {a: \"" + strings.Repeat("y", 200) + "\", b: \"" + strings.Repeat("z", 200) + "\"}\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "m%d: &m%d\n", i, i)
		for j := range 8 {
			fmt.Fprintf(&b, "  k%d: {<<: *m%d}\n", j, i-1)
		}
	}
	return b.String()
}

// measure runs fn and returns how long it took and how many bytes it allocated.
func measure(fn func()) (time.Duration, uint64) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	fn()
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	return elapsed, after.TotalAlloc - before.TotalAlloc
}

// TestLoadRefusesAliasBombs: every way of expanding YAML aliases into much more than the document
// is refused by Load as invalid content (not retryable), naming the file, the document's line and
// the reason, within the bounds of time and memory (measured: allocations of the call).
func TestLoadRefusesAliasBombs(t *testing.T) {
	valid := "schema: olm.package\nname: fine\n"
	for name, tc := range map[string]struct {
		file, data string
		line       int
	}{
		"nested lists, 9^9 strings":              {"laughs/catalog.yaml", nestedAliases(9, 9), 1},
		"nested lists, 100^4 strings":            {"laughs/catalog.yaml", nestedAliases(4, 100), 1},
		"999 aliases of a 1 MiB string":          {"strings/catalog.yaml", longStringAliases(1<<20, 999), 1},
		"under go-yaml's own ratio":              {"tuned/catalog.yaml", underGoYAMLRatio(), 1},
		"merge keys":                             {"merges/catalog.yaml", mergeKeys(8), 1},
		"flow style":                             {"flow/catalog.yaml", "{schema: olm.package, name: flow, a: &a [x, x, x, x, x, x, x, x], b: &b [*a, *a, *a, *a, *a, *a, *a, *a], c: &c [*b, *b, *b, *b, *b, *b, *b, *b], d: &d [*c, *c, *c, *c, *c, *c, *c, *c], e: [*d, *d, *d, *d, *d, *d, *d, *d]}\n", 1},
		"second document":                        {"two/catalog.yaml", valid + "---\n" + nestedAliases(9, 9), 4},
		"YAML after a JSON value":                {"mixed/catalog.json", `{"schema":"olm.package","name":"json"}` + "\n" + nestedAliases(9, 9), 2},
		"aliases in a bundle's olm.csv.metadata": {"bundle/catalog.yaml", "schema: olm.bundle\npackage: p\nname: p.v1.0.0\nimage: example.com/p:1\nd: &d \"" + strings.Repeat("lol ", 1<<16) + "\"\nproperties:\n- type: olm.csv.metadata\n  value:\n    description: &dd [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n    more: [*dd, *dd, *dd, *dd, *dd, *dd, *dd, *dd]\n", 1},
	} {
		t.Run(name, func(t *testing.T) {
			root := fstest.MapFS{tc.file: {Data: []byte(tc.data)}}
			var err error
			elapsed, alloc := measure(func() { _, err = Load(context.Background(), root) })
			t.Logf("refused a %d-byte file in %v, allocating %.1f MiB", len(tc.data), elapsed, float64(alloc)/(1<<20))
			if err == nil {
				t.Fatal("Load accepted the catalog")
			}
			if !IsInvalid(err) || !errors.Is(err, errAliasExpansion) {
				t.Fatalf("want an InvalidError for YAML aliases, got %T: %v", err, err)
			}
			for _, want := range []string{
				fmt.Sprintf("file %q", tc.file),
				fmt.Sprintf("YAML document starting at line %d", tc.line),
				"refused: its YAML aliases (*name)",
				"write the repeated content out",
			} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message lacks %q:\n%v", want, err)
				}
			}
			if elapsed > bombTimeBound || alloc > bombAllocBound {
				t.Errorf("took %v and allocated %d bytes; the bound is %v and %d bytes", elapsed, alloc, bombTimeBound, bombAllocBound)
			}
		})
	}
}

// TestGoYAMLGuardIsReportedAsAliasRefusal: where go-yaml's own guard trips first (its ratio check,
// reached only if the node check did not refuse), the message is the same refusal, quoting go-yaml.
func TestGoYAMLGuardIsReportedAsAliasRefusal(t *testing.T) {
	err := fromGoYAMLError(errors.New("yaml: document contains excessive aliasing"))
	if !errors.Is(err, errAliasExpansion) || !strings.Contains(err.Error(), "make up most of its nodes (go-yaml: yaml: document contains excessive aliasing)") {
		t.Fatalf("got %v", err)
	}
	other := errors.New("yaml: line 2: mapping values are not allowed in this context")
	if got := fromGoYAMLError(other); got != other {
		t.Fatalf("other errors must be kept, got %v", got)
	}
}

// TestJSONBudgetRefusesWhatTheNodeCheckMisses: should the node check and go-yaml ever disagree on a
// document, the canonical encoding still stops at the same bound.
func TestJSONBudgetRefusesWhatTheNodeCheckMisses(t *testing.T) {
	long := strings.Repeat("x", 1000)
	v := map[any]any{"schema": "olm.package", "l": []any{long, long, long, long, long, long, long, long, long, long, long, long}}
	budget := expansionLimit(1000)
	if _, err := jsonable(v, &budget); !errors.Is(err, errBudget) {
		t.Fatalf("12 KB of content against a budget of %d: got %v, want errBudget", expansionLimit(1000), err)
	}
	budget = expansionLimit(2000)
	if _, err := jsonable(v, &budget); err != nil {
		t.Fatalf("12 KB of content against a budget of %d: %v", expansionLimit(2000), err)
	}
}

// TestModestAliasesAreAccepted: anchors and aliases that repeat a little are fine, and give the
// same blob as the content written out in full.
func TestModestAliasesAreAccepted(t *testing.T) {
	withAliases := `schema: olm.bundle
package: foo
name: foo.v0.1.0
image: example.com/foo:v0.1.0
relatedImages:
- &operator {name: operator, image: "example.com/foo:v0.1.0"}
- &proxy {name: proxy, image: "example.com/proxy:v2"}
properties:
- type: olm.package
  value: {packageName: foo, version: 0.1.0}
- type: example.images
  value: [*operator, *proxy, *operator]
`
	written := `schema: olm.bundle
package: foo
name: foo.v0.1.0
image: example.com/foo:v0.1.0
relatedImages:
- {name: operator, image: "example.com/foo:v0.1.0"}
- {name: proxy, image: "example.com/proxy:v2"}
properties:
- type: olm.package
  value: {packageName: foo, version: 0.1.0}
- type: example.images
  value: [{name: operator, image: "example.com/foo:v0.1.0"}, {name: proxy, image: "example.com/proxy:v2"}, {name: operator, image: "example.com/foo:v0.1.0"}]
`
	if !mayHaveAliases([]byte(withAliases)) {
		t.Fatal("mayHaveAliases misses the aliases")
	}
	blob := func(doc string) []byte {
		t.Helper()
		var got []Meta
		err := walkMetas(context.Background(), fstest.MapFS{"c.yaml": {Data: []byte(doc)}}, func(_ string, m *declcfg.Meta, err error) error {
			if err != nil {
				return err
			}
			cm, err := canonicalize(m)
			cm.Blob = slices.Clone(cm.Blob) // m.Blob is the walk's buffer
			got = append(got, cm)
			return err
		})
		if err != nil || len(got) != 1 {
			t.Fatalf("walk: %v, %d blobs", err, len(got))
		}
		return got[0].Blob
	}
	if a, b := blob(withAliases), blob(written); !bytes.Equal(a, b) {
		t.Fatalf("with aliases:\n%s\nwritten out:\n%s", a, b)
	}
}

func TestMayHaveAliases(t *testing.T) {
	for doc, want := range map[string]bool{
		"a: &x 1\nb: *x\n":             true,
		"a: &x-1_Y [1]\nb: [*x-1_Y]\n": true,
		"a: &x {k: v}\nb: {<<: *x}\n":  true,
		"{a: &x 1, b: *x}":             true,
		"a: &x 1\nb: *x":               true, // at the end
		"a: &x 1\nb: [*x,*x]\n":        true,
		"a: &x 1\nb: *x\u2028":         true, // a line break go-yaml knows
		"a: &x 1\n":                    false,
		"b: *x\n":                      false, // an alias with no anchor (go-yaml refuses it)
		"a: &x 1\nb: *y\n":             false,
		"d: \"**bold** and *italic* R&D &amp; *.io\"\n": false,
		"a: &x.y 1\nb: *x.y\n":                          false, // not an anchor name to go-yaml v2
		"":                                              false,
	} {
		if got := mayHaveAliases([]byte(doc)); got != want {
			t.Errorf("mayHaveAliases(%q) = %v, want %v", doc, got, want)
		}
	}
}

// TestRealCatalogsHaveNoAliases: no document of the real catalogs looks as if it had an alias, so
// the alias check costs them two byte scans per document and no second parse.
func TestRealCatalogsHaveNoAliases(t *testing.T) {
	root, ok := sharedtestdata.Root()
	if _, err := os.Stat(filepath.Join(root, "catalogs", "community-v4.20")); !ok || err != nil {
		t.Skipf("real catalogs are absent under %q (set OLMV1_TESTDATA to the shared testdata folder)", root)
	}
	docs := 0
	for _, dir := range []string{"catalogs/community-v4.20", "catalogs/community-v4.16"} {
		fsys := os.DirFS(filepath.Join(root, dir))
		err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			fail := func(_ string, _ *declcfg.Meta, err error) error { return err }
			return splitFile(fsys, p, fail, func(doc document) error {
				docs++
				if mayHaveAliases(doc.data) {
					t.Errorf("%s/%s line %d looks as if it had aliases", dir, p, doc.line)
				}
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d documents checked", docs)
}
