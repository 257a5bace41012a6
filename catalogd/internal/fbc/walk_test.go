package fbc

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// collector gathers the canonical blobs a walker hands to its callback (from several goroutines).
type collector struct {
	mu    sync.Mutex
	metas []Meta
}

func (c *collector) add(path string, m *declcfg.Meta, err error) error {
	if err != nil {
		return fmt.Errorf("file %s: %w", path, err)
	}
	cm, err := canonicalize(m)
	if err != nil {
		return err
	}
	cm.Blob = slices.Clone(cm.Blob) // m.Blob is the walk's buffer
	c.mu.Lock()
	c.metas = append(c.metas, cm)
	c.mu.Unlock()
	return nil
}

func (c *collector) sorted() []Meta {
	slices.SortFunc(c.metas, compareMeta)
	return c.metas
}

// declcfgMetas is the reference walker: operator-registry's WalkMetasFS, blobs canonicalised.
func declcfgMetas(t *testing.T, root fs.FS) []Meta {
	t.Helper()
	var c collector
	if err := declcfg.WalkMetasFS(context.Background(), root, c.add); err != nil {
		t.Fatalf("declcfg.WalkMetasFS: %v", err)
	}
	return c.sorted()
}

func ourMetas(t *testing.T, root fs.FS) ([]Meta, error) {
	t.Helper()
	var c collector
	err := walkMetas(context.Background(), root, c.add)
	return c.sorted(), err
}

func assertSameMetas(t *testing.T, root fs.FS) {
	t.Helper()
	want := declcfgMetas(t, root)
	got, err := ourMetas(t, root)
	if err != nil {
		t.Fatalf("walkMetas: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("walkMetas found %d blobs, declcfg %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Schema != w.Schema || g.Package != w.Package || g.Name != w.Name || string(g.Blob) != string(w.Blob) {
			t.Fatalf("blob %d differs:\n got  %s %s %s %.300s\n want %s %s %s %.300s", i, g.Schema, g.Package, g.Name, g.Blob, w.Schema, w.Package, w.Name, w.Blob)
		}
	}
}

// TestWalkMatchesDeclcfg: the walker yields exactly the blobs of operator-registry's walker, in
// canonical form, for YAML and JSON quirks (numbers, non-string keys, HTML characters, case of the
// meta keys, comments, separators, .indexignore).
func TestWalkMatchesDeclcfg(t *testing.T) {
	assertSameMetas(t, mapFS(map[string]string{
		"a/catalog.yaml": "---\n" + pkgYAML + "---\n" + chanYAML + "--- \n" + bundlesYAML,
		"b/all.json":     sameAsJSON,
		"c/odd.yaml": `Schema: example.custom
Package: foo
Name: odd
description: "<b>bold</b> & \u2028 co"
numbers: [1, 1.0, 1.5, -0, 1e3, 12345678901234567890, 0x1F, 010]
keys: {1: one, 2.5: two-and-a-half, true: yes, null-ish: ~}
when: 2024-01-02
multi: |
  ---
  not a separator, indented
folded: >
  a
  b
`,
		"d/.indexignore": "*.md\n",
		"d/README.md":    "# not a catalog",
		"d/pkg.yml":      strings.Replace(pkgYAML, "foo", "bar", 1),
	}))
}

// TestWalkMatchesDeclcfgOnRealCatalogs: the same on the real community catalogs.
func TestWalkMatchesDeclcfgOnRealCatalogs(t *testing.T) {
	for _, c := range []string{"catalogs/community-v4.20", "catalogs/community-v4.16"} {
		t.Run(c, func(t *testing.T) {
			assertSameMetas(t, os.DirFS(testdataDir(t, c)))
		})
	}
}

// TestWalkSkipsCommentOnlyDocuments: documents that hold only comments are not blobs (declcfg's
// walker fails on them with "unexpected end of JSON input").
func TestWalkSkipsCommentOnlyDocuments(t *testing.T) {
	got, err := ourMetas(t, mapFS(map[string]string{"c.yaml": "# header\n---\n" + pkgYAML + "---\n# trailer\n\n"}))
	if err != nil || len(got) != 1 || got[0].Schema != "olm.package" {
		t.Fatalf("walkMetas = %v, %v", got, err)
	}
}

// TestWalkErrorsNameFileAndLine: a parse error names the file and the line of its document.
func TestWalkErrorsNameFileAndLine(t *testing.T) {
	cases := map[string]struct {
		files map[string]string
		want  []string
	}{
		"yaml syntax": {
			files: map[string]string{"p/catalog.yaml": pkgYAML + "---\n" + "schema: olm.channel\nname: [oops\n"},
			want:  []string{"p/catalog.yaml", "YAML document starting at line 5", "line 2"},
		},
		"json syntax": {
			files: map[string]string{"p/catalog.json": "{\"schema\":\"olm.package\",\"name\":\"foo\"}\n{\"schema\":\n"},
			want:  []string{"p/catalog.json", "line 2"},
		},
		"not an object": {
			files: map[string]string{"x.yaml": "- a\n- b\n"},
			want:  []string{"x.yaml", "must be an object"},
		},
		"meta key not a string": {
			files: map[string]string{"x.yaml": "schema: olm.package\nname: 5\n"},
			want:  []string{"x.yaml", `"name" must be a string`},
		},
		"duplicate keys that differ in case": {
			files: map[string]string{"x.yaml": "schema: olm.package\nName: a\nname: b\n"},
			want:  []string{"x.yaml", "duplicate keys"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ourMetas(t, mapFS(tc.files))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestHeavyPropertiesAreValidated: olm.csv.metadata and olm.bundle.object values are parsed once
// outside the model conversion; a bad one fails Load with the message the conversion would give.
func TestHeavyPropertiesAreValidated(t *testing.T) {
	bundle := func(csvMeta string) string {
		return `schema: olm.bundle
package: foo
name: foo.v0.1.0
image: example.com/foo:v0.1.0
properties:
- type: olm.package
  value: {packageName: foo, version: 0.1.0}
- type: olm.gvk
  value: {group: example.com, kind: Foo, version: v1}
- type: olm.csv.metadata
  value: ` + csvMeta + `
`
	}
	files := func(csvMeta string) map[string]string {
		return map[string]string{"c.yaml": pkgYAML + "---\n" + strings.Replace(chanYAML, "- name: foo.v0.2.0\n  replaces: foo.v0.1.0\n", "", 1) + "---\n" + bundle(csvMeta)}
	}
	if _, err := Load(t.Context(), mapFS(files(`{displayName: Foo, annotations: {a: b}, installModes: [{type: AllNamespaces, supported: true}]}`))); err != nil {
		t.Fatalf("valid csv metadata: %v", err)
	}
	bad := files(`{annotations: [not, a, map]}`)
	_, err := Load(t.Context(), mapFS(bad))
	if err == nil || !IsInvalid(err) {
		t.Fatalf("Load of an invalid olm.csv.metadata = %v", err)
	}
	cfg, lerr := declcfg.LoadFS(t.Context(), mapFS(bad))
	if lerr != nil {
		t.Fatal(lerr)
	}
	_, want := declcfg.ConvertToModel(*cfg)
	if want == nil || err.Error() != want.Error() {
		t.Errorf("error %q, want the model conversion's %q", err, want)
	}
}
