package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/olmv1/olmv1/catalogd/internal/fbc"
)

// tenThousand is the package count of issue 18's large catalog.
const tenThousand = 10000

// writeManyPackages writes a catalog of n packages under dir, one directory and catalog.yaml per
// package as real catalogs are laid out: a package, a channel, and two bundles on an upgrade edge.
func writeManyPackages(tb testing.TB, dir string, n int) {
	tb.Helper()
	for i := range n {
		pkg := manyPackageName(i)
		data := fmt.Sprintf(`schema: olm.package
name: %[1]s
defaultChannel: stable
description: package number %[2]d
---
schema: olm.channel
package: %[1]s
name: stable
entries:
- name: %[1]s.v1.0.0
- name: %[1]s.v1.1.0
  replaces: %[1]s.v1.0.0
---
schema: olm.bundle
package: %[1]s
name: %[1]s.v1.0.0
image: registry.test/%[1]s@sha256:%064[2]x
properties:
- type: olm.package
  value: {packageName: %[1]s, version: 1.0.0}
- type: olm.gvk
  value: {group: p%[2]d.example.com, kind: Widget, version: v1}
---
schema: olm.bundle
package: %[1]s
name: %[1]s.v1.1.0
image: registry.test/%[1]s@sha256:%064[3]x
properties:
- type: olm.package
  value: {packageName: %[1]s, version: 1.1.0}
- type: olm.gvk
  value: {group: p%[2]d.example.com, kind: Widget, version: v1}
`, pkg, i, i+n)
		p := filepath.Join(dir, pkg, "catalog.yaml")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

func manyPackageName(i int) string { return fmt.Sprintf("pkg-%05d", i) }

// childEnv makes a test binary started by TestStoreTenThousandPackages do the measured work.
const childEnv = "OLMV1_STORAGE_SCALE_CHILD"

// TestStoreTenThousandPackages: a generated catalog of 10,000 packages (10,000 channels, 20,000
// bundles) goes through catalogd's store path (fbc.Load, then Put) and every package is served:
// its blobs are found by package and by name, hold what was written, and are found again by a
// store opened afresh on the same directory (a restart). The work runs in a child process so
// that its wall time and peak resident set are its own; both are logged, not asserted.
func TestStoreTenThousandPackages(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and loads a catalog of 10,000 packages")
	}
	if os.Getenv(childEnv) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestStoreTenThousandPackages$", "-test.v")
		cmd.Env = append(os.Environ(), childEnv+"=1")
		start := time.Now()
		out, err := cmd.CombinedOutput()
		elapsed := time.Since(start)
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "--- PASS: TestStoreTenThousandPackages") {
			t.Fatalf("the child did not run the test:\n%s", out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "scale_test.go") {
				t.Log(strings.TrimSpace(line))
			}
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		t.Logf("child process (generate, load, put, query, reopen, query): %v wall, peak RSS %.0f MiB (GOMAXPROCS %d)",
			elapsed.Round(time.Millisecond), float64(ru.Maxrss)/1024, runtime.GOMAXPROCS(0))
		return
	}

	dir := t.TempDir()
	start := time.Now()
	writeManyPackages(t, dir, tenThousand)
	t.Logf("generate: %v", time.Since(start).Round(time.Millisecond))

	start = time.Now()
	cat, err := fbc.Load(context.Background(), os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	loadTime := time.Since(start)
	want := fbc.Counts{Packages: tenThousand, Channels: tenThousand, Bundles: 2 * tenThousand}
	if cat.Counts != want || len(cat.Entries) != 4*tenThousand {
		t.Fatalf("loaded %+v in %d blobs, want %+v in %d", cat.Counts, len(cat.Entries), want, 4*tenThousand)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("fbc.Load: %v, %d blobs, %.1f MiB canonical, Go heap in use %.0f MiB", loadTime.Round(time.Millisecond), len(cat.Entries), float64(cat.Size)/(1<<20), float64(ms.HeapInuse)/(1<<20))

	root := t.TempDir()
	s, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	c, err := s.Put("big", cat)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Put: %v", time.Since(start).Round(time.Millisecond))
	if c.Counts != want || c.Hash != cat.Hash {
		t.Fatalf("stored %+v %s, want %+v %s", c.Counts, c.Hash, want, cat.Hash)
	}

	start = time.Now()
	checkEveryPackage(t, c)
	t.Logf("query and read every package: %v", time.Since(start).Round(time.Millisecond))

	cat = nil
	s2, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	c2, ok := s2.Get("big")
	if !ok || c2.Hash != c.Hash || c2.Counts != want {
		t.Fatalf("after reopening: %+v, %v", c2, ok)
	}
	checkEveryPackage(t, c2)
}

// checkEveryPackage queries the blobs of every package by package and by name, and reads them.
func checkEveryPackage(t *testing.T, c *Content) {
	t.Helper()
	f, err := c.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := range tenThousand {
		pkg := manyPackageName(i)
		entries := c.Query("", pkg, "")
		if len(entries) != 4 {
			t.Fatalf("package %s: %d blobs, want 4 (package, channel, two bundles)", pkg, len(entries))
		}
		schemas := map[string]int{}
		for _, e := range entries {
			schemas[e.Schema]++
			blob, err := ReadBlob(f, e)
			if err != nil {
				t.Fatal(err)
			}
			var v struct{ Schema, Package, Name string }
			if err := json.Unmarshal(blob, &v); err != nil {
				t.Fatalf("package %s: blob %q: %v", pkg, blob, err)
			}
			if v.Schema != e.Schema || v.Name != e.Name || (e.Schema != "olm.package" && v.Package != pkg) || (e.Schema == "olm.package" && v.Name != pkg) {
				t.Fatalf("package %s: entry %+v holds blob %s", pkg, e, blob)
			}
		}
		if schemas["olm.package"] != 1 || schemas["olm.channel"] != 1 || schemas["olm.bundle"] != 2 {
			t.Fatalf("package %s: schemas %v", pkg, schemas)
		}
		if got := c.Query("olm.bundle", pkg, pkg+".v1.1.0"); len(got) != 1 {
			t.Fatalf("bundle %s.v1.1.0: %d entries", pkg, len(got))
		}
	}
}

// BenchmarkLoadPutTenThousandPackages is catalogd's whole work on a new catalog of 10,000 packages:
// parse, validate (cold), canonicalise, hash, write and swap in.
func BenchmarkLoadPutTenThousandPackages(b *testing.B) {
	dir := b.TempDir()
	writeManyPackages(b, dir, tenThousand)
	s, err := New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		fbc.ForgetValidatedPackages()
		cat, err := fbc.Load(context.Background(), os.DirFS(dir))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Put(fmt.Sprintf("big-%d", i), cat); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
