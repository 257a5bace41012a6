package imagebuild

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"sigs.k8s.io/yaml"
)

const (
	// HelmConfigMediaType is the config media type of a Helm chart in an OCI registry; the config
	// is the chart's Chart.yaml metadata as JSON.
	HelmConfigMediaType = "application/vnd.cncf.helm.config.v1+json"
	// HelmChartContentMediaType is the media type of the one layer of a Helm chart in an OCI
	// registry: the packaged chart (.tgz) as `helm package` writes it.
	HelmChartContentMediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"

	chartFile = "Chart.yaml"
)

// chartMetadata is the content of a Chart.yaml, with the JSON field names Helm uses in the OCI
// config blob.
type chartMetadata struct {
	Name         string            `json:"name,omitempty"`
	Home         string            `json:"home,omitempty"`
	Sources      []string          `json:"sources,omitempty"`
	Version      string            `json:"version,omitempty"`
	Description  string            `json:"description,omitempty"`
	Keywords     []string          `json:"keywords,omitempty"`
	Maintainers  []chartMaintainer `json:"maintainers,omitempty"`
	Icon         string            `json:"icon,omitempty"`
	APIVersion   string            `json:"apiVersion,omitempty"`
	Condition    string            `json:"condition,omitempty"`
	Tags         string            `json:"tags,omitempty"`
	AppVersion   string            `json:"appVersion,omitempty"`
	Deprecated   bool              `json:"deprecated,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	KubeVersion  string            `json:"kubeVersion,omitempty"`
	Dependencies []chartDependency `json:"dependencies,omitempty"`
	Type         string            `json:"type,omitempty"`
}

type chartMaintainer struct {
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
	URL   string `json:"url,omitempty"`
}

type chartDependency struct {
	Name         string   `json:"name"`
	Version      string   `json:"version,omitempty"`
	Repository   string   `json:"repository"`
	Condition    string   `json:"condition,omitempty"`
	Tags         []string `json:"tags,omitempty"`
	Enabled      bool     `json:"enabled,omitempty"`
	ImportValues []any    `json:"import-values,omitempty"`
	Alias        string   `json:"alias,omitempty"`
}

// HelmChartArtifact builds a Helm chart as an OCI artifact in Helm's own format: an OCI image
// manifest whose config (media type application/vnd.cncf.helm.config.v1+json) is the Chart.yaml
// metadata as JSON, and whose single layer (application/vnd.cncf.helm.chart.content.v1.tar+gzip)
// is the packaged chart.
//
// chartPath is either a chart directory (with Chart.yaml at its root) or a packaged chart archive
// (.tgz). A directory is packaged like `helm package` does: its files go under a top-level folder
// named after the chart, and the paths its .helmignore names are left out. An archive is used
// byte for byte.
func HelmChartArtifact(chartPath string) (v1.Image, error) {
	info, err := os.Stat(chartPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("helm chart %q not found (pass a chart directory with Chart.yaml, or a .tgz made by `helm package`)", chartPath)
	case err != nil:
		return nil, fmt.Errorf("helm chart %q: %w", chartPath, err)
	}

	var meta *chartMetadata
	var tgz []byte
	if info.IsDir() {
		meta, tgz, err = packageChartDir(chartPath)
	} else {
		meta, tgz, err = readChartArchive(chartPath)
	}
	if err != nil {
		return nil, fmt.Errorf("helm chart %q: %w", chartPath, err)
	}
	img, err := newHelmArtifact(meta, tgz)
	if err != nil {
		return nil, fmt.Errorf("helm chart %q: %w", chartPath, err)
	}
	return img, nil
}

// packageChartDir packages a chart directory into a deterministic .tgz.
func packageChartDir(dir string) (*chartMetadata, []byte, error) {
	data, err := os.ReadFile(filepath.Join(dir, chartFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("%s not found (a chart directory has Chart.yaml at its root; is this the chart's root folder?)", chartFile)
	}
	if err != nil {
		return nil, nil, err
	}
	meta, err := parseChartMetadata(data)
	if err != nil {
		return nil, nil, err
	}
	rules, err := loadHelmIgnore(dir)
	if err != nil {
		return nil, nil, err
	}
	entries, err := walkTree(dir, walkOptions{dereference: true, ignore: rules.ignored})
	if err != nil {
		return nil, nil, err
	}
	if !containsFile(entries, chartFile) {
		return nil, nil, fmt.Errorf("%s is excluded by %s (remove the pattern that matches it)", chartFile, helmIgnoreFile)
	}
	var tarBuf bytes.Buffer
	if err := writeTar(&tarBuf, entries, tarOptions{prefix: meta.Name, filesOnly: true}); err != nil {
		return nil, nil, err
	}
	tgz, err := gzipBytes(tarBuf.Bytes())
	if err != nil {
		return nil, nil, err
	}
	return meta, tgz, nil
}

func containsFile(entries []entry, rel string) bool {
	for _, e := range entries {
		if e.rel == rel && e.kind == kindFile {
			return true
		}
	}
	return false
}

// readChartArchive reads a packaged chart and the Chart.yaml at the root of its top-level folder.
func readChartArchive(p string) (*chartMetadata, []byte, error) {
	tgz, err := os.ReadFile(p)
	if err != nil {
		return nil, nil, err
	}
	const hint = "pass a chart directory, or a .tgz made by `helm package`"
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		return nil, nil, fmt.Errorf("not a gzip-compressed chart archive: %w (%s)", err, hint)
	}
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, nil, fmt.Errorf("no <chart>/%s in the archive (%s)", chartFile, hint)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("read chart archive: %w (%s)", err, hint)
		}
		name := strings.TrimPrefix(path.Clean(hdr.Name), "./")
		top, rest, ok := strings.Cut(name, "/")
		if !ok || top == "" || rest != chartFile || hdr.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, nil, fmt.Errorf("read %s from the archive: %w", name, err)
		}
		meta, err := parseChartMetadata(data)
		if err != nil {
			return nil, nil, err
		}
		return meta, tgz, nil
	}
}

// parseChartMetadata parses Chart.yaml and checks the fields Helm requires.
func parseChartMetadata(data []byte) (*chartMetadata, error) {
	var meta chartMetadata
	if err := yaml.Unmarshal(data, &meta); err != nil {
		return nil, fmt.Errorf("%s: %w", chartFile, err)
	}
	var missing []string
	if meta.APIVersion == "" {
		missing = append(missing, "apiVersion")
	}
	if meta.Name == "" {
		missing = append(missing, "name")
	}
	if meta.Version == "" {
		missing = append(missing, "version")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s has no %s (Helm needs apiVersion, name and version)", chartFile, strings.Join(missing, ", "))
	}
	if meta.APIVersion != "v1" && meta.APIVersion != "v2" {
		return nil, fmt.Errorf("%s has apiVersion %q; Helm charts use v2 (or v1 for old charts)", chartFile, meta.APIVersion)
	}
	if strings.ContainsAny(meta.Name, `/\`) || meta.Name == "." || meta.Name == ".." {
		return nil, fmt.Errorf("%s has name %q; a chart name cannot contain slashes", chartFile, meta.Name)
	}
	return &meta, nil
}

// chartAnnotations are the manifest annotations Helm sets when it pushes a chart, minus the
// creation time (which would make builds irreproducible).
func chartAnnotations(meta *chartMetadata) map[string]string {
	a := map[string]string{
		"org.opencontainers.image.title":   meta.Name,
		"org.opencontainers.image.version": meta.Version,
	}
	if meta.Description != "" {
		a["org.opencontainers.image.description"] = meta.Description
	}
	if meta.Home != "" {
		a["org.opencontainers.image.url"] = meta.Home
	}
	if len(meta.Sources) > 0 {
		a["org.opencontainers.image.source"] = meta.Sources[0]
	}
	var authors []string
	for _, m := range meta.Maintainers {
		if m.Email != "" {
			authors = append(authors, fmt.Sprintf("%s (%s)", m.Name, m.Email))
		} else {
			authors = append(authors, m.Name)
		}
	}
	if len(authors) > 0 {
		a["org.opencontainers.image.authors"] = strings.Join(authors, ", ")
	}
	return a
}
