// Package fbcedit builds and edits file-based catalogs for operator authors: it turns a registry+v1
// bundle into an olm.bundle blob, adds a bundle to a package with the upgrade edge computed from the
// channel (AddBundle), and renders a semver template into channels and edges (RenderSemver). It is
// pure: callers read and write the files.
package fbcedit

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/Masterminds/semver/v3"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/olmv1/olmv1/platform/yamlalias"
)

// Bundle is what a catalog needs to know about a registry+v1 bundle.
type Bundle struct {
	Package string
	// Name is the CSV name, the bundle's name in the catalog.
	Name    string
	Version *semver.Version
	// Channels and DefaultChannel come from metadata/annotations.yaml.
	Channels       []string
	DefaultChannel string
	// Replaces, Skips and SkipRange are what the CSV says (spec.replaces, spec.skips, the
	// olm.skipRange annotation); AddBundle uses them only as hints.
	Replaces  string
	Skips     []string
	SkipRange string
	// Properties of the olm.bundle blob: olm.package, olm.gvk, olm.gvk.required,
	// olm.package.required, olm.csv.metadata and those of metadata/properties.yaml.
	Properties []property.Property
}

// Blob returns the olm.bundle blob of the bundle, referencing image.
func (b *Bundle) Blob(image string) declcfg.Bundle {
	return declcfg.Bundle{Schema: declcfg.SchemaBundle, Name: b.Name, Package: b.Package, Image: image, Properties: b.Properties}
}

const (
	annotationsFile = "metadata/annotations.yaml"
	propertiesFile  = "metadata/properties.yaml"
	depsFile        = "metadata/dependencies.yaml"
)

// ReadBundle reads a registry+v1 bundle (a directory or an unpacked image).
func ReadBundle(content fs.FS) (*Bundle, error) {
	data, err := fs.ReadFile(content, annotationsFile)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s not found: a catalog entry needs a registry+v1 bundle (manifests/ and metadata/annotations.yaml)", annotationsFile)
		}
		return nil, err
	}
	if err := yamlalias.CheckFile(data); err != nil {
		return nil, fmt.Errorf("%s: %w", annotationsFile, err)
	}
	var ann struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(data, &ann); err != nil {
		return nil, fmt.Errorf("%s: %w", annotationsFile, err)
	}
	a := ann.Annotations
	b := &Bundle{Package: a["operators.operatorframework.io.bundle.package.v1"], DefaultChannel: a["operators.operatorframework.io.bundle.channel.default.v1"]}
	for _, c := range strings.Split(a["operators.operatorframework.io.bundle.channels.v1"], ",") {
		if c = strings.TrimSpace(c); c != "" {
			b.Channels = append(b.Channels, c)
		}
	}
	if b.Package == "" {
		return nil, fmt.Errorf("%s: operators.operatorframework.io.bundle.package.v1 is not set (run `kubectl olmv1 bundle validate`)", annotationsFile)
	}
	dir := "manifests"
	if m := a["operators.operatorframework.io.bundle.manifests.v1"]; m != "" {
		dir = strings.Trim(path.Clean(m), "/")
	}
	csv, err := readCSV(content, dir)
	if err != nil {
		return nil, err
	}
	b.Name = csv.Name
	b.Version, err = semver.StrictNewVersion(csv.Spec.Version.String())
	if err != nil || csv.Spec.Version.String() == "0.0.0" {
		return nil, fmt.Errorf("ClusterServiceVersion %q: spec.version %q is not a semantic version", csv.Name, csv.Spec.Version.String())
	}
	b.Replaces, b.Skips, b.SkipRange = csv.Spec.Replaces, csv.Spec.Skips, csv.Annotations["olm.skipRange"]

	props := []property.Property{property.MustBuildPackage(b.Package, b.Version.String())}
	for _, d := range csv.Spec.CustomResourceDefinitions.Owned {
		props = append(props, property.MustBuildGVK(crdGroup(d.Name), d.Version, d.Kind))
	}
	for _, d := range csv.Spec.APIServiceDefinitions.Owned {
		props = append(props, property.MustBuildGVK(d.Group, d.Version, d.Kind))
	}
	for _, d := range csv.Spec.CustomResourceDefinitions.Required {
		props = append(props, property.MustBuildGVKRequired(crdGroup(d.Name), d.Version, d.Kind))
	}
	for _, d := range csv.Spec.APIServiceDefinitions.Required {
		props = append(props, property.MustBuildGVKRequired(d.Group, d.Version, d.Kind))
	}
	deps, err := readDependencies(content)
	if err != nil {
		return nil, err
	}
	props = append(props, deps...)
	extra, err := readProperties(content, b)
	if err != nil {
		return nil, err
	}
	props = append(props, extra...)
	props = append(props, property.MustBuildCSVMetadata(*csv))
	b.Properties = property.Deduplicate(props)
	return b, nil
}

