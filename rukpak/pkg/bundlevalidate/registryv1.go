package bundlevalidate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/olmv1/olmv1/rukpak/internal/provisioner/manifest"
)

const (
	annotationsFile     = "metadata/annotations.yaml"
	mediaTypeKey        = "operators.operatorframework.io.bundle.mediatype.v1"
	manifestsKey        = "operators.operatorframework.io.bundle.manifests.v1"
	metadataKey         = "operators.operatorframework.io.bundle.metadata.v1"
	packageKey          = "operators.operatorframework.io.bundle.package.v1"
	channelsKey         = "operators.operatorframework.io.bundle.channels.v1"
	defaultChannelKey   = "operators.operatorframework.io.bundle.channel.default.v1"
	registryV1MediaType = "registry+v1"
)

// bundleFiles is what the checks read: annotations.yaml and every object of manifests/ with its file.
type bundleFiles struct {
	annotations  map[string]string
	manifestsDir string
	csv          *operatorsv1alpha1.ClusterServiceVersion
	csvFile      string
	crds         map[string]manifest.Object // by name
	objects      []manifest.Object
}

func validateRegistryV1(dir string, r *Report) {
	content := os.DirFS(dir)
	b := &bundleFiles{manifestsDir: "manifests", crds: map[string]manifest.Object{}}
	readAnnotations(content, b, r)

	objs, err := manifest.ReadDir(content, b.manifestsDir)
	if err != nil {
		p := Problem{File: b.manifestsDir + "/", Message: err.Error(), Fix: "keep only Kubernetes manifests (.yaml, .yml, .json) with apiVersion, kind and metadata.name under " + b.manifestsDir + "/"}
		if errors.Is(err, manifest.ErrAliasExpansion) {
			p.Fix = "" // the message names the file and says how to fix it
		}
		r.add(p)
		return
	}
	b.objects = objs
	for _, o := range objs {
		gvk := o.Obj.GroupVersionKind()
		switch {
		case gvk.Kind == "ClusterServiceVersion" && gvk.Group == "operators.coreos.com":
			if b.csv != nil {
				r.add(Problem{File: o.File, Field: "kind", Message: fmt.Sprintf("a second ClusterServiceVersion %q (the first is in %s)", o.Obj.GetName(), b.csvFile), Fix: "a bundle holds exactly one CSV; move the other to its own bundle"})
				continue
			}
			csv, err := toCSV(o.Obj)
			if err != nil {
				r.add(Problem{File: o.File, Message: fmt.Sprintf("ClusterServiceVersion %q does not match its schema: %v", o.Obj.GetName(), err), Fix: "give the field the type the ClusterServiceVersion schema expects (the message names it)"})
				continue
			}
			b.csv, b.csvFile = csv, o.File
		case gvk.Kind == "CustomResourceDefinition" && gvk.Group == "apiextensions.k8s.io":
			b.crds[o.Obj.GetName()] = o
		}
	}
	if b.csv == nil {
		r.add(Problem{File: b.manifestsDir + "/", Message: "no ClusterServiceVersion (apiVersion operators.coreos.com/v1alpha1, kind ClusterServiceVersion)", Fix: "add the operator's CSV to " + b.manifestsDir + "/, or build a plain bundle (manifests/ only, no metadata/annotations.yaml)"})
		return
	}
	r.Name = b.csv.Name
	r.Version = b.csv.Spec.Version.String()
	if r.Package == "" {
		r.Package = b.annotations[packageKey]
	}

	checkAnnotationsAgainstCSV(b, r)
	checkCSV(b, r)
	checkInstallModes(b, r)
	checkOwnedCRDs(b, r)
	checkRBAC(b, r)
	checkWebhooks(b, r)
	if checkAliasesOfEveryFile(dir, r) {
		runUpstreamValidators(dir, b, r)
	}
	runConversion(content, b, r)
}

func toCSV(u *unstructured.Unstructured) (*operatorsv1alpha1.ClusterServiceVersion, error) {
	data, err := u.MarshalJSON()
	if err != nil {
		return nil, err
	}
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	if err := yaml.Unmarshal(data, csv); err != nil {
		return nil, err
	}
	return csv, nil
}

