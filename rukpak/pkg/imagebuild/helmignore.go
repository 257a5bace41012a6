package imagebuild

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// helmIgnoreFile is the file in a chart directory that lists paths `helm package` leaves out.
const helmIgnoreFile = ".helmignore"

// helmIgnorePattern is one line of a .helmignore file.
type helmIgnorePattern struct {
	glob string
	// dirOnly is set by a trailing slash: the pattern matches directories only.
	dirOnly bool
	// fullPath is set when the pattern has a slash: it matches the path from the chart root
	// rather than the base name.
	fullPath bool
}

// helmIgnoreRules decide which chart files are packaged, with the same matching as `helm package`:
// a pattern without a slash matches the base name at any depth, a pattern with a slash matches the
// path from the chart root (a leading slash is allowed), a trailing slash restricts it to
// directories, and an ignored directory is left out with everything below it. Like Helm, hidden
// files under templates/ are always left out.
type helmIgnoreRules []helmIgnorePattern

// loadHelmIgnore reads chartDir/.helmignore (if there is one) and adds Helm's default rule.
func loadHelmIgnore(chartDir string) (helmIgnoreRules, error) {
	rules := helmIgnoreRules{{glob: "templates/.?*", fullPath: true}}
	data, err := os.ReadFile(filepath.Join(chartDir, helmIgnoreFile))
	if errors.Is(err, fs.ErrNotExist) {
		return rules, nil
	}
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		p, err := parseHelmIgnoreLine(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", helmIgnoreFile, n, err)
		}
		if p != nil {
			rules = append(rules, *p)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", helmIgnoreFile, err)
	}
	return rules, nil
}

// parseHelmIgnoreLine parses one line; blank lines and comments give nil.
func parseHelmIgnoreLine(line string) (*helmIgnorePattern, error) {
	line = strings.TrimSpace(line)
	if line == "" || strings.HasPrefix(line, "#") {
		return nil, nil
	}
	if strings.HasPrefix(line, "!") {
		// Helm's own negation semantics differ from .gitignore's; rather than guess which one the
		// author meant, refuse the line.
		return nil, fmt.Errorf("negated pattern %q is not supported (package the chart with `helm package` and pass the .tgz instead)", line)
	}
	if strings.Contains(line, "**") {
		return nil, fmt.Errorf("pattern %q: ** is not supported by Helm", line)
	}
	p := &helmIgnorePattern{glob: line}
	if strings.HasSuffix(p.glob, "/") {
		p.dirOnly = true
		p.glob = strings.TrimSuffix(p.glob, "/")
	}
	// A leading slash anchors the pattern at the chart root; so does a slash inside it.
	p.fullPath = strings.Contains(p.glob, "/")
	p.glob = strings.TrimPrefix(p.glob, "/")
	if _, err := path.Match(p.glob, "x"); err != nil {
		return nil, fmt.Errorf("pattern %q: %w", line, err)
	}
	return p, nil
}

// ignored reports whether rel (slash-separated, relative to the chart root) is left out.
func (r helmIgnoreRules) ignored(rel string, isDir bool) bool {
	for _, p := range r {
		if p.dirOnly && !isDir {
			continue
		}
		name := rel
		if !p.fullPath {
			name = path.Base(rel)
		}
		if ok, _ := path.Match(p.glob, name); ok {
			return true
		}
	}
	return false
}
