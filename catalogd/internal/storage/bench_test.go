package storage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/olmv1/olmv1/catalogd/internal/fbc"
)

// communityDir returns $OLMV1_TESTDATA/catalogs/community-v4.20 (default ../../../../shared/testdata),
// skipping when it is absent.
func communityDir(b testing.TB) string {
	b.Helper()
	root := os.Getenv("OLMV1_TESTDATA")
	if root == "" {
		root = filepath.Join("..", "..", "..", "..", "shared", "testdata")
	}
	dir := filepath.Join(root, "catalogs", "community-v4.20")
	if _, err := os.Stat(dir); err != nil {
		b.Skipf("real test data %s is absent (set OLMV1_TESTDATA): %v", dir, err)
	}
	return dir
}

// BenchmarkUnpackParseIndex is the whole of catalogd's work on a new catalog — parse, validate
// (cold: every package), canonicalise, hash, write all.json and the index, sync, swap — alternated
// with operator-registry's declcfg.LoadFS alone on the same directory, so that both see the same
// machine load. It reports both times and their ratio (the target: ratio <= 1.0).
func BenchmarkUnpackParseIndex(b *testing.B) {
	dir := os.DirFS(communityDir(b))
	s, err := New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	var ours, ref time.Duration
	i := 0
	for b.Loop() {
		fbc.ForgetValidatedPackages() // cold: validate every package
		runtime.GC()
		start := time.Now()
		cat, err := fbc.Load(context.Background(), dir)
		if err != nil {
			b.Fatal(err)
		}
		// A new name each time, so that Put always writes.
		if _, err := s.Put("community-"+strconv.Itoa(i), cat); err != nil {
			b.Fatal(err)
		}
		ours += time.Since(start)
		i++
		cat = nil
		runtime.GC()
		start = time.Now()
		if _, err := declcfg.LoadFS(context.Background(), dir); err != nil {
			b.Fatal(err)
		}
		ref += time.Since(start)
	}
	b.ReportMetric(float64(ours.Milliseconds())/float64(b.N), "unpack-parse-index-ms/op")
	b.ReportMetric(float64(ref.Milliseconds())/float64(b.N), "declcfg-loadfs-ms/op")
	b.ReportMetric(float64(ours)/float64(ref), "ratio")
}

// BenchmarkServeFiveCatalogsMemory stores community-v4.20 under five names, then measures what a
// freshly started store (as after a catalogd restart) keeps in memory to serve them: the Go heap
// in use and the resident set of the process after returning freed memory to the OS.
func BenchmarkServeFiveCatalogsMemory(b *testing.B) {
	dir := os.DirFS(communityDir(b))
	root := b.TempDir()
	s, err := New(root)
	if err != nil {
		b.Fatal(err)
	}
	cat, err := fbc.Load(context.Background(), dir)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 5 {
		if _, err := s.Put(fmt.Sprintf("community-%d", i), cat); err != nil {
			b.Fatal(err)
		}
	}
	cat, s = nil, nil
	var heap, rss uint64
	for b.Loop() {
		debug.FreeOSMemory()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		fresh, err := New(root)
		if err != nil {
			b.Fatal(err)
		}
		debug.FreeOSMemory()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		heap = after.HeapInuse - before.HeapInuse
		rss = vmRSS()
		runtime.KeepAlive(fresh)
	}
	b.ReportMetric(float64(heap)/(1<<20), "store-heap-MiB")
	b.ReportMetric(float64(rss)/(1<<20), "process-RSS-MiB")
}

func vmRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
