package source

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
	"github.com/olmv1/olmv1/rukpak/pkg/source/sourcetest"
)

// testdataDir returns $OLMV1_TESTDATA/rel (default ../../../../shared/testdata), skipping the test
// when it is absent.
func testdataDir(tb testing.TB, rel string) string {
	tb.Helper()
	root := os.Getenv("OLMV1_TESTDATA")
	if root == "" {
		root = filepath.Join("..", "..", "..", "..", "shared", "testdata")
	}
	p := filepath.Join(root, rel)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("real test data %s is absent (set OLMV1_TESTDATA to the shared testdata directory): %v", p, err)
	}
	return p
}

// sameFiles checks that every regular file under want is in got with the same content.
func sameFiles(tb testing.TB, want, got string) int {
	tb.Helper()
	n := 0
	err := filepath.WalkDir(want, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(want, p)
		w, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		g, err := os.ReadFile(filepath.Join(got, rel))
		if err != nil {
			return fmt.Errorf("%s missing from the unpacked content: %w", rel, err)
		}
		if string(w) != string(g) {
			return fmt.Errorf("%s differs after unpacking", rel)
		}
		n++
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// A real catalog and a real Helm chart survive image building, a registry and unpacking unchanged.
func TestRealCatalogAndChart(t *testing.T) {
	catalogDir := testdataDir(t, "catalogs/community-v4.20")
	chartDir := testdataDir(t, "helm/podinfo")
	reg := sourcetest.NewRegistry(t)
	u := newTestUnpacker(t, nil)

	img, err := imagebuild.CatalogImage(catalogDir)
	if err != nil {
		t.Fatal(err)
	}
	reg.Push(t, img, "catalogs/community:v4.20")
	res, err := u.Unpack(ctx(t), "catalog/community", imageSrc(reg.Ref("catalogs/community:v4.20")), catalogOpts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("catalog: %d files identical", sameFiles(t, catalogDir, res.Dir))

	chart, err := imagebuild.HelmChartArtifact(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	reg.Push(t, chart, "charts/podinfo:latest")
	res, err = u.Unpack(ctx(t), "bundledeployment/podinfo", imageSrc(reg.Ref("charts/podinfo:latest")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(res.Dir, "Chart.yaml")); err != nil {
		t.Errorf("the unpacked chart has no Chart.yaml at its root: %v", err)
	}
	if _, err := os.Stat(filepath.Join(res.Dir, "templates")); err != nil {
		t.Errorf("the unpacked chart has no templates/: %v", err)
	}
}

// BenchmarkUnpackCatalogImage pulls and extracts a real 15 MB catalog image into an empty cache.
func BenchmarkUnpackCatalogImage(b *testing.B) {
	catalogDir := testdataDir(b, "catalogs/community-v4.20")
	reg := sourcetest.NewRegistry(b)
	img, err := imagebuild.CatalogImage(catalogDir)
	if err != nil {
		b.Fatal(err)
	}
	digest := reg.Push(b, img, "catalogs/community:v4.20")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		u := newTestUnpacker(b, nil)
		if _, err := u.Unpack(ctx(b), "catalog/bench", imageSrc(digest.String()), catalogOpts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUnpackCatalogImageCached is the same pull when the digest is already in the cache.
func BenchmarkUnpackCatalogImageCached(b *testing.B) {
	catalogDir := testdataDir(b, "catalogs/community-v4.20")
	reg := sourcetest.NewRegistry(b)
	img, err := imagebuild.CatalogImage(catalogDir)
	if err != nil {
		b.Fatal(err)
	}
	reg.Push(b, img, "catalogs/community:v4.20")
	u := newTestUnpacker(b, nil)
	src := imageSrc(reg.Ref("catalogs/community:v4.20"))
	if _, err := u.Unpack(ctx(b), "catalog/bench", src, catalogOpts); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := u.Unpack(ctx(b), "catalog/bench", src, catalogOpts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExtractArchive extracts a synthetic .tar.gz of 2,000 files of 4 KiB.
func BenchmarkExtractArchive(b *testing.B) {
	var entries []entry
	body := string(make([]byte, 4096))
	for i := range 2000 {
		entries = append(entries, file(fmt.Sprintf("configs/pkg-%03d/catalog-%d.json", i/20, i), body))
	}
	data := gzipBytes(b, tarBytes(b, entries...))
	b.SetBytes(int64(2000 * 4096))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := openContentDir(filepath.Join(b.TempDir(), "c"), Limits{}, "bench")
		if err != nil {
			b.Fatal(err)
		}
		var read int64
		if _, err := extractArchive(ctx(b), bytesReader(data), c, tarOptions{dir: "configs"}, &read); err != nil {
			b.Fatal(err)
		}
		_ = c.close()
	}
}