func crdGroup(name string) string {
	if i := strings.IndexByte(name, '.'); i >= 0 {
		return name[i+1:]
	}
	return ""
}

func readCSV(content fs.FS, dir string) (*operatorsv1alpha1.ClusterServiceVersion, error) {
	var found *operatorsv1alpha1.ClusterServiceVersion
	err := fs.WalkDir(content, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml") || strings.HasSuffix(p, ".json")) {
			return nil
		}
		data, err := fs.ReadFile(content, p)
		if err != nil {
			return err
		}
		if err := yamlalias.CheckFile(data); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(data)), 4096)
		for {
			var u unstructured.Unstructured
			if err := dec.Decode(&u.Object); err != nil {
				break
			}
			if u.GetKind() != "ClusterServiceVersion" {
				continue
			}
			if found != nil {
				return fmt.Errorf("%s: a second ClusterServiceVersion %q; a bundle has exactly one", p, u.GetName())
			}
			raw, err := u.MarshalJSON()
			if err != nil {
				return err
			}
			csv := &operatorsv1alpha1.ClusterServiceVersion{}
			if err := yaml.Unmarshal(raw, csv); err != nil {
				return fmt.Errorf("%s: ClusterServiceVersion %q: %w", p, u.GetName(), err)
			}
			found = csv
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("bundle has no %s/ directory", dir)
		}
		return nil, err
	}
	if found == nil {
		return nil, fmt.Errorf("%s/ holds no ClusterServiceVersion", dir)
	}
	return found, nil
}

// readDependencies converts metadata/dependencies.yaml (olm.package, olm.gvk, olm.constraint) into
// properties, as catalogs carry them.
func readDependencies(content fs.FS) ([]property.Property, error) {
	data, err := fs.ReadFile(content, depsFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := yamlalias.CheckFile(data); err != nil {
		return nil, fmt.Errorf("%s: %w", depsFile, err)
	}
	var doc struct {
		Dependencies []struct {
			Type  string         `json:"type"`
			Value map[string]any `json:"value"`
		} `json:"dependencies"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", depsFile, err)
	}
	var out []property.Property
	for i, d := range doc.Dependencies {
		str := func(k string) string { s, _ := d.Value[k].(string); return s }
		switch d.Type {
		case "olm.package":
			out = append(out, property.MustBuildPackageRequired(str("packageName"), str("version")))
		case "olm.gvk":
			out = append(out, property.MustBuildGVKRequired(str("group"), str("version"), str("kind")))
		case "olm.constraint":
			raw, err := yaml.Marshal(d.Value)
			if err != nil {
				return nil, err
			}
			js, err := yaml.YAMLToJSON(raw)
			if err != nil {
				return nil, err
			}
			out = append(out, property.Property{Type: property.TypeConstraint, Value: js})
		default:
			return nil, fmt.Errorf("%s: dependencies[%d].type %q is not olm.package, olm.gvk or olm.constraint", depsFile, i, d.Type)
		}
	}
	return out, nil
}

// readProperties reads metadata/properties.yaml; its olm.package property must agree with the bundle.
func readProperties(content fs.FS, b *Bundle) ([]property.Property, error) {
	data, err := fs.ReadFile(content, propertiesFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := yamlalias.CheckFile(data); err != nil {
		return nil, fmt.Errorf("%s: %w", propertiesFile, err)
	}
	var doc struct {
		Properties []struct {
			Type  string `json:"type"`
			Value any    `json:"value"`
		} `json:"properties"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", propertiesFile, err)
	}
	var out []property.Property
	for _, p := range doc.Properties {
		raw, err := yaml.Marshal(p.Value)
		if err != nil {
			return nil, err
		}
		js, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return nil, err
		}
		if p.Type == property.TypePackage {
			var pkg property.Package
			if err := yaml.Unmarshal(js, &pkg); err == nil && (pkg.PackageName != b.Package || pkg.Version != b.Version.String()) {
				return nil, fmt.Errorf("%s: olm.package says %s %s but the bundle is %s %s", propertiesFile, pkg.PackageName, pkg.Version, b.Package, b.Version)
			}
			continue
		}
		out = append(out, property.Property{Type: p.Type, Value: js})
	}
	return out, nil
}
