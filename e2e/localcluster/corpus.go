package localcluster

// Real registry+v1 bundles of the shared third-party test data (OLMV1_TESTDATA, see
// ../shared/testdata/README.md), read so that a spec can choose bundles by what their CSVs declare.
// Nothing here talks to a cluster or a registry; the spec publishes and installs what it chose with
// the kubectl plugin, as a user would.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// CorpusBundle is what a spec needs to know about one real registry+v1 bundle directory to choose it.
type CorpusBundle struct {
	// Dir is the bundle directory (manifests/ and metadata/).
	Dir string
	// Source says where it came from, e.g. "corpus/kaoto-operator/2.11.0" or
	// "catalogs/community-v4.16/koku-metrics-operator (olm.bundle.object)".
	Source string
	// Package, CSVName and Version are the package name (annotations.yaml), the CSV's name and version.
	Package, CSVName, Version string
	// Channels and DefaultChannel are those of annotations.yaml (DefaultChannel: the first channel
	// when the annotation is absent).
	Channels       []string
	DefaultChannel string
	// InstallModes are the install modes the CSV supports, in the order it lists them.
	InstallModes []string
	// ALMExamples is the CSV's alm-examples annotation as written (a JSON array of custom
	// resources; "" when absent). It is not parsed here: a corpus bundle with a broken one is still
	// read.
	ALMExamples string
	// CRDs are the names of the CustomResourceDefinitions in manifests/, in file order.
	CRDs []string
	// Webhooks counts spec.webhookdefinitions; Deployments are the names of spec.install's deployments.
	Webhooks    int
	Deployments []string
	// Dependencies lists what the bundle needs from elsewhere: olm.package.required, olm.gvk.required
	// and olm.constraint properties, metadata/dependencies.yaml entries, and required CRDs/API services.
	Dependencies []string
	// Kinds are the kinds of the files in manifests/ (with repeats).
	Kinds []string
	// SuggestedNamespace is the CSV's operatorframework.io/suggested-namespace annotation.
	SuggestedNamespace string
	// Bytes is the size of manifests/.
	Bytes int64
}

// BareClusterKinds are the kinds a registry+v1 bundle may carry that a cluster with only Kubernetes'
// own APIs serves. A bundle with another kind (the corpus has ServiceMonitors and PrometheusRules)
// cannot be Installed until another operator provides that CRD: a reason outside OLM.
var BareClusterKinds = map[string]bool{
	"ClusterServiceVersion": true, "CustomResourceDefinition": true, "Service": true, "ServiceAccount": true,
	"ConfigMap": true, "Secret": true, "Role": true, "RoleBinding": true, "ClusterRole": true,
	"ClusterRoleBinding": true, "PodDisruptionBudget": true, "PriorityClass": true,
}

// OnlyBareClusterKinds reports whether every file of manifests/ is of a kind in BareClusterKinds.
func (b CorpusBundle) OnlyBareClusterKinds() bool {
	for _, k := range b.Kinds {
		if !BareClusterKinds[k] {
			return false
		}
	}
	return true
}

// Supports reports whether the CSV supports install mode t (e.g. "OwnNamespace").
func (b CorpusBundle) Supports(t string) bool {
	for _, m := range b.InstallModes {
		if m == t {
			return true
		}
	}
	return false
}

// csvDoc is the part of a ClusterServiceVersion that choosing a bundle reads.
type csvDoc struct {
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
		WebhookDefinitions []json.RawMessage `json:"webhookdefinitions"`
		Install            struct {
			Spec struct {
				Deployments []struct {
					Name string `json:"name"`
				} `json:"deployments"`
			} `json:"spec"`
		} `json:"install"`
		CRDs struct {
			Required []struct {
				Name string `json:"name"`
			} `json:"required"`
		} `json:"customresourcedefinitions"`
		APIServices struct {
			Required []struct {
				Group   string `json:"group"`
				Version string `json:"version"`
				Kind    string `json:"kind"`
			} `json:"required"`
		} `json:"apiservicedefinitions"`
	} `json:"spec"`
}

// typedEntry is a property or a dependencies.yaml entry.
type typedEntry struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// ReadCorpusBundles reads every registry+v1 bundle directory <testdata>/<sub>/<package>/<version> for
// each sub (e.g. "corpus", "bundles"), sorted by source.
func ReadCorpusBundles(testdata string, subs ...string) ([]CorpusBundle, error) {
	var out []CorpusBundle
	for _, sub := range subs {
		dirs, err := filepath.Glob(filepath.Join(testdata, sub, "*", "*", "manifests"))
		if err != nil {
			return nil, err
		}
		for _, m := range dirs {
			dir := filepath.Dir(m)
			rel, _ := filepath.Rel(testdata, dir)
			b, err := ReadBundleDir(dir, filepath.ToSlash(rel))
			if err != nil {
				return nil, err
			}
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Source < out[j].Source })
	return out, nil
}

