package helm

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
)

const (
	chartFile  = "Chart.yaml"
	ignoreFile = ".helmignore"
)

// loadChart finds the chart in the bundle content and loads it. The chart is, in order of
// preference: the content root (Chart.yaml at the root: an OCI chart artifact, a chart directory in
// git or in ConfigMaps), a single packaged chart (*.tgz) at the root (a chart archive over HTTP or
// in a ConfigMap), or a single directory at the root holding a chart (an extracted archive). It also
// returns where the chart was found, for messages.
func loadChart(content fs.FS) (*chart.Chart, string, error) {
	if _, err := fs.Stat(content, chartFile); err == nil {
		ch, err := loadDir(content, ".")
		return ch, "the bundle root", err
	}
	entries, err := fs.ReadDir(content, ".")
	if err != nil {
		return nil, "", fmt.Errorf("reading the bundle: %w", err)
	}
	var archives, dirs []string
	for _, e := range entries {
		switch {
		case e.IsDir():
			if _, err := fs.Stat(content, path.Join(e.Name(), chartFile)); err == nil {
				dirs = append(dirs, e.Name())
			}
		case strings.HasSuffix(e.Name(), ".tgz") || strings.HasSuffix(e.Name(), ".tar.gz"):
			archives = append(archives, e.Name())
		}
	}
	switch {
	case len(archives) == 1 && len(dirs) == 0:
		data, err := fs.ReadFile(content, archives[0])
		if err != nil {
			return nil, "", err
		}
		ch, err := loader.LoadArchive(bytes.NewReader(data))
		if err != nil {
			return nil, "", fmt.Errorf("chart archive %s cannot be loaded: %w", archives[0], err)
		}
		return ch, archives[0], nil
	case len(dirs) == 1 && len(archives) == 0:
		sub, err := fs.Sub(content, dirs[0])
		if err != nil {
			return nil, "", err
		}
		ch, err := loadDir(sub, dirs[0])
		return ch, dirs[0] + "/", err
	case len(dirs)+len(archives) > 1:
		return nil, "", fmt.Errorf("the bundle holds several charts (%s): point spec.source at exactly one", strings.Join(append(dirs, archives...), ", "))
	}
	return nil, "", errors.New("the bundle is not a Helm chart: there is no Chart.yaml at its root, no chart archive (.tgz) and no directory with a Chart.yaml; point spec.source at a chart (for git, set source.git.directory)")
}

// loadDir loads the chart whose Chart.yaml is at the root of dir, leaving out what its .helmignore
// names (as `helm install ./dir` does). where names dir in messages.
func loadDir(dir fs.FS, where string) (*chart.Chart, error) {
	rules, err := readIgnore(dir)
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", where, ignoreFile, err)
	}
	var files []*loader.BufferedFile
	err = fs.WalkDir(dir, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		if rules.ignored(p, d.IsDir()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		data, err := fs.ReadFile(dir, p)
		if err != nil {
			return err
		}
		files = append(files, &loader.BufferedFile{Name: p, Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the chart in %s: %w", where, err)
	}
	ch, err := loader.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("the chart in %s cannot be loaded: %w", where, err)
	}
	return ch, nil
}

// ignoreRule is one pattern of a .helmignore file.
type ignoreRule struct {
	glob     string
	dirOnly  bool // trailing slash: directories only
	fullPath bool // contains a slash: matched against the path from the chart root
}

type ignoreRules []ignoreRule

// readIgnore parses .helmignore with Helm's matching rules: a pattern without a slash matches a
// base name at any depth, one with a slash the path from the chart root, a trailing slash limits it
// to directories. Helm's default rule leaves hidden files under templates/ out. Negated patterns
// (!pattern) are not supported and are skipped.
func readIgnore(dir fs.FS) (ignoreRules, error) {
	rules := ignoreRules{{glob: "templates/.?*", fullPath: true}}
	data, err := fs.ReadFile(dir, ignoreFile)
	if errors.Is(err, fs.ErrNotExist) {
		return rules, nil
	}
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		if n == 1 {
			text = strings.TrimPrefix(text, "\ufeff") // a UTF-8 byte order mark, as Helm drops it
		}
		line := strings.TrimSpace(text)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "!") {
			continue
		}
		if strings.Contains(line, "**") {
			return nil, fmt.Errorf("line %d: ** is not supported by Helm", n)
		}
		r := ignoreRule{}
		if strings.HasSuffix(line, "/") {
			r.dirOnly, line = true, strings.TrimSuffix(line, "/")
		}
		// A leading slash anchors the pattern at the chart root, as any other slash does.
		anchored := strings.HasPrefix(line, "/")
		line = strings.TrimPrefix(line, "/")
		r.fullPath, r.glob = anchored || strings.Contains(line, "/"), line
		if _, err := path.Match(r.glob, ""); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		rules = append(rules, r)
	}
	return rules, sc.Err()
}

func (rs ignoreRules) ignored(rel string, isDir bool) bool {
	for _, r := range rs {
		if r.dirOnly && !isDir {
			continue
		}
		name := path.Base(rel)
		if r.fullPath {
			name = rel
		}
		if ok, _ := path.Match(r.glob, name); ok {
			return true
		}
	}
	return false
}
