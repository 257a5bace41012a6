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

// BenchmarkUnpackParseIndex is what catalogd does with an unpacked directory: parse, validate,
// canonicalise, hash, write all.json and the index, and swap it in. Compare with
// BenchmarkDeclcfgLoadFS (parse only) from the same run.
func BenchmarkUnpackParseIndex(b *testing.B) {
	dir := os.DirFS(communityDir(b))
	s, err := New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		fbc.ForgetValidatedPackages() // cold: validate every package
		cat, err := fbc.Load(context.Background(), dir)
		if err != nil {
			b.Fatal(err)
		}
		// A new name each time, so that Put always writes.
		if _, err := s.Put("community-"+strconv.Itoa(i), cat); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkDeclcfgLoadFS is operator-registry's declcfg.LoadFS alone on the same directory.
func BenchmarkDeclcfgLoadFS(b *testing.B) {
	dir := os.DirFS(communityDir(b))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := declcfg.LoadFS(context.Background(), dir); err != nil {
			b.Fatal(err)
		}
	}
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
