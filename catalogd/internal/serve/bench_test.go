package serve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/olmv1/olmv1/catalogd/internal/fbc"
	"github.com/olmv1/olmv1/catalogd/internal/storage"
)

// BenchmarkMetasOnePackage asks /api/v1/metas for every blob of one package of community-v4.20
// and reports the p50 and p99 latency of the handler.
func BenchmarkMetasOnePackage(b *testing.B) {
	root := os.Getenv("OLMV1_TESTDATA")
	if root == "" {
		root = filepath.Join("..", "..", "..", "..", "shared", "testdata")
	}
	dir := filepath.Join(root, "catalogs", "community-v4.20")
	if _, err := os.Stat(dir); err != nil {
		b.Skipf("real test data %s is absent (set OLMV1_TESTDATA): %v", dir, err)
	}
	cat, err := fbc.Load(context.Background(), os.DirFS(dir))
	if err != nil {
		b.Fatal(err)
	}
	s, err := storage.New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.Put("community", cat); err != nil {
		b.Fatal(err)
	}
	h := &Handler{Store: s}
	req := httptest.NewRequest(http.MethodGet, "/catalogs/community/api/v1/metas?package=trident-operator", nil)
	var lat []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(rec, req)
		lat = append(lat, time.Since(start))
		if rec.Code != http.StatusOK || rec.Body.Len() == 0 {
			b.Fatalf("%d %q", rec.Code, rec.Body.String())
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