// ReadBundleDir reads the registry+v1 bundle in dir: metadata/annotations.yaml, every .yaml, .yml
// and .json file of manifests/ (other files are counted in Bytes only) and, when present,
// metadata/dependencies.yaml and metadata/properties.yaml. It is the one reader of bundle
// directories for the corpus specs and the bundle test (e2e/bundletest).
func ReadBundleDir(dir, source string) (CorpusBundle, error) {
	b := CorpusBundle{Dir: dir, Source: source}
	var ann struct{ Annotations map[string]string }
	if err := readYAML(filepath.Join(dir, "metadata", "annotations.yaml"), &ann); err != nil {
		return b, fmt.Errorf("%s is not a registry+v1 bundle (metadata/annotations.yaml): %w", dir, err)
	}
	b.Package = ann.Annotations["operators.operatorframework.io.bundle.package.v1"]
	for _, c := range strings.Split(ann.Annotations["operators.operatorframework.io.bundle.channels.v1"], ",") {
		if c = strings.TrimSpace(c); c != "" {
			b.Channels = append(b.Channels, c)
		}
	}
	b.DefaultChannel = ann.Annotations["operators.operatorframework.io.bundle.channel.default.v1"]
	if b.DefaultChannel == "" && len(b.Channels) > 0 {
		b.DefaultChannel = b.Channels[0]
	}
	files, err := os.ReadDir(filepath.Join(dir, "manifests"))
	if err != nil {
		return b, err
	}
	var csv *csvDoc
	for _, f := range files {
		if f.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, "manifests", f.Name()))
		if err != nil {
			return b, err
		}
		b.Bytes += int64(len(data))
		if !isManifestFile(f.Name()) {
			continue
		}
		kind := topLevelKind(data)
		if kind != "" && kind != "ClusterServiceVersion" {
			// Converting a large CRD from YAML only to learn its kind (or name) costs seconds over a
			// corpus.
			if kind == "CustomResourceDefinition" {
				name, ok := topLevelName(data)
				if !ok {
					if name, err = crdName(data); err != nil {
						return b, fmt.Errorf("%s: %w", filepath.Join(dir, "manifests", f.Name()), err)
					}
				}
				b.CRDs = append(b.CRDs, name)
			}
			b.Kinds = append(b.Kinds, kind)
			continue
		}
		var doc csvDoc
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return b, fmt.Errorf("%s: %w", filepath.Join(dir, "manifests", f.Name()), err)
		}
		b.Kinds = append(b.Kinds, doc.Kind)
		switch doc.Kind {
		case "ClusterServiceVersion":
			csv = &doc
		case "CustomResourceDefinition": // JSON, or YAML without a top-level kind: line
			b.CRDs = append(b.CRDs, doc.Metadata.Name)
		}
	}
	if csv == nil {
		return b, fmt.Errorf("%s: no ClusterServiceVersion in manifests/", dir)
	}
	b.describeCSV(csv)
	var deps struct{ Dependencies []typedEntry }
	if err := readYAML(filepath.Join(dir, "metadata", "dependencies.yaml"), &deps); err != nil && !errors.Is(err, os.ErrNotExist) {
		return b, err
	}
	for _, d := range deps.Dependencies {
		b.Dependencies = append(b.Dependencies, "dependencies.yaml "+d.Type+" "+string(d.Value))
	}
	var props struct{ Properties []typedEntry }
	if err := readYAML(filepath.Join(dir, "metadata", "properties.yaml"), &props); err != nil && !errors.Is(err, os.ErrNotExist) {
		return b, err
	}
	b.addRequiredProperties(props.Properties)
	return b, nil
}

func (b *CorpusBundle) describeCSV(csv *csvDoc) {
	b.CSVName, b.Version = csv.Metadata.Name, csv.Spec.Version
	b.SuggestedNamespace = csv.Metadata.Annotations["operatorframework.io/suggested-namespace"]
	b.ALMExamples = csv.Metadata.Annotations["alm-examples"]
	for _, m := range csv.Spec.InstallModes {
		if m.Supported {
			b.InstallModes = append(b.InstallModes, m.Type)
		}
	}
	b.Webhooks = len(csv.Spec.WebhookDefinitions)
	for _, d := range csv.Spec.Install.Spec.Deployments {
		b.Deployments = append(b.Deployments, d.Name)
	}
	for _, r := range csv.Spec.CRDs.Required {
		b.Dependencies = append(b.Dependencies, "required CRD "+r.Name)
	}
	for _, r := range csv.Spec.APIServices.Required {
		b.Dependencies = append(b.Dependencies, fmt.Sprintf("required API service %s/%s %s", r.Group, r.Version, r.Kind))
	}
}

