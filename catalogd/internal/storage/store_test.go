package storage

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/olmv1/olmv1/catalogd/internal/fbc"
)

func catalog(t *testing.T, version string) *fbc.Catalog {
	t.Helper()
	files := fstest.MapFS{"c.yaml": &fstest.MapFile{Data: []byte(`schema: olm.package
name: foo
defaultChannel: stable
---
schema: olm.channel
package: foo
name: stable
entries:
- name: foo.v` + version + `
---
schema: olm.bundle
package: foo
name: foo.v` + version + `
image: example.com/foo:v` + version + `
properties:
- type: olm.package
  value: {packageName: foo, version: ` + version + `}
`)}}
	c, err := fbc.Load(t.Context(), files)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func readAll(t *testing.T, c *Content) string {
	t.Helper()
	f, err := c.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPutGetQueryDelete(t *testing.T) {
	root := t.TempDir()
	s, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan Event, 10)
	defer s.Subscribe(events)()

	a := catalog(t, "0.1.0")
	ca, err := s.Put("cat", a)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	_, _ = a.WriteTo(&want)
	if got := readAll(t, ca); got != want.String() {
		t.Errorf("all.json:\n%s\nwant:\n%s", got, want.String())
	}
	if ev := <-events; ev.Type != EventPut || ev.Old != nil || ev.New.Hash != a.Hash {
		t.Errorf("event %+v", ev)
	}

	// A reader holding the old content keeps reading it after a swap.
	f, err := ca.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := catalog(t, "0.2.0")
	cb, err := s.Put("cat", b)
	if err != nil {
		t.Fatal(err)
	}
	if ev := <-events; ev.Old.Hash != a.Hash || ev.New.Hash != b.Hash {
		t.Errorf("event %+v", ev)
	}
	old, err := io.ReadAll(f)
	if err != nil || string(old) != want.String() {
		t.Errorf("old reader got %q, %v", old, err)
	}
	if got, _ := s.Get("cat"); got.Hash != b.Hash {
		t.Errorf("served %s, want %s", got.Hash, b.Hash)
	}
	dirs, _ := os.ReadDir(filepath.Join(root, "cat"))
	if len(dirs) != 2 { // current + one content directory
		t.Errorf("catalog dir holds %v", dirs)
	}

	// Query by package, schema and name, answered from the index.
	if got := cb.Query("", "foo", ""); len(got) != 3 {
		t.Errorf("package foo: %d entries, want 3 (package, channel, bundle)", len(got))
	}
	bundles := cb.Query("olm.bundle", "foo", "")
	if len(bundles) != 1 || bundles[0].Name != "foo.v0.2.0" {
		t.Errorf("bundles = %+v", bundles)
	}
	if got := cb.Query("olm.bundle", "", "nope"); len(got) != 0 {
		t.Errorf("unknown name: %+v", got)
	}
	g, _ := cb.Open()
	defer g.Close()
	var out bytes.Buffer
	if err := WriteEntries(&out, g, bundles); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), `{"image":"example.com/foo:v0.2.0"`) || strings.Count(out.String(), "\n") != 1 {
		t.Errorf("bundle blob = %q", out.String())
	}
	blob, err := ReadBlob(g, bundles[0])
	if err != nil || string(blob)+"\n" != out.String() {
		t.Errorf("ReadBlob = %q, %v", blob, err)
	}

	// A new Store on the same root serves the same content (restart).
	s2, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := s2.Get("cat")
	if !ok || got.Hash != b.Hash || got.Counts != b.Counts || len(got.Entries()) != 3 {
		t.Fatalf("after restart: %+v, %v", got, ok)
	}

	// Same hash again: nothing written, no event.
	if _, err := s.Put("cat", catalog(t, "0.2.0")); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-events:
		t.Errorf("unexpected event %+v", ev)
	default:
	}

	if err := s.Delete("cat"); err != nil {
		t.Fatal(err)
	}
	if ev := <-events; ev.Type != EventDelete || ev.Old.Hash != b.Hash {
		t.Errorf("event %+v", ev)
	}
	if _, ok := s.Get("cat"); ok {
		t.Error("deleted catalog still served")
	}
	if _, err := os.Stat(filepath.Join(root, "cat")); !os.IsNotExist(err) {
		t.Errorf("catalog directory remains: %v", err)
	}
}

func TestInvalidNames(t *testing.T) {
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"", "..", "a/b", ".hidden"} {
		if _, err := s.Put(n, catalog(t, "0.1.0")); err == nil {
			t.Errorf("Put(%q) succeeded", n)
		}
	}
}

func TestNewRemovesLeftoversOfInterruptedPuts(t *testing.T) {
	root := t.TempDir()
	s, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Put("cat", catalog(t, "0.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	// A crash during a later Put leaves a temporary directory and an unlinked content directory.
	for _, d := range []string{".put-123", "0123abcd"} {
		if err := os.MkdirAll(filepath.Join(root, "cat", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s2, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := s2.Get("cat"); !ok || got.Hash != c.Hash {
		t.Fatalf("served after restart: %+v %v", got, ok)
	}
	ds, _ := os.ReadDir(filepath.Join(root, "cat"))
	if len(ds) != 2 {
		t.Errorf("catalog directory after restart: %v", ds)
	}
}

// TestTempDirIsNotACatalog: the store's temporary directory is emptied when the store is opened and
// never read as a catalog's content.
func TestTempDirIsNotACatalog(t *testing.T) {
	root := t.TempDir()
	s, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := s.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	left := filepath.Join(dir, "left-by-a-crash")
	if err := os.WriteFile(left, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = New(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("%s survived opening the store: %v", left, err)
	}
	if len(s.List()) != 0 {
		t.Errorf("the store serves %d catalogs, want none", len(s.List()))
	}
}

// TestNewDropsDamagedContent: content whose current link points at a half-removed directory (a
// catalogd killed in the middle of an older Delete, as the ha e2e spec did) is removed and reported
// in Dropped instead of stopping catalogd; the other catalogs are still served.
func TestNewDropsDamagedContent(t *testing.T) {
	root := t.TempDir()
	s, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	good, err := s.Put("good", catalog(t, "0.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	bad, err := s.Put("bad", catalog(t, "0.2.0"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "bad", strings.TrimPrefix(bad.Hash, "sha256:"), indexFile)); err != nil {
		t.Fatal(err)
	}
	s2, err := New(root)
	if err != nil {
		t.Fatalf("a damaged catalog stopped the store: %v", err)
	}
	if got, ok := s2.Get("good"); !ok || got.Hash != good.Hash {
		t.Fatalf("good catalog after restart: %+v %v", got, ok)
	}
	if _, ok := s2.Get("bad"); ok {
		t.Fatal("damaged content is served")
	}
	if len(s2.Dropped) != 1 || !strings.Contains(s2.Dropped[0], `catalog "bad"`) || !strings.Contains(s2.Dropped[0], indexFile) {
		t.Fatalf("Dropped = %v", s2.Dropped)
	}
	if _, err := os.Stat(filepath.Join(root, "bad")); !os.IsNotExist(err) {
		t.Errorf("damaged catalog directory remains: %v", err)
	}
	// The catalog can be stored again.
	if _, err := s2.Put("bad", catalog(t, "0.2.0")); err != nil {
		t.Fatal(err)
	}
}
