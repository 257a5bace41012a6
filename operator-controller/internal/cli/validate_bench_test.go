package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/olmv1/olmv1/rukpak/pkg/sharedtestdata"
)

// BenchmarkCatalogValidateLarge (`make bench BENCH=CatalogValidateLarge`) runs `kubectl olmv1
// catalog validate` as a process on issue 20's ~60 MB catalog (sharedtestdata.LargeCatalog) and
// reports its peak RSS (target under 80 MiB: validation streams like catalogd's store) and wall time.
func BenchmarkCatalogValidateLarge(b *testing.B) {
	root, ok := sharedtestdata.Root()
	if _, err := os.Stat(filepath.Join(root, "catalogs", "community-v4.20")); !ok || err != nil {
		b.Skip("real catalogs not found under " + root + "/catalogs (set OLMV1_TESTDATA to the shared testdata folder)")
	}
	dir := b.TempDir()
	if err := sharedtestdata.LargeCatalog(root, dir); err != nil {
		b.Fatal(err)
	}
	var peak int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := runCLIProcess(b, "catalog", "validate", dir)
		if r.exitCode != 0 || !strings.Contains(r.stdout, "true") {
			b.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.exitCode, r.stdout, r.stderr)
		}
		peak = max(peak, r.maxRSSKiB)
		if i == 0 {
			b.Logf("%s", strings.TrimSpace(r.stdout))
		}
	}
	b.ReportMetric(float64(peak)/1024, "peak-rss-MiB")
}
