package registryv1

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/olmv1/olmv1/rukpak/pkg/registryv1kinds"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/olmv1/olmv1/rukpak/internal/provisioner/manifest"
)

// Annotation keys of metadata/annotations.yaml.
const (
	annotationsFile     = "metadata/annotations.yaml"
	mediaTypeAnnotation = "operators.operatorframework.io.bundle.mediatype.v1"
	manifestsAnnotation = "operators.operatorframework.io.bundle.manifests.v1"
	packageAnnotation   = "operators.operatorframework.io.bundle.package.v1"
	registryV1MediaType = "registry+v1"
	defaultManifestsDir = "manifests"
	csvKind             = "ClusterServiceVersion"
	crdKind             = "CustomResourceDefinition"
	apiextensionsGroup  = "apiextensions.k8s.io"
	operatorsGroup      = "operators.coreos.com"
)

// supportedKinds are the kinds, besides the CSV and CRDs, that a registry+v1 bundle may carry in
// manifests/ (one list for the renderer and bundle generate).
var supportedKinds = registryv1kinds.Supported

// bundle is a parsed registry+v1 bundle.
type bundle struct {
	pkg string
	csv *operatorsv1alpha1.ClusterServiceVersion
	// crds stay unstructured: they are the bulk of most bundles and are applied as they are.
	crds  []manifest.Object
	other []manifest.Object
}

// loadBundle reads metadata/annotations.yaml and every manifest of a registry+v1 bundle.
func loadBundle(content fs.FS) (*bundle, error) {
	dir, pkg, err := readAnnotations(content)
	if err != nil {
		return nil, err
	}
	objs, err := manifest.ReadDir(content, dir)
	if err != nil {
		return nil, err
	}
	b := &bundle{pkg: pkg}
	if err := b.sortObjects(objs); err != nil {
		return nil, err
	}
	if err := b.checkComplete(dir); err != nil {
		return nil, err
	}
	if b.pkg == "" {
		b.pkg = b.csv.Name
	}
	return b, nil
}

// readAnnotations reads metadata/annotations.yaml: the manifests directory (default manifests/) and
// the package name (empty when not annotated). Bundles unpacked from some sources lack metadata/.
func readAnnotations(content fs.FS) (dir, pkg string, err error) {
	data, err := fs.ReadFile(content, annotationsFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return defaultManifestsDir, "", nil
	case err != nil:
		return "", "", fmt.Errorf("reading %s: %w", annotationsFile, err)
	}
	var a struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := manifest.CheckAliases(data); errors.Is(err, manifest.ErrAliasExpansion) {
		return "", "", fmt.Errorf("%s: %w", annotationsFile, err)
	} else if err != nil {
		return "", "", fmt.Errorf("%s: invalid YAML: %w", annotationsFile, err)
	}
	if err := yaml.Unmarshal(data, &a); err != nil {
		return "", "", fmt.Errorf("%s: invalid YAML: %w", annotationsFile, err)
	}
	if mt := a.Annotations[mediaTypeAnnotation]; mt != "" && mt != registryV1MediaType {
		return "", "", fmt.Errorf("%s: %s is %q, not %q; use the provisioner for that bundle format",
			annotationsFile, mediaTypeAnnotation, mt, registryV1MediaType)
	}
	dir = defaultManifestsDir
	if m := strings.Trim(path.Clean(a.Annotations[manifestsAnnotation]), "/"); a.Annotations[manifestsAnnotation] != "" {
		if m == "." || strings.HasPrefix(m, "..") {
			return "", "", fmt.Errorf("%s: %s %q must name a directory inside the bundle", annotationsFile, manifestsAnnotation, a.Annotations[manifestsAnnotation])
		}
		dir = m
	}
	return dir, a.Annotations[packageAnnotation], nil
}

// sortObjects sorts the manifests into the one CSV, the CRDs and the other supported kinds.
func (b *bundle) sortObjects(objs []manifest.Object) error {
	var csvSource string
	for _, o := range objs {
		gk := o.Obj.GroupVersionKind().GroupKind()
		switch {
		case gk == schema.GroupKind{Group: operatorsGroup, Kind: csvKind}:
			if b.csv != nil {
				return fmt.Errorf("%s: a second ClusterServiceVersion %q (the first is %q in %s); a bundle has exactly one",
					o.Source(), o.Obj.GetName(), b.csv.Name, csvSource)
			}
			csv := &operatorsv1alpha1.ClusterServiceVersion{}
			if err := fromUnstructured(o.Obj, csv); err != nil {
				return fmt.Errorf("%s: ClusterServiceVersion %q: %w", o.Source(), o.Obj.GetName(), err)
			}
			b.csv, csvSource = csv, o.Source()
		case gk == schema.GroupKind{Group: apiextensionsGroup, Kind: crdKind}:
			if v := o.Obj.GroupVersionKind().Version; v != "v1" {
				return fmt.Errorf("%s: CustomResourceDefinition %q is apiextensions.k8s.io/%s, which Kubernetes no longer serves; the bundle must use apiextensions.k8s.io/v1",
					o.Source(), o.Obj.GetName(), v)
			}
			b.crds = append(b.crds, o)
		case supportedKinds[gk]:
			b.other = append(b.other, o)
		default:
			return fmt.Errorf("%s: %s %q (%s) is not a kind a registry+v1 bundle may contain; supported kinds are ClusterServiceVersion, CustomResourceDefinition, %s",
				o.Source(), gk.Kind, o.Obj.GetName(), o.Obj.GetAPIVersion(), strings.Join(supportedKindNames(), ", "))
		}
	}
	return nil
}

// checkComplete requires the CSV, and in dir every CRD it owns.
func (b *bundle) checkComplete(dir string) error {
	if b.csv == nil {
		return fmt.Errorf("%s/ holds no ClusterServiceVersion (kind ClusterServiceVersion, apiVersion operators.coreos.com/v1alpha1); a registry+v1 bundle needs exactly one", dir)
	}
	have := map[string]bool{}
	for _, c := range b.crds {
		have[c.Obj.GetName()] = true
	}
	for _, owned := range b.csv.Spec.CustomResourceDefinitions.Owned {
		if !have[owned.Name] {
			return fmt.Errorf("ClusterServiceVersion %q owns CustomResourceDefinition %q (spec.customresourcedefinitions.owned) but %s/ does not contain it; add the CRD to the bundle",
				b.csv.Name, owned.Name, dir)
		}
	}
	return nil
}

func supportedKindNames() []string {
	var out []string
	for gk := range supportedKinds {
		out = append(out, gk.Kind)
	}
	sort.Strings(out)
	return out
}

// fromUnstructured converts through JSON so that unknown fields are ignored and type errors name the
// field, as the API server would.
func fromUnstructured(u *unstructured.Unstructured, into any) error {
	data, err := json.Marshal(u.Object)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, into); err != nil {
		return fmt.Errorf("does not match its schema: %w", err)
	}
	return nil
}

// toUnstructured converts a typed object to the unstructured form every rendered object has.
func toUnstructured(obj runtime.Object, gvk schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	return u, nil
}