func (b *CorpusBundle) addRequiredProperties(props []typedEntry) {
	for _, p := range props {
		switch p.Type {
		case "olm.package.required", "olm.gvk.required", "olm.constraint":
			b.Dependencies = append(b.Dependencies, p.Type+" "+string(p.Value))
		}
	}
}

// ExtractCatalogBundles writes, for each package of the file-based catalog in catalogDir whose bundles
// embed their manifests (olm.bundle.object properties, as `opm render` writes them), the head of the
// package's default channel as a registry+v1 bundle directory under outDir/<package>: its manifests
// exactly as embedded, and a metadata/annotations.yaml naming the package, the channels holding the
// bundle and the default channel. It returns them sorted by package. Packages without embedded
// manifests are left out.
func ExtractCatalogBundles(catalogDir, outDir string) ([]CorpusBundle, error) {
	files, err := filepath.Glob(filepath.Join(catalogDir, "*", "catalog.yaml"))
	if err != nil {
		return nil, err
	}
	var out []CorpusBundle
	for _, f := range files {
		b, ok, err := extractPackageHead(f, outDir)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if ok {
			rel, _ := filepath.Rel(filepath.Dir(catalogDir), filepath.Dir(f))
			b.Source = fmt.Sprintf("catalogs/%s (%s, olm.bundle.object)", filepath.ToSlash(rel), b.CSVName)
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Package < out[j].Package })
	return out, nil
}

// fbcBlob is the part of an FBC blob that extracting a bundle reads.
type fbcBlob struct {
	Schema         string `json:"schema"`
	Name           string `json:"name"`
	DefaultChannel string `json:"defaultChannel"`
	Entries        []struct {
		Name     string   `json:"name"`
		Replaces string   `json:"replaces"`
		Skips    []string `json:"skips"`
	} `json:"entries"`
	Properties []typedEntry `json:"properties"`
}

// fbcPackage is what one package's catalog.yaml holds: its olm.package, olm.channel and olm.bundle
// blobs (bundles by name).
type fbcPackage struct {
	pkg      fbcBlob
	channels []fbcBlob
	bundles  map[string]fbcBlob
}

// extractPackageHead writes the head of the default channel of the package in catalog file file as
// a registry+v1 bundle directory under outDir/<package> (see ExtractCatalogBundles); it reports
// false when that bundle does not embed its manifests.
func extractPackageHead(file, outDir string) (CorpusBundle, bool, error) {
	fp, err := readFBCPackage(file)
	if err != nil {
		return CorpusBundle{}, false, err
	}
	head := fp.defaultChannelHead()
	bundle, ok := fp.bundles[head]
	if !ok {
		return CorpusBundle{}, false, nil
	}
	dir := filepath.Join(outDir, fp.pkg.Name)
	if err := os.MkdirAll(filepath.Join(dir, "manifests"), 0o755); err != nil {
		return CorpusBundle{}, false, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "metadata"), 0o755); err != nil {
		return CorpusBundle{}, false, err
	}
	objects, err := writeEmbeddedManifests(filepath.Join(dir, "manifests"), bundle.Properties)
	if err != nil {
		return CorpusBundle{}, false, err
	}
	if objects == 0 {
		return CorpusBundle{}, false, os.RemoveAll(dir)
	}
	if err := writeAnnotations(filepath.Join(dir, "metadata", "annotations.yaml"), fp.pkg, fp.channelsWith(head)); err != nil {
		return CorpusBundle{}, false, err
	}
	b, err := ReadBundleDir(dir, "")
	if err != nil {
		return CorpusBundle{}, false, err
	}
	b.addRequiredProperties(bundle.Properties)
	return b, true, nil
}

// readFBCPackage reads the blobs of a package's catalog file.
func readFBCPackage(file string) (fbcPackage, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return fbcPackage{}, err
	}
	fp := fbcPackage{bundles: map[string]fbcBlob{}}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 1<<20)
	for {
		var blob fbcBlob
		if err := dec.Decode(&blob); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fbcPackage{}, err
		}
		switch blob.Schema {
		case "olm.package":
			fp.pkg = blob
		case "olm.channel":
			fp.channels = append(fp.channels, blob)
		case "olm.bundle":
			fp.bundles[blob.Name] = blob
		}
	}
	return fp, nil
}

// defaultChannelHead is the head of the package's default channel ("" when there is none).
func (fp fbcPackage) defaultChannelHead() string {
	head := ""
	for _, ch := range fp.channels {
		if ch.Name == fp.pkg.DefaultChannel {
			head = channelHead(ch)
		}
	}
	return head
}

