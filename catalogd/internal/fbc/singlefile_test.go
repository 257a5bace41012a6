package fbc

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"go.yaml.in/yaml/v2"
)

// Catalogs that are one big file (a whole index rendered by `opm render` into one catalog.json, or
// a hand-concatenated catalog.yaml) are read as a stream: the walk holds a few documents or JSON
// values at a time, never the file. These tests and benchmarks generate such catalogs.

// bigCatalog is a generated catalog: for each package its blobs (package, channel, bundles), each
// bundle carrying a CSV description of a few KiB so that the catalog reaches the size asked for.
type bigCatalog [][]map[string]any

// genBigCatalog generates a valid catalog of about size bytes (as indented JSON).
func genBigCatalog(size int) bigCatalog {
	const bundles, descLen = 10, 16 << 10 // about 18 KiB per bundle (indented JSON)
	r := rand.New(rand.NewPCG(1, uint64(size)))
	words := strings.Fields("operator cluster install upgrade channel bundle catalog resource controller " +
		"namespace webhook storage backup metrics tenant database cache network policy secret")
	var cat bigCatalog
	for p := 0; size > 0; p++ {
		pkg := fmt.Sprintf("gen-operator-%04d", p)
		blobs := []map[string]any{{"schema": "olm.package", "name": pkg, "defaultChannel": "stable",
			"description": "Generated package " + pkg}}
		var entries []any
		for v := range bundles {
			name := fmt.Sprintf("%s.v1.%d.0", pkg, v)
			entry := map[string]any{"name": name}
			if v > 0 {
				entry["replaces"] = fmt.Sprintf("%s.v1.%d.0", pkg, v-1)
			}
			entries = append(entries, entry)
			var desc strings.Builder
			for desc.Len() < descLen {
				desc.WriteString(words[r.IntN(len(words))])
				if r.IntN(12) == 0 {
					desc.WriteString(".\n")
				} else {
					desc.WriteByte(' ')
				}
			}
			blobs = append(blobs, map[string]any{
				"schema":  "olm.bundle",
				"package": pkg,
				"name":    name,
				"image":   fmt.Sprintf("quay.io/gen/%s-bundle@sha256:%064x", pkg, r.Uint64()),
				"properties": []any{
					map[string]any{"type": "olm.package", "value": map[string]any{"packageName": pkg, "version": fmt.Sprintf("1.%d.0", v)}},
					map[string]any{"type": "olm.gvk", "value": map[string]any{"group": "gen.example.com", "kind": "Thing", "version": "v1"}},
					map[string]any{"type": "olm.csv.metadata", "value": map[string]any{
						"displayName":  "Generated " + pkg,
						"description":  desc.String(),
						"annotations":  map[string]any{"capabilities": "Basic Install", "containerImage": "quay.io/gen/" + pkg + ":v1"},
						"installModes": []any{map[string]any{"type": "AllNamespaces", "supported": true}},
					}},
				},
				"relatedImages": []any{map[string]any{"name": "operator", "image": "quay.io/gen/" + pkg + ":v1"}},
			})
			size -= descLen + 1700
		}
		blobs = append(blobs, map[string]any{"schema": "olm.channel", "package": pkg, "name": "stable", "entries": entries})
		cat = append(cat, blobs)
	}
	return cat
}

// encode writes blobs as a JSON stream of indented values (as `opm render` does) or as YAML
// documents separated by "---".
func encode(tb testing.TB, blobs []map[string]any, format string) []byte {
	tb.Helper()
	var buf bytes.Buffer
	for _, b := range blobs {
		switch format {
		case "json":
			out, err := json.MarshalIndent(b, "", "    ")
			if err != nil {
				tb.Fatal(err)
			}
			buf.Write(out)
			buf.WriteByte('\n')
		case "yaml":
			out, err := yaml.Marshal(b)
			if err != nil {
				tb.Fatal(err)
			}
			buf.WriteString("---\n")
			buf.Write(out)
		}
	}
	return buf.Bytes()
}

// writeSingleFile writes the whole catalog as dir/catalog.<format> and returns its size.
func (c bigCatalog) writeSingleFile(tb testing.TB, dir, format string) int64 {
	tb.Helper()
	var all []map[string]any
	for _, blobs := range c {
		all = append(all, blobs...)
	}
	data := encode(tb, all, format)
	if err := os.WriteFile(filepath.Join(dir, "catalog."+format), data, 0o644); err != nil {
		tb.Fatal(err)
	}
	return int64(len(data))
}