// readAnnotations reads metadata/annotations.yaml and checks it on its own.
func readAnnotations(content fs.FS, b *bundleFiles, r *Report) {
	data, err := fs.ReadFile(content, annotationsFile)
	if errors.Is(err, fs.ErrNotExist) {
		r.add(Problem{File: annotationsFile, Message: "missing: a registry+v1 bundle names its package and channels there", Fix: fmt.Sprintf("create it with an `annotations:` map holding %s: registry+v1, %s: manifests/, %s: metadata/, %s: <package>, %s: <channels>", mediaTypeKey, manifestsKey, metadataKey, packageKey, channelsKey)})
		return
	}
	if err != nil {
		r.add(Problem{File: annotationsFile, Message: err.Error()})
		return
	}
	var doc struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := manifest.CheckAliases(data); err != nil {
		p := Problem{File: annotationsFile, Message: "invalid YAML: " + err.Error(), Fix: "it must be an `annotations:` map of string keys to string values"}
		if errors.Is(err, manifest.ErrAliasExpansion) {
			p = Problem{File: annotationsFile, Message: err.Error()}
		}
		r.add(p)
		return
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		r.add(Problem{File: annotationsFile, Message: "invalid YAML: " + err.Error(), Fix: "it must be an `annotations:` map of string keys to string values"})
		return
	}
	b.annotations = doc.Annotations
	a := doc.Annotations
	field := func(k string) string { return "annotations." + k }
	switch mt := a[mediaTypeKey]; mt {
	case registryV1MediaType:
	case "":
		r.add(Problem{File: annotationsFile, Field: field(mediaTypeKey), Message: "missing", Fix: "set it to registry+v1"})
	default:
		r.add(Problem{File: annotationsFile, Field: field(mediaTypeKey), Message: fmt.Sprintf("is %q but the bundle is registry+v1 (it has metadata/annotations.yaml and a ClusterServiceVersion)", mt), Fix: "set it to registry+v1, or remove metadata/ and the CSV to build a plain bundle"})
	}
	if m := a[manifestsKey]; m != "" {
		clean := strings.Trim(path.Clean(m), "/")
		if clean == "." || strings.HasPrefix(clean, "..") {
			r.add(Problem{File: annotationsFile, Field: field(manifestsKey), Message: fmt.Sprintf("%q is not a directory inside the bundle", m), Fix: "set it to manifests/"})
		} else if st, err := fs.Stat(content, clean); err != nil || !st.IsDir() {
			r.add(Problem{File: annotationsFile, Field: field(manifestsKey), Message: fmt.Sprintf("names %q, which is not a directory of the bundle", m), Fix: "set it to the directory that holds the CSV (usually manifests/)"})
		} else {
			b.manifestsDir = clean
		}
	} else {
		r.add(Problem{File: annotationsFile, Field: field(manifestsKey), Level: LevelWarning, Message: "missing; manifests/ is assumed", Fix: "set it to manifests/"})
	}
	pkg := a[packageKey]
	switch {
	case pkg == "":
		r.add(Problem{File: annotationsFile, Field: field(packageKey), Message: "missing: the bundle belongs to no package", Fix: "set it to the package name, e.g. my-operator"})
	case len(validation.IsDNS1123Label(pkg)) > 0:
		r.add(Problem{File: annotationsFile, Field: field(packageKey), Message: fmt.Sprintf("%q is not a valid package name (%s)", pkg, strings.Join(validation.IsDNS1123Label(pkg), "; ")), Fix: "use lower-case letters, digits and '-'"})
	default:
		r.Package = pkg
	}
	var channels []string
	for _, c := range strings.Split(a[channelsKey], ",") {
		if c = strings.TrimSpace(c); c != "" {
			channels = append(channels, c)
		}
	}
	if len(channels) == 0 {
		r.add(Problem{File: annotationsFile, Field: field(channelsKey), Message: "missing: the bundle is in no channel", Fix: "set it to a comma-separated list of channels, e.g. stable"})
	}
	if d := a[defaultChannelKey]; d != "" && len(channels) > 0 && !contains(channels, d) {
		r.add(Problem{File: annotationsFile, Field: field(defaultChannelKey), Message: fmt.Sprintf("default channel %q is not one of the bundle's channels %q", d, a[channelsKey]), Fix: fmt.Sprintf("add %q to %s or set the default to one of them", d, channelsKey)})
	}
}

// checkAnnotationsAgainstCSV compares annotations.yaml (and metadata/properties.yaml, if any) with
// the CSV.
func checkAnnotationsAgainstCSV(b *bundleFiles, r *Report) {
	pkg := b.annotations[packageKey]
	csv := b.csv
	if v, ok := csvNameVersion(csv.Name); ok && v != csv.Spec.Version.String() {
		r.add(Problem{File: b.csvFile, Field: "metadata.name", Message: fmt.Sprintf("CSV name %q says version %s but spec.version is %s", csv.Name, v, csv.Spec.Version.String()),
			Fix: "make the name <package>.v<spec.version>"})
	}
	for k, v := range csv.Annotations {
		// operator-sdk copies some bundle annotations into the CSV; they must agree.
		if k == "operators.operatorframework.io/bundle-package" || k == packageKey {
			if pkg != "" && v != pkg {
				r.add(Problem{File: b.csvFile, Field: "metadata.annotations." + k, Message: fmt.Sprintf("says package %q but %s says %q", v, annotationsFile, pkg), Fix: "use one package name in both"})
			}
		}
	}
}

// csvNameVersion returns the version part of a CSV name of the form <name>.v<version>.
func csvNameVersion(name string) (string, bool) {
	i := strings.Index(name, ".v")
	for i >= 0 {
		rest := name[i+2:]
		if rest != "" && rest[0] >= '0' && rest[0] <= '9' {
			return rest, true
		}
		j := strings.Index(rest, ".v")
		if j < 0 {
			break
		}
		i += 2 + j
	}
	return "", false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
