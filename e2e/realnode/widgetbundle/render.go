package widgetbundle

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"text/template"
)

// bundleFiles holds the bundle's sources: the CRD and annotations.yaml verbatim, the CSV as a
// template of the version, the replaced CSV and the operator image.
//
//go:embed bundle/widgets.widgets.olmv1.io.crd.yaml bundle/annotations.yaml bundle/clusterserviceversion.yaml.tmpl
var bundleFiles embed.FS

var csvTemplate = template.Must(template.New("clusterserviceversion.yaml.tmpl").
	Funcs(template.FuncMap{"quote": func(s string) (string, error) {
		b, err := json.Marshal(s) // a JSON string is a YAML double-quoted scalar
		return string(b), err
	}}).
	ParseFS(bundleFiles, "bundle/clusterserviceversion.yaml.tmpl"))

// VersionEnv is the environment variable of the operator's container that holds its version.
const VersionEnv = "WIDGET_OPERATOR_VERSION"

type envVar struct{ Name, Value string }

// versionPattern is what RenderBundle accepts as a version: major.minor.patch.
var versionPattern = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)

// The files RenderBundle writes, relative to the bundle directory.
const (
	CSVFile         = "manifests/widget-operator.clusterserviceversion.yaml"
	CRDFile         = "manifests/widgets.widgets.olmv1.io.crd.yaml"
	AnnotationsFile = "metadata/annotations.yaml"
)

// CSVName is the name of the ClusterServiceVersion of version, e.g. widget-operator.v1.0.0.
func CSVName(version string) string { return Package + ".v" + version }

// Replaces is the version that version upgrades from (the previous entry of Versions), or "" for
// the first.
func Replaces(version string) string {
	for i, v := range Versions {
		if v == version && i > 0 {
			return Versions[i-1]
		}
	}
	return ""
}

// RenderBundle writes the registry+v1 bundle of widget-operator version into dir (created if need
// be): manifests/ with the Widget CRD (both versions, conversion by webhook) and the CSV
// widget-operator.v<version>, whose Deployment runs operatorImage with WIDGET_OPERATOR_VERSION set
// to version, and metadata/annotations.yaml (package widget-operator, channel stable). A version of
// Versions other than the first replaces the one before it. It does no network access.
func RenderBundle(dir, version, operatorImage string) error {
	return RenderBundleSpec(dir, BundleSpec{Version: version, OperatorImage: operatorImage, Replaces: Replaces(version)})
}

// BundleSpec describes a bundle for RenderBundleSpec, which tests use for bundles beyond Versions,
// e.g. a 1.2.0 whose operator crashes.
type BundleSpec struct {
	// Version is the bundle's version, major.minor.patch.
	Version string
	// OperatorImage is the image the CSV's Deployment runs.
	OperatorImage string
	// Replaces is the version this bundle replaces ("" for none).
	Replaces string
	// Env is added to the environment of the operator's container, e.g. {"WIDGET_CRASH": "true"}.
	Env map[string]string
}

// RenderBundleSpec writes the bundle b into dir, as RenderBundle does.
func RenderBundleSpec(dir string, b BundleSpec) error {
	version, operatorImage := b.Version, b.OperatorImage
	if !versionPattern.MatchString(version) {
		return fmt.Errorf("widget-operator bundle version %q is not a version such as 1.0.0 (major.minor.patch)", version)
	}
	if b.Replaces != "" && !versionPattern.MatchString(b.Replaces) {
		return fmt.Errorf("widget-operator bundle %s: replaces %q is not a version such as 1.0.0", version, b.Replaces)
	}
	if operatorImage == "" {
		return fmt.Errorf("widget-operator bundle %s: the operator image is empty (pass the pushed image reference, e.g. 10.201.0.1:5000/widget-operator@sha256:...)", version)
	}
	data := struct {
		Name, Version, Replaces, Image string
		Env                            []envVar
	}{Name: CSVName(version), Version: version, Image: operatorImage}
	if b.Replaces != "" {
		data.Replaces = CSVName(b.Replaces)
	}
	for _, k := range slices.Sorted(maps.Keys(b.Env)) {
		if k == VersionEnv {
			return fmt.Errorf("widget-operator bundle %s: Env sets %s, which the bundle sets to its version; leave it out", version, k)
		}
		data.Env = append(data.Env, envVar{Name: k, Value: b.Env[k]})
	}
	var csv bytes.Buffer
	if err := csvTemplate.Execute(&csv, data); err != nil {
		return fmt.Errorf("rendering the widget-operator %s CSV: %w", version, err)
	}
	crd, err := bundleFiles.ReadFile("bundle/widgets.widgets.olmv1.io.crd.yaml")
	if err != nil {
		return err
	}
	annotations, err := bundleFiles.ReadFile("bundle/annotations.yaml")
	if err != nil {
		return err
	}
	for file, content := range map[string][]byte{CSVFile: csv.Bytes(), CRDFile: crd, AnnotationsFile: annotations} {
		path := filepath.Join(dir, filepath.FromSlash(file))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("widget-operator bundle %s: %w", version, err)
		}
		if err := os.WriteFile(path, content, 0o644); err != nil {
			return fmt.Errorf("widget-operator bundle %s: %w", version, err)
		}
	}
	return nil
}
