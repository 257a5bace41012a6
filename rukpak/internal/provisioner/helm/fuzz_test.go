package helm

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"helm.sh/helm/v3/pkg/ignore"

	"github.com/olmv1/olmv1/platform/sharedtestdata"
)

// fuzzIgnorePaths are chart paths every input is also matched against.
var fuzzIgnorePaths = []string{
	"Chart.yaml", "values.yaml", "templates", "templates/deployment.yaml", "templates/.hidden.yaml",
	"templates/sub/x.bak", "charts", "charts/sub/Chart.yaml", "crds/a.yaml", ".git", ".git/config", "a/b/c~",
}

// FuzzHelmIgnore checks the .helmignore handling of chart directories (readIgnore, ignored,
// loadDir) on arbitrary ignore files and paths: no panic; every file Helm's own parser
// (helm.sh/helm/v3/pkg/ignore, which `helm install ./dir` and `helm package` use) accepts is
// accepted, and, for files without negated patterns (which readIgnore documents as unsupported),
// every path is ignored exactly when Helm ignores it; a chart loaded with the file holds no file it
// ignores.
func FuzzHelmIgnore(f *testing.F) {
	seeds := []string{
		"# editor leftovers\n*.bak\n",
		".DS_Store\n.git/\n.gitignore\n*.swp\n*~\n.idea/\n*.tmproj\n",
		"/templates/deployment.yaml\n",
		"templates/*.yaml\n",
		"charts/\n/crds\n",
		"*\n",
		"  values.yaml  \r\n",
		"[\n",
		"a/**/b\n",
		"!keep.txt\n*.txt\n",
		"\\*\n",
		"/\n//\n",
		"",
	}
	for _, rel := range []string{"helm/hello-world/.helmignore", "helm/podinfo/.helmignore"} {
		if data := fuzzSharedTestdata(f, rel); data != nil {
			seeds = append(seeds, string(data))
		}
	}
	if data, err := os.ReadFile("testdata/demo/.helmignore"); err == nil {
		seeds = append(seeds, string(data))
	}
	for i, s := range seeds {
		f.Add(s, fuzzIgnorePaths[i%len(fuzzIgnorePaths)], i%2 == 0)
	}

	f.Fuzz(func(t *testing.T, ignoreFile, rel string, isDir bool) {
		ours, err := readIgnore(fstest.MapFS{".helmignore": {Data: []byte(ignoreFile)}})
		_, helmErr := ignore.Parse(strings.NewReader(ignoreFile))
		if err != nil {
			// Helm checks a pattern against "abc" only, so it lets some malformed ones through (they
			// then never match); refusing them is fine. Anything else Helm accepts must be accepted.
			if helmErr == nil && !errors.Is(err, path.ErrBadPattern) {
				t.Fatalf("readIgnore rejects a .helmignore that Helm accepts: %v", err)
			}
		} else {
			paths := append([]string{rel}, fuzzIgnorePaths...)
			for _, p := range paths {
				_ = ours.ignored(p, isDir) // no panic, whatever the path
			}
			if helmErr == nil && !hasNegation(ignoreFile) {
				for _, p := range paths {
					if !fs.ValidPath(p) || p == "." {
						continue // loadDir only asks about paths of the chart's file system
					}
					// Parsed again for every path: Helm's matcher of a pattern starting with "/" trims
					// one more slash from it on every call ("//x" matches as "/x", then as "x").
					helmRules, _ := ignore.Parse(strings.NewReader(ignoreFile))
					helmRules.AddDefaults() // as helm's loader.LoadDir does
					got, want := ours.ignored(p, isDir), helmRules.Ignore(p, fakeFileInfo{name: path.Base(p), dir: isDir})
					if got != want {
						t.Fatalf("%q (directory: %v): ignored = %v, Helm says %v, with .helmignore %q", p, isDir, got, want, ignoreFile)
					}
				}
			}
		}

		// A chart with this .helmignore and a file at rel.
		chart := fstest.MapFS{
			"Chart.yaml":                {Data: []byte("apiVersion: v2\nname: fuzz\nversion: 0.1.0\n")},
			"values.yaml":               {Data: []byte("a: 1\n")},
			"templates/cm.yaml":         {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n")},
			"templates/.hidden.yaml":    {Data: []byte("hidden")},
			"templates/sub/x.bak":       {Data: []byte("backup")},
			"charts/sub/Chart.yaml":     {Data: []byte("apiVersion: v2\nname: sub\nversion: 0.1.0\n")},
			"charts/sub/templates/a.tx": {Data: []byte("x")},
			".helmignore":               {Data: []byte(ignoreFile)},
		}
		if fs.ValidPath(rel) && rel != "." && !isDir {
			if _, exists := chart[rel]; !exists {
				chart[rel] = &fstest.MapFile{Data: []byte("fuzz")}
			}
		}
		ch, err := loadDir(chart, "fuzz")
		if err != nil || ours == nil {
			return
		}
		for _, file := range ch.Raw {
			for p := file.Name; p != "."; p = path.Dir(p) {
				info, serr := fs.Stat(chart, p)
				if serr == nil && ours.ignored(p, info.IsDir()) {
					t.Fatalf("the loaded chart holds %s although .helmignore ignores %s", file.Name, p)
				}
			}
		}
	})
}

// hasNegation reports whether an ignore file has a negated pattern (a line starting with "!", after
// the byte order mark Helm drops).
func hasNegation(ignoreFile string) bool {
	for _, l := range strings.Split(strings.TrimPrefix(ignoreFile, "\ufeff"), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "!") {
			return true
		}
	}
	return false
}

type fakeFileInfo struct {
	name string
	dir  bool
}

func (f fakeFileInfo) Name() string { return f.name }
func (f fakeFileInfo) Size() int64  { return 0 }
func (f fakeFileInfo) Mode() fs.FileMode {
	if f.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (f fakeFileInfo) ModTime() time.Time { return time.Time{} }
func (f fakeFileInfo) IsDir() bool        { return f.dir }
func (f fakeFileInfo) Sys() any           { return nil }

// fuzzSharedTestdata returns the file rel of the shared real test data ($OLMV1_TESTDATA, by default
// ../shared/testdata next to the repository root), or nil when it is absent: the fuzz targets still
// run on their built-in seeds.
func fuzzSharedTestdata(tb testing.TB, rel string) []byte {
	tb.Helper()
	root, ok := sharedtestdata.Root()
	if !ok {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		tb.Logf("fuzz seed %s not added: %v", rel, err)
		return nil
	}
	return bytes.Clone(data)
}
