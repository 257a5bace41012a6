package storage

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/olmv1/olmv1/catalogd/internal/fbc"
	"github.com/olmv1/olmv1/catalogd/pkg/scaletestdata"
)

// BenchmarkCatalogStoreScale (`make bench BENCH=CatalogStoreScale`) measures catalogd's store path
// (fbc.Load cold — every package validated —, then Put: canonicalise, hash, write, sync, swap) on
// a ~15 MB catalog (community-v4.20 as it is) and a ~60 MB one (community-v4.16 and v4.20, two
// copies of each with every package renamed per copy, about the size of OpenShift's default
// catalogs; built by the benchmark from the real test data).
//
// In the same loop, alternately, it runs two references on the same directory, so that all three
// see the same machine load, and reports the ratios of wall time and of CPU time (user + system of
// the process, GC included) of the store path to each:
//
//   - declcfg: operator-registry's declcfg.LoadFS + declcfg.ConvertToModel, what operator-registry
//     does to read and check a catalog (wall-ratio, cpu-ratio);
//   - walkmetas: declcfg.WalkMetasFS writing every blob to a file, the work of upstream catalogd's
//     LocalDir store (no validation, no canonical form, no index, no sync; walkmetas-wall-ratio,
//     walkmetas-cpu-ratio).
//
// Peak RSS is measured in child processes (the test binary started again, doing the work once, then
// printing its VmHWM): a process's peak resident set is a high-water mark that cannot be reset, so
// measuring inside the benchmark process would report whatever ran before. store-peak-RSS-MiB
// is the child running the store path, declcfg-peak-RSS-MiB and walkmetas-peak-RSS-MiB the children
// running the references, and idle-RSS-MiB a child that only starts (the test binary's own floor,
// mostly its code: every figure includes it).
func BenchmarkCatalogStoreScale(b *testing.B) {
	small := communityDir(b)
	b.Run("15MB", func(b *testing.B) { benchStoreScale(b, small) })
	b.Run("60MB", func(b *testing.B) { benchStoreScale(b, largeCatalog(b)) })
}

func benchStoreScale(b *testing.B, dir string) {
	idle := childPeakRSS(b, "idle", dir)
	store := childPeakRSS(b, "store", dir)
	ref := childPeakRSS(b, "declcfg", dir)
	walk := childPeakRSS(b, "walkmetas", dir)
	s, err := New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	root := os.DirFS(dir)
	var size int64
	var oursWall, refWall, walkWall, oursCPU, refCPU, walkCPU time.Duration
	i := 0
	for b.Loop() {
		fbc.ForgetValidatedPackages()
		runtime.GC()
		start, cpu := time.Now(), processCPU()
		cat, err := fbc.Load(context.Background(), root)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Put(fmt.Sprintf("scale-%d", i), cat); err != nil {
			b.Fatal(err)
		}
		oursWall, oursCPU = oursWall+time.Since(start), oursCPU+processCPU()-cpu
		size = cat.Size
		cat.Close()
		_ = s.Delete(fmt.Sprintf("scale-%d", i))
		i++

		runtime.GC()
		start, cpu = time.Now(), processCPU()
		if err := declcfgLoadAndConvert(root); err != nil {
			b.Fatal(err)
		}
		refWall, refCPU = refWall+time.Since(start), refCPU+processCPU()-cpu

		runtime.GC()
		start, cpu = time.Now(), processCPU()
		if err := walkMetasToFile(root, b.TempDir()); err != nil {
			b.Fatal(err)
		}
		walkWall, walkCPU = walkWall+time.Since(start), walkCPU+processCPU()-cpu
	}
	n := float64(b.N)
	b.ReportMetric(float64(size)/(1<<20), "canonical-MiB")
	b.ReportMetric(oursWall.Seconds()*1000/n, "store-ms/op")
	b.ReportMetric(refWall.Seconds()*1000/n, "declcfg-ms/op")
	b.ReportMetric(float64(oursWall)/float64(refWall), "wall-ratio")
	b.ReportMetric(float64(oursCPU)/float64(refCPU), "cpu-ratio")
	b.ReportMetric(walkWall.Seconds()*1000/n, "walkmetas-ms/op")
	b.ReportMetric(float64(oursWall)/float64(walkWall), "walkmetas-wall-ratio")
	b.ReportMetric(float64(oursCPU)/float64(walkCPU), "walkmetas-cpu-ratio")
	b.ReportMetric(idle, "idle-RSS-MiB")
	b.ReportMetric(store, "store-peak-RSS-MiB")
	b.ReportMetric(ref, "declcfg-peak-RSS-MiB")
	b.ReportMetric(walk, "walkmetas-peak-RSS-MiB")
}

