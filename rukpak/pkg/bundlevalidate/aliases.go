package bundlevalidate

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/olmv1/olmv1/rukpak/internal/provisioner/manifest"
)

// checkAliasesOfEveryFile reports every file of the bundle directory that holds a YAML document
// whose aliases expand it too much (manifest.CheckFileAliases), and returns false when there is
// one. operator-framework/api's bundle loader decodes every file of the directory but hidden ones
// with a YAML decoder that expands aliases, so its validators must not run on such a bundle. Our
// own reading of manifests/ and metadata/annotations.yaml refuses these documents by itself.
func checkAliasesOfEveryFile(dir string, r *Report) bool {
	ok := true
	_ = fs.WalkDir(os.DirFS(dir), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable entries are the loader's to report
		}
		hidden := strings.HasPrefix(d.Name(), ".") && p != "."
		switch {
		case d.IsDir() && hidden:
			return fs.SkipDir
		case d.IsDir() || hidden:
			return nil
		}
		full := filepath.Join(dir, filepath.FromSlash(p))
		// The loader opens symbolic links to files too.
		if st, err := os.Stat(full); err != nil || !st.Mode().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(full)
		if err != nil {
			return nil
		}
		if err := manifest.CheckFileAliases(data); err != nil {
			r.add(Problem{File: p, Message: err.Error()})
			ok = false
		}
		return nil
	})
	return ok
}
