package controller

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// What a registry+v1 bundle says of itself, read from its content (pure: a file system in, facts
// out). A direct bundle has no catalog entry, so its package, version and dependencies come from
// the same files OLM v0 and opm read:
//
//   - metadata/annotations.yaml: operators.operatorframework.io.bundle.package.v1 (the package);
//   - the ClusterServiceVersion in manifests/: metadata.name, spec.version, and
//     spec.customresourcedefinitions.required (each an olm.gvk.required, as OLM v0 resolves them);
//   - metadata/dependencies.yaml: olm.package (→ olm.package.required) and olm.gvk
//     (→ olm.gvk.required) entries;
//   - metadata/properties.yaml: olm.package.required and olm.gvk.required properties.
//
// Other dependency types (olm.constraint, olm.label.required) are counted in Unsupported and named
// in the status message, not checked.

// Property types of the dependencies a direct bundle reports.
const (
	propertyPackageRequired = "olm.package.required"
	propertyGVKRequired     = "olm.gvk.required"
	annotationBundlePackage = "operators.operatorframework.io.bundle.package.v1"
)

// BundleFacts is what a registry+v1 bundle declares.
type BundleFacts struct {
	Package string
	Version string
	CSVName string
	// Requires are its dependencies, sorted by type then value, without duplicates.
	Requires []Requirement
	// Unsupported names dependency types that are declared but not checked.
	Unsupported []string
}

// Requirement is one declared dependency: a package in a version range, or a group/version/kind.
type Requirement struct {
	Type         string
	Package      string
	VersionRange string
	Group        string
	Version      string
	Kind         string
}

// Value is how the status names r: "<package> <range>" or "<group>/<version> <Kind>".
func (r Requirement) Value() string {
	if r.Type == propertyPackageRequired {
		return strings.TrimSpace(r.Package + " " + r.VersionRange)
	}
	gv := r.Version
	if r.Group != "" {
		gv = r.Group + "/" + r.Version
	}
	return gv + " " + r.Kind
}

// ReadBundleFacts reads the facts of the registry+v1 bundle at the root of fsys.
func ReadBundleFacts(fsys fs.FS) (*BundleFacts, error) {
	f := &BundleFacts{}
	var ann struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := readYAML(fsys, "metadata/annotations.yaml", &ann, false); err != nil {
		return nil, err
	}
	f.Package = ann.Annotations[annotationBundlePackage]
	if err := readCSVFacts(fsys, f); err != nil {
		return nil, err
	}
	if f.Package == "" {
		return nil, fmt.Errorf("metadata/annotations.yaml has no %s: is this a registry+v1 bundle? (spec.source.bundle.format)", annotationBundlePackage)
	}
	seen := map[string]bool{}
	add := func(r Requirement) {
		if k := r.Type + " " + r.Value(); !seen[k] {
			seen[k] = true
			f.Requires = append(f.Requires, r)
		}
	}
	for _, r := range f.Requires {
		seen[r.Type+" "+r.Value()] = true
	}
	var deps struct {
		Dependencies []typedValue `json:"dependencies"`
	}
	if err := readYAML(fsys, "metadata/dependencies.yaml", &deps, true); err != nil {
		return nil, err
	}
	var props struct {
		Properties []typedValue `json:"properties"`
	}
	if err := readYAML(fsys, "metadata/properties.yaml", &props, true); err != nil {
		return nil, err
	}
	for _, d := range append(deps.Dependencies, props.Properties...) {
		switch d.Type {
		case "olm.package", propertyPackageRequired:
			var v struct {
				PackageName  string `json:"packageName"`
				Version      string `json:"version"`
				VersionRange string `json:"versionRange"`
			}
			if err := json.Unmarshal(d.Value, &v); err != nil || v.PackageName == "" {
				return nil, fmt.Errorf("dependency %s %s: want {packageName, version}", d.Type, d.Value)
			}
			add(Requirement{Type: propertyPackageRequired, Package: v.PackageName, VersionRange: v.Version + v.VersionRange})
		case "olm.gvk", propertyGVKRequired:
			var v struct{ Group, Version, Kind string }
			if err := json.Unmarshal(d.Value, &v); err != nil || v.Kind == "" || v.Version == "" {
				return nil, fmt.Errorf("dependency %s %s: want {group, version, kind}", d.Type, d.Value)
			}
			add(Requirement{Type: propertyGVKRequired, Group: v.Group, Version: v.Version, Kind: v.Kind})
		case "olm.constraint", "olm.label.required":
			f.Unsupported = append(f.Unsupported, d.Type)
		}
	}
	sort.SliceStable(f.Requires, func(i, j int) bool {
		if f.Requires[i].Type != f.Requires[j].Type {
			return f.Requires[i].Type > f.Requires[j].Type // packages first
		}
		return f.Requires[i].Value() < f.Requires[j].Value()
	})
	return f, nil
}

// typedValue is an entry of dependencies.yaml or properties.yaml.
type typedValue struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// readCSVFacts finds the ClusterServiceVersion among manifests/ and records its name, version and
// required CustomResourceDefinitions.
func readCSVFacts(fsys fs.FS, f *BundleFacts) error {
	entries, err := fs.ReadDir(fsys, "manifests")
	if err != nil {
		return fmt.Errorf("reading manifests/: %w (is this a registry+v1 bundle? see spec.source.bundle.format)", err)
	}
	for _, e := range entries {
		if e.IsDir() || !(strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml") || strings.HasSuffix(e.Name(), ".json")) {
			continue
		}
		data, err := fs.ReadFile(fsys, path.Join("manifests", e.Name()))
		if err != nil {
			return err
		}
		if !bytes.Contains(data, []byte("ClusterServiceVersion")) {
			continue
		}
		var csv struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Spec struct {
				Version string `json:"version"`
				CRDs    struct {
					Required []struct{ Name, Version, Kind string } `json:"required"`
				} `json:"customresourcedefinitions"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(data, &csv); err != nil {
			return fmt.Errorf("manifests/%s: %w", e.Name(), err)
		}
		if csv.Kind != "ClusterServiceVersion" {
			continue
		}
		f.CSVName, f.Version = csv.Metadata.Name, csv.Spec.Version
		for _, r := range csv.Spec.CRDs.Required {
			_, group, _ := strings.Cut(r.Name, ".")
			f.Requires = append(f.Requires, Requirement{Type: propertyGVKRequired, Group: group, Version: r.Version, Kind: r.Kind})
		}
		return nil
	}
	return fmt.Errorf("manifests/ holds no ClusterServiceVersion (is this a registry+v1 bundle? see spec.source.bundle.format)")
}

// readYAML decodes the YAML file name of fsys into v; a missing file is an error unless optional.
func readYAML(fsys fs.FS, name string, v any, optional bool) error {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		if optional && errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("reading %s: %w", name, err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
