// Package bundlevalidate checks a bundle directory before it is published, with the code rukpak runs
// when it installs the bundle. It is what `kubectl olmv1 bundle validate` runs.
//
// A registry+v1 bundle (manifests/ with a ClusterServiceVersion, metadata/annotations.yaml) goes
// through three layers, and every problem of every layer is reported, one Problem each:
//
//  1. this package's own checks of the CSV and annotations.yaml, which name the file and field and say
//     how to fix them: install modes spelled and combined correctly, owned CRDs present in manifests/,
//     the service accounts named by RBAC used by a deployment, webhook definitions that name existing
//     deployments and owned CRDs, annotations.yaml consistent with itself and the CSV;
//  2. operator-framework/api's default bundle validators (CSV, CRD and bundle validators);
//  3. rukpak's registry+v1 conversion (rukpak/internal/provisioner/registryv1) for every install mode
//     the CSV supports: the bundle is converted exactly as a BundleDeployment would convert it.
//
// A plain bundle (manifests/ only) is converted by rukpak's plain provisioner.
package bundlevalidate

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Level is the severity of a Problem.
type Level string

const (
	// LevelError: the bundle would be refused or would not work; it must be fixed.
	LevelError Level = "error"
	// LevelWarning: the bundle works but does not follow a convention.
	LevelWarning Level = "warning"
)

// Format is the bundle format Validate found.
type Format string

const (
	FormatRegistryV1 Format = "registry+v1"
	FormatPlain      Format = "plain+v0"
)

// Problem is one finding.
type Problem struct {
	Level Level `json:"level"`
	// File is relative to the bundle directory, e.g. manifests/foo.clusterserviceversion.yaml.
	File string `json:"file"`
	// Field is the YAML path inside the file, e.g. spec.installModes[1].type ("" for the whole file).
	Field string `json:"field,omitempty"`
	// Message says what is wrong.
	Message string `json:"message"`
	// Fix says how to fix it ("" when the message says it already).
	Fix string `json:"fix,omitempty"`
	// Source is the check that found it: "olmv1", "operator-framework/api" or "rukpak".
	Source string `json:"source"`
}

// String is the one-line form: `file: field: message; fix: how`.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Field != "" {
		b.WriteString(": ")
		b.WriteString(p.Field)
	}
	b.WriteString(": ")
	if p.Level == LevelWarning {
		b.WriteString("warning: ")
	}
	b.WriteString(p.Message)
	if p.Fix != "" {
		b.WriteString("; fix: ")
		b.WriteString(p.Fix)
	}
	if p.Source != "" && p.Source != sourceOwn {
		b.WriteString(" [")
		b.WriteString(p.Source)
		b.WriteString("]")
	}
	return b.String()
}

const (
	sourceOwn    = "olmv1"
	sourceAPI    = "operator-framework/api"
	sourceRukpak = "rukpak"
)

// Report is the result of Validate.
type Report struct {
	Dir    string `json:"dir"`
	Format Format `json:"format"`
	// Package, Name and Version describe a registry+v1 bundle (from annotations.yaml and the CSV).
	Package  string    `json:"package,omitempty"`
	Name     string    `json:"name,omitempty"`
	Version  string    `json:"version,omitempty"`
	Problems []Problem `json:"problems"`
}

// Errors counts the problems of level error.
func (r *Report) Errors() int {
	n := 0
	for _, p := range r.Problems {
		if p.Level == LevelError {
			n++
		}
	}
	return n
}

// Valid reports whether no problem is an error.
func (r *Report) Valid() bool { return r.Errors() == 0 }

// DetectFormat says whether dir holds a registry+v1 bundle (metadata/annotations.yaml, or a
// ClusterServiceVersion in manifests/) or a plain bundle.
func DetectFormat(dir string) Format {
	if _, err := os.Stat(filepath.Join(dir, "metadata", "annotations.yaml")); err == nil {
		return FormatRegistryV1
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "manifests"))
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".clusterserviceversion.yaml") || strings.HasSuffix(e.Name(), ".clusterserviceversion.yml") {
			return FormatRegistryV1
		}
	}
	return FormatPlain
}

// Validate checks the bundle in dir. The error is for a directory that cannot be read at all; every
// problem with the content is a Problem in the report.
func Validate(dir string) (*Report, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("bundle directory %q: %w", dir, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("bundle directory %q is not a directory", dir)
	}
	r := &Report{Dir: dir, Format: DetectFormat(dir), Problems: []Problem{}}
	switch r.Format {
	case FormatRegistryV1:
		validateRegistryV1(dir, r)
	default:
		validatePlain(dir, r)
	}
	slices.SortStableFunc(r.Problems, func(a, b Problem) int {
		if a.Level != b.Level {
			if a.Level == LevelError {
				return -1
			}
			return 1
		}
		return strings.Compare(a.File, b.File)
	})
	return r, nil
}

func (r *Report) add(p Problem) {
	if p.Source == "" {
		p.Source = sourceOwn
	}
	if p.Level == "" {
		p.Level = LevelError
	}
	for _, q := range r.Problems {
		if q.File == p.File && q.Field == p.Field && q.Message == p.Message {
			return
		}
	}
	r.Problems = append(r.Problems, p)
}
