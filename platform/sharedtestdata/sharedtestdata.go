// Package sharedtestdata locates the project's shared real test data (catalogs, bundles, charts of
// third parties, see ../shared/testdata/README.md) for tests and fuzz seeds of every module.
package sharedtestdata

import (
	"os"
	"path/filepath"
)

// Root is $OLMV1_TESTDATA, or else ../shared/testdata beside the repository root (RepoRoot). ok is
// false when neither can be named; the directory itself may still be absent, which callers handle
// as they need (skip, or seed less).
func Root() (root string, ok bool) {
	if root := os.Getenv("OLMV1_TESTDATA"); root != "" {
		return root, true
	}
	repo, ok := RepoRoot()
	if !ok {
		return "", false
	}
	return filepath.Join(repo, "..", "shared", "testdata"), true
}

// RepoRoot is the repository root: the directory holding go.work, found from the working directory
// up. ok is false when there is none.
func RepoRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}