// declcfgLoadAndConvert is the reference: what operator-registry does to read and check a catalog.
func declcfgLoadAndConvert(root fs.FS) error {
	cfg, err := declcfg.LoadFS(context.Background(), root)
	if err != nil {
		return err
	}
	_, err = declcfg.ConvertToModel(*cfg)
	return err
}

// walkMetasToFile is the second reference: every blob of the catalog under root, as
// declcfg.WalkMetasFS produces it, appended to a file of dir, which is then renamed to all.json —
// the work upstream catalogd's LocalDir storage does to store a catalog.
func walkMetasToFile(root fs.FS, dir string) error {
	f, err := os.CreateTemp(dir, "walkmetas-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	var mu sync.Mutex // WalkMetasFS calls the function from several goroutines
	err = declcfg.WalkMetasFS(context.Background(), root, func(_ string, m *declcfg.Meta, err error) error {
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		_, err = f.Write(m.Blob)
		return err
	})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(f.Name(), filepath.Join(dir, "all.json"))
}

// processCPU is the user + system CPU time of this process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// storeScaleChildEnv makes the test binary started by childPeakRSS run TestCatalogStoreScaleChild:
// "<mode> <catalog dir>".
const storeScaleChildEnv = "OLMV1_STORE_SCALE_CHILD"

// childPeakRSS runs mode once in a new process of the test binary and returns its peak RSS in MiB.
func childPeakRSS(b *testing.B, mode, dir string) float64 {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCatalogStoreScaleChild$", "-test.v")
	cmd.Env = append(os.Environ(), storeScaleChildEnv+"="+mode+" "+dir)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestCatalogStoreScaleChild") {
		b.Fatalf("child %s: %v\n%s", mode, err, out)
	}
	_, after, ok := strings.Cut(string(out), peakMarker)
	var kib float64
	if _, err := fmt.Sscan(after, &kib); !ok || err != nil {
		b.Fatalf("child %s printed no peak RSS:\n%s", mode, out)
	}
	return kib / 1024
}

// peakMarker precedes the child's VmHWM (in KiB) in its output. The child reads its own high-water
// mark rather than the parent reading getrusage's ru_maxrss: on Linux a child started with vfork
// inherits in ru_maxrss the high-water mark of the parent's memory at exec time.
const peakMarker = "peak-rss-kib: "

// TestCatalogStoreScaleChild is the work of BenchmarkCatalogStoreScale's child processes; it does
// nothing (and is skipped) in a normal test run.
func TestCatalogStoreScaleChild(t *testing.T) {
	mode, dir, ok := strings.Cut(os.Getenv(storeScaleChildEnv), " ")
	if !ok {
		t.Skip("run by BenchmarkCatalogStoreScale")
	}
	switch mode {
	case "idle":
	case "store":
		s, err := New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		cat, err := fbc.Load(context.Background(), os.DirFS(dir))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put("scale", cat); err != nil {
			t.Fatal(err)
		}
		cat.Close()
	case "declcfg":
		if err := declcfgLoadAndConvert(os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
	case "walkmetas":
		if err := walkMetasToFile(os.DirFS(dir), t.TempDir()); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("unknown mode %q", mode)
	}
	fmt.Printf("%s%d\n", peakMarker, procStatusKiB("VmHWM:"))
}

// procStatusKiB reads a "<field> N kB" line of /proc/self/status.
func procStatusKiB(field string) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb
		}
	}
	return 0
}

// largeCatalog builds the ~60 MB catalog (sharedtestdata.LargeCatalog) under a temporary directory.
func largeCatalog(b *testing.B) string {
	b.Helper()
	root, dir := filepath.Dir(filepath.Dir(communityDir(b))), b.TempDir()
	if err := scaletestdata.LargeCatalog(root, dir); err != nil {
		b.Fatal(err)
	}
	return dir
}
