package imagebuild

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"sigs.k8s.io/yaml"
)

const (
	// BundleMediaTypeAnnotation names the bundle format in a registry+v1 bundle's annotations.
	BundleMediaTypeAnnotation = "operators.operatorframework.io.bundle.mediatype.v1"
	// RegistryV1MediaType is the value of BundleMediaTypeAnnotation for registry+v1 bundles.
	RegistryV1MediaType = "registry+v1"

	manifestsDir    = "manifests"
	annotationsFile = "metadata/annotations.yaml"
)

// RegistryV1BundleImage builds an OLM registry+v1 bundle image. dir must contain manifests/ (with
// at least one file) and metadata/annotations.yaml; the whole directory is copied to the image
// root, so the image holds /manifests/... and /metadata/..., and the entries of the `annotations:`
// map of metadata/annotations.yaml become the image's labels, as on bundle images built by
// operator-sdk and opm.
func RegistryV1BundleImage(dir string) (v1.Image, error) {
	const need = "a registry+v1 bundle needs manifests/ and metadata/annotations.yaml"
	if err := requireDir("bundle directory", dir); err != nil {
		return nil, fmt.Errorf("%w (%s)", err, need)
	}
	var missing []string
	if !isDir(filepath.Join(dir, manifestsDir)) {
		missing = append(missing, manifestsDir+"/")
	}
	if !isRegularFile(filepath.Join(dir, filepath.FromSlash(annotationsFile))) {
		missing = append(missing, annotationsFile)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("bundle directory %q: %s not found (%s)", dir, strings.Join(missing, " and "), need)
	}

	labels, err := readBundleAnnotations(filepath.Join(dir, filepath.FromSlash(annotationsFile)))
	if err != nil {
		return nil, fmt.Errorf("bundle directory %q: %w", dir, err)
	}
	entries, err := bundleEntries(dir)
	if err != nil {
		return nil, err
	}
	img, err := entriesImage(entries, "", labels, "imagebuild: COPY registry+v1 bundle /")
	if err != nil {
		return nil, fmt.Errorf("bundle directory %q: %w", dir, err)
	}
	return img, nil
}

// PlainBundleImage builds a plain bundle image: dir must contain manifests/ with at least one
// file, and the whole directory is copied to the image root (/manifests/...). No labels are set.
func PlainBundleImage(dir string) (v1.Image, error) {
	const need = "a plain bundle needs a manifests/ directory with the objects to apply"
	if err := requireDir("bundle directory", dir); err != nil {
		return nil, fmt.Errorf("%w (%s)", err, need)
	}
	if !isDir(filepath.Join(dir, manifestsDir)) {
		return nil, fmt.Errorf("bundle directory %q: manifests/ not found (%s)", dir, need)
	}
	entries, err := bundleEntries(dir)
	if err != nil {
		return nil, err
	}
	img, err := entriesImage(entries, "", nil, "imagebuild: COPY plain bundle /")
	if err != nil {
		return nil, fmt.Errorf("bundle directory %q: %w", dir, err)
	}
	return img, nil
}

// bundleEntries walks a bundle directory and checks that manifests/ holds at least one file.
func bundleEntries(dir string) ([]entry, error) {
	entries, err := walkTree(dir, walkOptions{})
	if err != nil {
		return nil, fmt.Errorf("bundle directory %q: %w", dir, err)
	}
	for _, e := range entries {
		if e.kind != kindDir && strings.HasPrefix(e.rel, manifestsDir+"/") {
			return entries, nil
		}
	}
	return nil, fmt.Errorf("bundle directory %q: manifests/ is empty (put the bundle's Kubernetes manifests in it)", dir)
}

// readBundleAnnotations reads the `annotations:` map of a registry+v1 bundle's annotations.yaml.
func readBundleAnnotations(p string) (map[string]string, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w (it must hold an `annotations:` map of string keys to string values)", annotationsFile, err)
	}
	if len(doc.Annotations) == 0 {
		return nil, fmt.Errorf("%s has no `annotations:` map (it should name at least %s: %s and the package and channels)", annotationsFile, BundleMediaTypeAnnotation, RegistryV1MediaType)
	}
	if mt, ok := doc.Annotations[BundleMediaTypeAnnotation]; ok && mt != RegistryV1MediaType {
		return nil, fmt.Errorf("%s says %s: %q, not %q (build a plain bundle with PlainBundleImage, or fix the annotation)", annotationsFile, BundleMediaTypeAnnotation, mt, RegistryV1MediaType)
	}
	return doc.Annotations, nil
}

func isDir(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.IsDir()
}

func isRegularFile(p string) bool {
	info, err := os.Stat(p)
	if err != nil {
		return false
	}
	return info.Mode().IsRegular()
}
