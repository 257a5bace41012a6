package bundletest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The install modes of a registry+v1 bundle, in the order they are tested.
const (
	AllNamespaces   = "AllNamespaces"
	OwnNamespace    = "OwnNamespace"
	SingleNamespace = "SingleNamespace"
	MultiNamespace  = "MultiNamespace"
)

// InstallModes are every install mode, in the order they are tested.
var InstallModes = []string{AllNamespaces, OwnNamespace, SingleNamespace, MultiNamespace}

// Bundle is what a bundle test needs to know of a registry+v1 bundle directory.
type Bundle struct {
	// Dir is the bundle directory (a copy pulled from the image for an image argument).
	Dir string
	// Package, Name and Version are the package (annotations.yaml), the CSV's name and spec.version.
	Package, Name, Version string
	// InstallModes are the install modes the CSV supports, in InstallModes order.
	InstallModes []string
	// Examples are the custom resources of the CSV's alm-examples annotation.
	Examples []*unstructured.Unstructured
	// Channels and DefaultChannel are the channels of annotations.yaml.
	Channels       []string
	DefaultChannel string
	// CRDs are the names of the CustomResourceDefinitions in manifests/.
	CRDs []string
}

// ReadBundle reads the bundle directory dir: its package from metadata/annotations.yaml and the
// rest from the ClusterServiceVersion and CRDs in manifests/.
func ReadBundle(dir string) (*Bundle, error) {
	b := &Bundle{Dir: dir}
	var ann struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := readYAML(filepath.Join(dir, "metadata", "annotations.yaml"), &ann); err != nil {
		return nil, fmt.Errorf("bundle %s is not a registry+v1 bundle (metadata/annotations.yaml): %w", dir, err)
	}
	b.Package = ann.Annotations["operators.operatorframework.io.bundle.package.v1"]
	if b.Package == "" {
		return nil, fmt.Errorf("bundle %s: metadata/annotations.yaml has no operators.operatorframework.io.bundle.package.v1", dir)
	}
	for _, c := range strings.Split(ann.Annotations["operators.operatorframework.io.bundle.channels.v1"], ",") {
		if c = strings.TrimSpace(c); c != "" {
			b.Channels = append(b.Channels, c)
		}
	}
	b.DefaultChannel = ann.Annotations["operators.operatorframework.io.bundle.channel.default.v1"]
	if b.DefaultChannel == "" && len(b.Channels) > 0 {
		b.DefaultChannel = b.Channels[0]
	}
	entries, err := os.ReadDir(filepath.Join(dir, "manifests"))
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", dir, err)
	}
	var csv *csvFields
	for _, e := range entries {
		if e.IsDir() || !(strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml") || strings.HasSuffix(e.Name(), ".json")) {
			continue
		}
		var m csvFields
		if err := readYAML(filepath.Join(dir, "manifests", e.Name()), &m); err != nil {
			return nil, fmt.Errorf("bundle %s: manifests/%s: %w", dir, e.Name(), err)
		}
		switch m.Kind {
		case "ClusterServiceVersion":
			mm := m
			csv = &mm
		case "CustomResourceDefinition":
			b.CRDs = append(b.CRDs, m.Metadata.Name)
		}
	}
	if csv == nil {
		return nil, fmt.Errorf("bundle %s: no ClusterServiceVersion in manifests/", dir)
	}
	b.Name, b.Version = csv.Metadata.Name, csv.Spec.Version
	for _, mode := range InstallModes {
		for _, im := range csv.Spec.InstallModes {
			if im.Type == mode && im.Supported {
				b.InstallModes = append(b.InstallModes, mode)
			}
		}
	}
	if b.Examples, err = parseExamples(csv.Metadata.Annotations["alm-examples"]); err != nil {
		return nil, fmt.Errorf("bundle %s: CSV %s: annotation alm-examples: %w", dir, b.Name, err)
	}
	return b, nil
}

// csvFields are the fields of a manifest that ReadBundle reads.
type csvFields struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name        string            `json:"name"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Version      string `json:"version"`
		InstallModes []struct {
			Type      string `json:"type"`
			Supported bool   `json:"supported"`
		} `json:"installModes"`
	} `json:"spec"`
}

// parseExamples parses an alm-examples annotation: a JSON array of objects (empty: none).
func parseExamples(s string) ([]*unstructured.Unstructured, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var raw []map[string]any
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return nil, fmt.Errorf("not a JSON array of objects: %w", err)
	}
	out := make([]*unstructured.Unstructured, 0, len(raw))
	for i, o := range raw {
		u := &unstructured.Unstructured{Object: o}
		if u.GetAPIVersion() == "" || u.GetKind() == "" {
			return nil, fmt.Errorf("example %d has no apiVersion or kind", i)
		}
		out = append(out, u)
	}
	return out, nil
}

func readYAML(path string, into any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return yaml.Unmarshal(data, into)
}

// ParseInstallModes parses a comma-separated list of install modes (case-insensitive).
func ParseInstallModes(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		found := ""
		for _, m := range InstallModes {
			if strings.EqualFold(f, m) {
				found = m
			}
		}
		if found == "" {
			return nil, fmt.Errorf("install mode %q: use %s", f, strings.Join(InstallModes, ", "))
		}
		out = append(out, found)
	}
	return out, nil
}
