package fbc

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

const pkgYAML = `schema: olm.package
name: foo
defaultChannel: stable
`

const chanYAML = `schema: olm.channel
package: foo
name: stable
entries:
- name: foo.v0.1.0
- name: foo.v0.2.0
  replaces: foo.v0.1.0
`

const bundlesYAML = `schema: olm.bundle
package: foo
name: foo.v0.1.0
image: example.com/foo:v0.1.0
properties:
- type: olm.package
  value: {packageName: foo, version: 0.1.0}
---
schema: olm.bundle
package: foo
name: foo.v0.2.0
image: example.com/foo:v0.2.0
properties:
- type: olm.package
  value: {packageName: foo, version: 0.2.0}
`

// The same catalog as pkgYAML+chanYAML+bundlesYAML, as JSON with other key and blob orders.
const sameAsJSON = `{"name":"foo.v0.2.0","schema":"olm.bundle","package":"foo","properties":[{"value":{"version":"0.2.0","packageName":"foo"},"type":"olm.package"}],"image":"example.com/foo:v0.2.0"}
{"defaultChannel":"stable","name":"foo","schema":"olm.package"}
{"package":"foo","entries":[{"name":"foo.v0.1.0"},{"replaces":"foo.v0.1.0","name":"foo.v0.2.0"}],"schema":"olm.channel","name":"stable"}
{"schema":"olm.bundle","image":"example.com/foo:v0.1.0","package":"foo","name":"foo.v0.1.0","properties":[{"type":"olm.package","value":{"packageName":"foo","version":"0.1.0"}}]}
`

func mapFS(files map[string]string) fstest.MapFS {
	m := fstest.MapFS{}
	for k, v := range files {
		m[k] = &fstest.MapFile{Data: []byte(v), Mode: 0o644}
	}
	return m
}

func mustLoad(t *testing.T, files map[string]string) *Catalog {
	t.Helper()
	c, err := Load(t.Context(), mapFS(files))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c
}

