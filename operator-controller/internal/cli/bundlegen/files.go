package bundlegen

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Paths and annotation keys of a registry+v1 bundle.
const (
	ManifestsDir     = "manifests"
	MetadataDir      = "metadata"
	annotationsFile  = "metadata/annotations.yaml"
	dependenciesFile = "metadata/dependencies.yaml"
)

// bundleFiles lays out the bundle: the CSV, one file per CRD (<group>_<plural>.yaml) and per other
// object (<name>_<kind>.yaml, with the group for non-core kinds), annotations.yaml and, when the
// bundle requires anything, dependencies.yaml.
func bundleFiles(in *inputs, csv map[string]any, s *settings) (map[string][]byte, error) {
	files := map[string][]byte{}
	add := func(path string, content any, what string) error {
		if _, ok := files[path]; ok {
			return fmt.Errorf("%s and another object would both be written to %s; a bundle installs into one namespace, so kind and name must be unique", what, path)
		}
		data, err := yaml.Marshal(content)
		if err != nil {
			return err
		}
		files[path] = data
		return nil
	}
	if err := add(ManifestsDir+"/"+s.Package+".clusterserviceversion.yaml", csv, "the ClusterServiceVersion"); err != nil {
		return nil, err
	}
	for _, o := range in.crds {
		group, _, _ := unstructured.NestedString(o.Obj.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(o.Obj.Object, "spec", "names", "plural")
		if err := add(fmt.Sprintf("%s/%s_%s.yaml", ManifestsDir, group, plural), clean(o.Obj, false), o.describe()); err != nil {
			return nil, err
		}
	}
	for _, o := range in.other {
		name := o.Obj.GetName() + "_" + strings.ToLower(o.Obj.GetKind())
		if g := o.gk().Group; g != "" {
			name = o.Obj.GetName() + "_" + g + "_" + strings.ToLower(o.Obj.GetKind())
		}
		if err := add(ManifestsDir+"/"+fileName(name)+".yaml", clean(o.Obj, true), o.describe()); err != nil {
			return nil, err
		}
	}
	annotations := map[string]string{
		"operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1": ManifestsDir + "/",
		"operators.operatorframework.io.bundle.metadata.v1":  MetadataDir + "/",
		"operators.operatorframework.io.bundle.package.v1":   s.Package,
		"operators.operatorframework.io.bundle.channels.v1":  strings.Join(s.Channels, ","),
	}
	if s.DefaultChannel != "" {
		annotations["operators.operatorframework.io.bundle.channel.default.v1"] = s.DefaultChannel
	}
	if err := add(annotationsFile, map[string]any{"annotations": annotations}, "annotations"); err != nil {
		return nil, err
	}
	if deps := dependencies(s); len(deps) > 0 {
		if err := add(dependenciesFile, map[string]any{"dependencies": deps}, "dependencies"); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// dependencies are the entries of metadata/dependencies.yaml: olm.gvk and olm.package, in the
// order the flags gave them.
func dependencies(s *settings) []any {
	var out []any
	for _, g := range s.gvks {
		out = append(out, map[string]any{"type": "olm.gvk", "value": map[string]any{"group": g.Group, "version": g.Version, "kind": g.Kind}})
	}
	for _, p := range s.packages {
		out = append(out, map[string]any{"type": "olm.package", "value": map[string]any{"packageName": p.Name, "version": p.Range}})
	}
	return out
}

// clean drops what the cluster writes (status, uid, timestamps ...) and, for objects installed into
// the install namespace, the namespace.
func clean(u *unstructured.Unstructured, dropNamespace bool) map[string]any {
	c := u.DeepCopy()
	for _, f := range [][]string{
		{"status"}, {"metadata", "creationTimestamp"}, {"metadata", "resourceVersion"}, {"metadata", "uid"},
		{"metadata", "generation"}, {"metadata", "managedFields"}, {"metadata", "selfLink"},
	} {
		unstructured.RemoveNestedField(c.Object, f...)
	}
	if dropNamespace {
		unstructured.RemoveNestedField(c.Object, "metadata", "namespace")
	}
	return c.Object
}

// fileName keeps letters, digits, '.', '-' and '_' (names of some kinds may hold ':' or '/').
func fileName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '-'
	}, s)
}
