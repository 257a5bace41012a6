package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Sizing of concurrent unpacks. Storing a catalog (fbc.Load, then storage.Put) holds in memory its
// largest file and the packages being validated, not the catalog: the 60 MB OpenShift-class
// catalog of BenchmarkCatalogStoreScale peaks at about 52 MiB of process RSS, 30 MiB above an idle
// process. unpackBudget counts a whole such peak per unpack (with room for a larger package) and
// servingReserve what catalogd needs besides: serving five large catalogs with the CatalogMetadata
// API on, the Go runtime, client caches.
const (
	unpackBudget   = 64 << 20
	servingReserve = 128 << 20
	// maxDefaultUnpacks caps the default: more unpacks at once than CPUs only queue for them.
	maxDefaultUnpacks = 8
	// unpacksWithoutLimit is the default when no memory limit can be read.
	unpacksWithoutLimit = 2
)

// cgroupMemoryMax is the cgroup v2 memory limit of this container.
const cgroupMemoryMax = "/sys/fs/cgroup/memory.max"

// memoryLimit reads a cgroup v2 memory.max file: ok is false when there is no limit ("max") or
// the file cannot be read (cgroup v1, not Linux).
func memoryLimit(path string) (limit int64, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}

// defaultUnpacks is --max-concurrent-unpacks when it is not given:
//
//	(limit − 128 MiB) / 64 MiB, at least 1 and at most 8; 2 without a memory limit.
//
// e.g. 256 MiB → 2, 384 MiB → 4, 192 MiB or less → 1.
func defaultUnpacks(limit int64, ok bool) int {
	if !ok {
		return unpacksWithoutLimit
	}
	return int(min(max((limit-servingReserve)/unpackBudget, 1), maxDefaultUnpacks))
}

// unpackConcurrency resolves --max-concurrent-unpacks (0: derived from the memory limit).
func unpackConcurrency(flag int, memoryMaxPath string) (int, error) {
	if flag < 0 {
		return 0, errors.New("--max-concurrent-unpacks must be 1 or more (0 derives it from the container's memory limit)")
	}
	if flag > 0 {
		return flag, nil
	}
	return defaultUnpacks(memoryLimit(memoryMaxPath)), nil
}

// describeUnpackConcurrency says in the start-up log where the number came from.
func describeUnpackConcurrency(flag, n int, memoryMaxPath string) string {
	if flag > 0 {
		return fmt.Sprintf("%d (--max-concurrent-unpacks)", n)
	}
	if limit, ok := memoryLimit(memoryMaxPath); ok {
		return fmt.Sprintf("%d (derived from the memory limit %d MiB in %s)", n, limit>>20, memoryMaxPath)
	}
	return fmt.Sprintf("%d (no memory limit in %s)", n, memoryMaxPath)
}