func TestLoadCountsAndCanonicalStream(t *testing.T) {
	c := mustLoad(t, map[string]string{"catalog.yaml": pkgYAML + "---\n" + chanYAML + "---\n" + bundlesYAML})
	if c.Counts != (Counts{Packages: 1, Channels: 1, Bundles: 2}) {
		t.Errorf("counts = %+v", c.Counts)
	}
	var buf bytes.Buffer
	n, err := c.WriteTo(&buf)
	if err != nil || n != c.Size || int64(buf.Len()) != c.Size {
		t.Fatalf("WriteTo = %d, %v; Size %d, wrote %d", n, err, c.Size, buf.Len())
	}
	sum := sha256.Sum256(buf.Bytes())
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != c.Hash {
		t.Errorf("hash of the stream %s != Hash %s", got, c.Hash)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	want := []string{
		`{"entries":[{"name":"foo.v0.1.0"},{"name":"foo.v0.2.0","replaces":"foo.v0.1.0"}],"name":"stable","package":"foo","schema":"olm.channel"}`,
	}
	if len(lines) != 4 || lines[2] != want[0] {
		t.Errorf("canonical stream:\n%s", buf.String())
	}
	if !strings.HasPrefix(lines[0], `{"image":"example.com/foo:v0.1.0"`) || !strings.Contains(lines[3], `"schema":"olm.package"`) {
		t.Errorf("blobs not sorted by schema then name:\n%s", buf.String())
	}
}

func TestHashIgnoresLayoutFormatAndOrder(t *testing.T) {
	a := mustLoad(t, map[string]string{"catalog.yaml": pkgYAML + "---\n" + chanYAML + "---\n" + bundlesYAML})
	layouts := map[string]map[string]string{
		"json, other key and blob order": {"index.json": sameAsJSON},
		"nested directories": {
			"foo/package.yaml":         pkgYAML,
			"foo/channels/stable.yaml": chanYAML,
			"foo/bundles/all.yaml":     bundlesYAML,
			"foo/bundles/.indexignore": "notes.txt\n",
			"foo/bundles/notes.txt":    "not a catalog file: ignored through .indexignore",
		},
	}
	for name, files := range layouts {
		t.Run(name, func(t *testing.T) {
			if b := mustLoad(t, files); b.Hash != a.Hash {
				t.Errorf("hash %s, want %s", b.Hash, a.Hash)
			}
		})
	}
	changed := mustLoad(t, map[string]string{"catalog.yaml": strings.Replace(pkgYAML, "name: foo", "name: foo\ndescription: changed", 1) + "---\n" + chanYAML + "---\n" + bundlesYAML})
	if changed.Hash == a.Hash {
		t.Error("different content, same hash")
	}
}

func TestLoadInvalid(t *testing.T) {
	cases := map[string]struct {
		files map[string]string
		want  []string
	}{
		"unparsable yaml names the file": {
			files: map[string]string{"pkgs/foo.yaml": "schema: olm.package\nname: [foo\n"},
			want:  []string{`"pkgs/foo.yaml"`},
		},
		"missing schema": {
			files: map[string]string{"a.json": `{"name":"foo"}`},
			want:  []string{`"a.json"`, `no "schema" field`},
		},
		"channel entry without bundle": {
			files: map[string]string{"c.yaml": pkgYAML + "---\n" + chanYAML + "---\n" + strings.SplitN(bundlesYAML, "---\n", 2)[0]},
			want:  []string{"foo.v0.2.0"},
		},
		"bad default channel": {
			files: map[string]string{"c.yaml": strings.Replace(pkgYAML, "stable", "fast", 1) + "---\n" + chanYAML + "---\n" + bundlesYAML},
			want:  []string{"fast"},
		},
		"only comments": {
			files: map[string]string{"README.md": "# nothing\n"},
			want:  []string{"no FBC blobs"},
		},
		"no files": {
			files: map[string]string{},
			want:  []string{"no FBC blobs"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Load(t.Context(), mapFS(tc.files))
			if err == nil {
				t.Fatal("Load succeeded")
			}
			if !IsInvalid(err) {
				t.Errorf("IsInvalid(%v) = false", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// testdataDir returns $OLMV1_TESTDATA/<sub> (default ../../../../shared/testdata), skipping when absent.
func testdataDir(tb testing.TB, sub string) string {
	tb.Helper()
	root := os.Getenv("OLMV1_TESTDATA")
	if root == "" {
		root = filepath.Join("..", "..", "..", "..", "shared", "testdata")
	}
	dir := filepath.Join(root, sub)
	if _, err := os.Stat(dir); err != nil {
		tb.Skipf("real test data %s is absent (set OLMV1_TESTDATA): %v", dir, err)
	}
	return dir
}

func TestLoadRealCatalogs(t *testing.T) {
	for _, tc := range []struct {
		dir  string
		want *Counts
		// hash is what catalogd reported for this content before the store streamed (when it held
		// every blob in memory): the streaming store must not change any served hash.
		hash string
	}{
		{"catalogs/community-v4.20", &Counts{Packages: 37, Channels: 85, Bundles: 803}, "sha256:53c5dc236a681e36f7c3c6f39f25c675db66383f9e671d8462707a3c0dc547b0"},
		{"catalogs/community-v4.16", nil, "sha256:6b217392837eb5230037d9a5c8f5d508efc25642689dbf5cc98f705fb7be577c"},
	} {
		t.Run(filepath.Base(tc.dir), func(t *testing.T) {
			c, err := Load(t.Context(), os.DirFS(testdataDir(t, tc.dir)))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			t.Logf("%s: %+v, %d bytes, %s", tc.dir, c.Counts, c.Size, c.Hash)
			if c.Hash != tc.hash {
				t.Errorf("hash %s, want %s (the hash before the streaming store)", c.Hash, tc.hash)
			}
			if tc.want != nil && c.Counts != *tc.want {
				t.Errorf("counts = %+v, want %+v", c.Counts, *tc.want)
			}
			// The files, as operator-registry's own loader counts them.
			ref, err := declcfg.LoadFS(t.Context(), os.DirFS(testdataDir(t, tc.dir)))
			if err != nil {
				t.Fatal(err)
			}
			if want := (Counts{Packages: len(ref.Packages), Channels: len(ref.Channels), Bundles: len(ref.Bundles)}); c.Counts != want {
				t.Errorf("counts = %+v, declcfg.LoadFS counts %+v", c.Counts, want)
			}
		})
	}
}

func TestValidatedPackagesAreRemembered(t *testing.T) {
	ForgetValidatedPackages()
	good := map[string]string{"foo.yaml": pkgYAML + "---\n" + chanYAML + "---\n" + bundlesYAML}
	a := mustLoad(t, good)
	metas, err := a.ReadMetas()
	if err != nil {
		t.Fatal(err)
	}
	keys := packageKeys(metas)
	if len(keys) != 1 || !validPackages.has(keys["foo"]) {
		t.Fatalf("package foo not remembered as valid: keys %v", keys)
	}
	// The same package next to an invalid one: foo is skipped, bar is still validated.
	bad := map[string]string{
		"foo.yaml": good["foo.yaml"],
		"bar.yaml": "schema: olm.package\nname: bar\ndefaultChannel: missing\n",
	}
	if _, err := Load(t.Context(), mapFS(bad)); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("invalid package bar next to a remembered one: %v", err)
	}
	// A change inside foo gives a new key: validated again, and caught.
	changed := map[string]string{"foo.yaml": strings.Replace(good["foo.yaml"], "defaultChannel: stable", "defaultChannel: other", 1)}
	if _, err := Load(t.Context(), mapFS(changed)); err == nil {
		t.Error("a changed, invalid package foo was accepted")
	}
}

// TestLoadOrdersLikeTheSortedWalk: blobs with the same schema, package and name (which the
// streaming store orders by reading them back) come out in the order of the in-memory definition
// (the walk's blobs sorted by compareMeta), and the hash is that stream's.
func TestLoadOrdersLikeTheSortedWalk(t *testing.T) {
	files := map[string]string{
		"a.yaml": pkgYAML + "---\n" + chanYAML + "---\n" + bundlesYAML,
		"b.json": `{"schema":"example.note","package":"foo","text":"zebra"}
{"schema":"example.note","package":"foo","text":"apple"}
{"schema":"example.note","package":"foo","text":"mango","name":"m"}
{"schema":"example.note","text":"top"}`,
		"c.yaml": "schema: example.note\npackage: foo\ntext: kiwi\n",
	}
	c := mustLoad(t, files)
	defer c.Close()
	got, err := c.ReadMetas()
	if err != nil {
		t.Fatal(err)
	}
	var want []Meta
	var mu sync.Mutex // walkMetas calls back from several goroutines
	if err := walkMetas(t.Context(), mapFS(files), func(_ string, m *declcfg.Meta, err error) error {
		if err != nil {
			return err
		}
		cm, err := canonicalize(m)
		cm.Blob = slices.Clone(cm.Blob) // m.Blob is the walk's buffer
		mu.Lock()
		want = append(want, cm)
		mu.Unlock()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(want, compareMeta)
	if len(got) != len(want) {
		t.Fatalf("%d blobs, want %d", len(got), len(want))
	}
	h := sha256.New()
	for i := range want {
		if compareMeta(got[i], want[i]) != 0 {
			t.Errorf("blob %d: %s, want %s", i, got[i].Blob, want[i].Blob)
		}
		if e := c.Entries[i]; e.Schema != want[i].Schema || e.Package != want[i].Package || e.Name != want[i].Name || e.Length != int64(len(want[i].Blob)) {
			t.Errorf("entry %d: %+v, want blob %s", i, e, want[i].Blob)
		}
		h.Write(want[i].Blob)
		h.Write([]byte{'\n'})
	}
	if w := "sha256:" + hex.EncodeToString(h.Sum(nil)); c.Hash != w {
		t.Errorf("hash %s, want %s", c.Hash, w)
	}
}

// TestLoadUndecodableBlobNamesItsFile: a blob that is JSON but not its schema's type (decoded
// after the walk, when its package is validated) is reported with its file, before any invalid
// package.
func TestLoadUndecodableBlobNamesItsFile(t *testing.T) {
	ForgetValidatedPackages()
	_, err := Load(t.Context(), mapFS(map[string]string{
		"a/bad.yaml": "schema: olm.bundle\npackage: zzz\nname: zzz.v1\nimage: 5\n",
		"b/foo.yaml": strings.Replace(pkgYAML, "stable", "fast", 1) + "---\n" + chanYAML + "---\n" + bundlesYAML,
	}))
	if err == nil || !IsInvalid(err) {
		t.Fatalf("Load = %v, want an InvalidError", err)
	}
	for _, want := range []string{`file "a/bad.yaml"`, `schema="olm.bundle"`, `name="zzz.v1"`, "cannot unmarshal"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