// channelsWith names the channels that have an entry for bundle.
func (fp fbcPackage) channelsWith(bundle string) []string {
	var in []string
	for _, ch := range fp.channels {
		for _, e := range ch.Entries {
			if e.Name == bundle {
				in = append(in, ch.Name)
			}
		}
	}
	return in
}

// writeEmbeddedManifests writes the objects embedded in a bundle's olm.bundle.object properties to
// dir as YAML files named <name>.<kind>.yaml; it returns how many it wrote.
func writeEmbeddedManifests(dir string, props []typedEntry) (int, error) {
	objects := 0
	for _, p := range props {
		if p.Type != "olm.bundle.object" {
			continue
		}
		if err := writeEmbeddedObject(dir, p.Value); err != nil {
			return 0, err
		}
		objects++
	}
	return objects, nil
}

// writeEmbeddedObject writes the object in the value of one olm.bundle.object property (base64 JSON
// in its data field) to dir as YAML.
func writeEmbeddedObject(dir string, value json.RawMessage) error {
	var v struct{ Data string }
	if err := json.Unmarshal(value, &v); err != nil {
		return err
	}
	raw, err := base64.StdEncoding.DecodeString(v.Data)
	if err != nil {
		return err
	}
	var meta struct {
		Kind     string
		Metadata struct{ Name string }
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		return err
	}
	y, err := yaml.JSONToYAML(raw)
	if err != nil {
		return err
	}
	name := fmt.Sprintf("%s.%s.yaml", meta.Metadata.Name, strings.ToLower(meta.Kind))
	return os.WriteFile(filepath.Join(dir, name), y, 0o644)
}

// writeAnnotations writes a registry+v1 bundle's metadata/annotations.yaml (path) for a bundle of
// package pkg in channels.
func writeAnnotations(path string, pkg fbcBlob, channels []string) error {
	ann, err := yaml.Marshal(map[string]map[string]string{"annotations": {
		"operators.operatorframework.io.bundle.mediatype.v1":       "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1":       "manifests/",
		"operators.operatorframework.io.bundle.metadata.v1":        "metadata/",
		"operators.operatorframework.io.bundle.package.v1":         pkg.Name,
		"operators.operatorframework.io.bundle.channels.v1":        strings.Join(channels, ","),
		"operators.operatorframework.io.bundle.channel.default.v1": pkg.DefaultChannel,
	}})
	if err != nil {
		return err
	}
	return os.WriteFile(path, ann, 0o644)
}

// channelHead is the entry of ch that no other entry replaces or skips ("" when there is not exactly one).
func channelHead(ch fbcBlob) string {
	covered := map[string]bool{}
	for _, e := range ch.Entries {
		covered[e.Replaces] = true
		for _, s := range e.Skips {
			covered[s] = true
		}
	}
	head := ""
	for _, e := range ch.Entries {
		if !covered[e.Name] {
			if head != "" {
				return ""
			}
			head = e.Name
		}
	}
	return head
}

// isManifestFile reports whether a file of manifests/ is read as a manifest (by its extension).
func isManifestFile(name string) bool {
	return strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") || strings.HasSuffix(name, ".json")
}

// topLevelName is the metadata.name of a block-style YAML document found by its lines: the
// "name:" line directly under the top-level "metadata:" line, at the indentation of the first
// field there. ok is false when that shape is not found (flow style, JSON, no name); the caller
// then parses the document.
func topLevelName(data []byte) (name string, ok bool) {
	lines := strings.Split(string(data), "\n")
	for i, line := range lines {
		if strings.TrimRight(line, " \r") != "metadata:" {
			continue
		}
		indent := ""
		for _, l := range lines[i+1:] {
			l = strings.TrimRight(l, " \r")
			trimmed := strings.TrimLeft(l, " ")
			if trimmed == "" || strings.HasPrefix(trimmed, "#") {
				continue
			}
			if len(trimmed) == len(l) {
				return "", false // metadata ended without a name
			}
			if indent == "" {
				indent = l[:len(l)-len(trimmed)]
			}
			if l[:len(l)-len(trimmed)] != indent {
				continue // deeper (labels, annotations ...) or malformed
			}
			if v, found := strings.CutPrefix(trimmed, "name:"); found {
				if c := strings.Index(v, " #"); c >= 0 {
					v = v[:c]
				}
				v = strings.Trim(strings.TrimSpace(v), `"'`)
				return v, v != ""
			}
		}
		return "", false
	}
	return "", false
}

// crdName parses a manifest for its metadata.name.
func crdName(data []byte) (string, error) {
	var doc struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return "", err
	}
	return doc.Metadata.Name, nil
}

// topLevelKind is the value of a YAML document's top-level "kind:" line ("" when there is none, e.g.
// for JSON).
func topLevelKind(data []byte) string {
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "kind:"); ok {
			return strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
	return ""
}

func readYAML(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
