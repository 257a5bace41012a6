package bundletest

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/olmv1/olmv1/e2e/localcluster"
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

// ReadBundle reads the bundle directory dir with localcluster.ReadBundleDir (the reader the corpus
// specs use) and keeps what a bundle test needs: the package must be named, the install modes are
// put in InstallModes order and the alm-examples are parsed.
func ReadBundle(dir string) (*Bundle, error) {
	cb, err := localcluster.ReadBundleDir(dir, dir)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", dir, err)
	}
	if cb.Package == "" {
		return nil, fmt.Errorf("bundle %s: metadata/annotations.yaml has no operators.operatorframework.io.bundle.package.v1", dir)
	}
	b := &Bundle{Dir: dir, Package: cb.Package, Name: cb.CSVName, Version: cb.Version,
		Channels: cb.Channels, DefaultChannel: cb.DefaultChannel, CRDs: cb.CRDs}
	for _, mode := range InstallModes {
		if cb.Supports(mode) {
			b.InstallModes = append(b.InstallModes, mode)
		}
	}
	if b.Examples, err = parseExamples(cb.ALMExamples); err != nil {
		return nil, fmt.Errorf("bundle %s: CSV %s: annotation alm-examples: %w", dir, b.Name, err)
	}
	return b, nil
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
