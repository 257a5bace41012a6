package bundlegen

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
)

// Write writes the bundle into dir, and removes the files of dir's manifests/ and metadata/ that the
// bundle no longer has (other files of dir, e.g. a Dockerfile or tests/, are left alone). It
// returns the paths removed.
func (r *Result) Write(dir string) (removed []string, err error) {
	have, err := bundleTree(dir)
	if err != nil {
		return nil, err
	}
	for _, p := range have {
		if _, ok := r.Files[p]; !ok {
			if err := os.Remove(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
				return removed, err
			}
			removed = append(removed, p)
		}
	}
	for _, p := range r.Paths() {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return removed, err
		}
		if err := os.WriteFile(full, r.Files[p], 0o644); err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// Check compares the bundle with the one committed in dir (its manifests/ and metadata/) and writes
// a unified diff of every file that differs to out. It reports whether they are equal.
func (r *Result) Check(dir string, out io.Writer) (bool, error) {
	have, err := bundleTree(dir)
	if err != nil {
		return false, err
	}
	paths := map[string]bool{}
	for _, p := range have {
		paths[p] = true
	}
	for p := range r.Files {
		paths[p] = true
	}
	all := sortedKeys(paths)
	equal := true
	for _, p := range all {
		committed, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(p)))
		if err != nil && !os.IsNotExist(err) {
			return false, err
		}
		generated, ok := r.Files[p]
		if ok && bytes.Equal(committed, generated) && err == nil {
			continue
		}
		equal = false
		from, to := filepath.ToSlash(filepath.Join(dir, p))+" (committed)", p+" (generated)"
		switch {
		case err != nil:
			from = "/dev/null (not committed)"
		case !ok:
			to = "/dev/null (not generated)"
		}
		diff, derr := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A: difflib.SplitLines(string(committed)), B: difflib.SplitLines(string(generated)),
			FromFile: from, ToFile: to, Context: 3,
		})
		if derr != nil {
			return false, derr
		}
		fmt.Fprint(out, diff)
		if !strings.HasSuffix(diff, "\n") {
			fmt.Fprintln(out)
		}
	}
	return equal, nil
}

// bundleTree lists the files under dir's manifests/ and metadata/ (slash paths relative to dir).
func bundleTree(dir string) ([]string, error) {
	var out []string
	for _, sub := range []string{ManifestsDir, MetadataDir} {
		root := filepath.Join(dir, sub)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) && p == root {
					return nil
				}
				return err
			}
			if !d.IsDir() {
				rel, _ := filepath.Rel(dir, p)
				out = append(out, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(out)
	return out, nil
}
