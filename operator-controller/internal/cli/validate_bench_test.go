package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/olmv1/olmv1/catalogd/pkg/scaletestdata"
	"github.com/olmv1/olmv1/platform/sharedtestdata"
)

// BenchmarkCatalogValidateLarge (`make bench BENCH=CatalogValidateLarge`) runs the built
// bin/kubectl-olmv1 `catalog validate` on issue 20's ~60 MB catalog (sharedtestdata.LargeCatalog)
// and reports its peak RSS (target under 80 MiB) and wall time. The binary's own pages count: about
// 40 MiB of its RSS is its code, before any catalog is read.
func BenchmarkCatalogValidateLarge(b *testing.B) {
	root, ok := sharedtestdata.Root()
	if _, err := os.Stat(filepath.Join(root, "catalogs", "community-v4.20")); !ok || err != nil {
		b.Skip("real catalogs not found under " + root + "/catalogs (set OLMV1_TESTDATA to the shared testdata folder)")
	}
	repo, _ := sharedtestdata.RepoRoot()
	bin := filepath.Join(repo, "bin", "kubectl-olmv1")
	if _, err := os.Stat(bin); err != nil {
		b.Skip("bin/kubectl-olmv1 is not built (run `make build`)")
	}
	dir := b.TempDir()
	if err := scaletestdata.LargeCatalog(root, dir); err != nil {
		b.Fatal(err)
	}
	var peak int64
	var wall time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(bin, "catalog", "validate", dir)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		hwm := watchHWM(cmd.Process.Pid)
		if err := cmd.Wait(); err != nil || !strings.Contains(out.String(), "true") {
			b.Fatalf("%s catalog validate: %v\n%s", bin, err, out.String())
		}
		wall += time.Since(start)
		peak = max(peak, <-hwm)
	}
	b.ReportMetric(float64(peak)/1024, "peak-rss-MiB")
	b.ReportMetric(wall.Seconds()/float64(b.N), "s/validate")
}

// watchHWM reads the VmHWM (peak RSS, KiB) of process pid every 10 ms until it is gone and sends
// the last value read. (The child's rusage Maxrss would not do: a child started by a Go parent,
// which shares the parent's memory until exec, inherits the parent's peak.)
func watchHWM(pid int) <-chan int64 {
	out := make(chan int64, 1)
	go func() {
		var last int64
		for {
			status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
			if err != nil || strings.Contains(string(status), "State:\tZ") {
				out <- last
				return
			}
			for _, line := range strings.Split(string(status), "\n") {
				if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
					if kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64); err == nil {
						last = kb
					}
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return out
}