// writePerPackage writes one file per package, JSON and YAML in turn.
func (c bigCatalog) writePerPackage(tb testing.TB, dir string) {
	tb.Helper()
	for i, blobs := range c {
		format := []string{"json", "yaml"}[i%2]
		pkgDir := filepath.Join(dir, blobs[0]["name"].(string))
		if err := os.Mkdir(pkgDir, 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkgDir, "catalog."+format), encode(tb, blobs, format), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestSingleFileCatalogMatchesPerPackageFiles: a catalog that is one large JSON or YAML file loads
// into the same blobs and hash as the same catalog in one file per package.
func TestSingleFileCatalogMatchesPerPackageFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and loads three 12 MB catalogs")
	}
	cat := genBigCatalog(12 << 20)
	perPackage := t.TempDir()
	cat.writePerPackage(t, perPackage)
	want, err := Load(t.Context(), os.DirFS(perPackage))
	if err != nil {
		t.Fatalf("Load of the per-package catalog: %v", err)
	}
	defer want.Close()
	if want.Counts.Packages != len(cat) {
		t.Fatalf("%d packages loaded, %d generated", want.Counts.Packages, len(cat))
	}
	for _, format := range []string{"json", "yaml"} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			size := cat.writeSingleFile(t, dir, format)
			got, err := Load(t.Context(), os.DirFS(dir))
			if err != nil {
				t.Fatalf("Load of the single %d-byte file: %v", size, err)
			}
			defer got.Close()
			if got.Hash != want.Hash || got.Counts != want.Counts || got.Size != want.Size {
				t.Fatalf("single file: %s %+v %d bytes; per package: %s %+v %d bytes", got.Hash, got.Counts, got.Size, want.Hash, want.Counts, want.Size)
			}
		})
	}
}

// heapPeak samples the heap in use every millisecond until stop is called and returns the largest
// sample (the garbage collector runs first, so that the garbage of earlier work does not count).
func heapPeak() (stop func() uint64) {
	runtime.GC()
	quit, done := make(chan struct{}), make(chan struct{})
	var peak uint64
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-quit:
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 {
		close(quit)
		<-done
		return peak
	}
}

// benchSingleFile runs load over single-file catalogs of 15 and 60 MB, JSON and YAML, and reports
// the peak heap in use during a run (peak-heap-MiB): the target is a peak that does not grow
// with the file, as the walk holds a few documents at a time, not the file.
func benchSingleFile(b *testing.B, load func(dir string) error) {
	type file struct {
		name, dir string
		size      int64
	}
	var files []file
	for _, mb := range []int{15, 60} {
		cat := genBigCatalog(mb << 20)
		for _, format := range []string{"json", "yaml"} {
			dir := b.TempDir()
			files = append(files, file{fmt.Sprintf("%s-%dMB", format, mb), dir, cat.writeSingleFile(b, dir, format)})
		}
	}
	// The generated catalog is garbage now: the peak counts what load holds, nothing else.
	for _, f := range files {
		b.Run(f.name, func(b *testing.B) {
			b.SetBytes(f.size)
			b.ReportAllocs()
			var peak uint64
			for b.Loop() {
				ForgetValidatedPackages()
				stop := heapPeak()
				if err := load(f.dir); err != nil {
					b.Fatal(err)
				}
				peak = max(peak, stop())
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(f.size)/(1<<20), "file-MiB")
		})
	}
}

// BenchmarkLoadSingleFile loads catalogs that are one large file (see benchSingleFile).
func BenchmarkLoadSingleFile(b *testing.B) {
	benchSingleFile(b, func(dir string) error {
		c, err := Load(context.Background(), os.DirFS(dir))
		if err == nil {
			c.Close()
		}
		return err
	})
}

// BenchmarkWalkSingleFile is BenchmarkLoadSingleFile for the walk alone (parse and canonicalise
// every blob, keep nothing): the part of Load whose memory depended on the file's size.
func BenchmarkWalkSingleFile(b *testing.B) {
	benchSingleFile(b, func(dir string) error {
		return walkMetas(context.Background(), os.DirFS(dir), func(path string, m *declcfg.Meta, err error) error {
			if err != nil {
				return fmt.Errorf("file %s: %w", path, err)
			}
			_, err = canonicalize(m)
			return err
		})
	})
}
