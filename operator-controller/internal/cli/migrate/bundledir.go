package migrate

import (
	"fmt"
	"os"
	"path/filepath"

	v0 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// The installed CSV written back as a bundle directory, for rukpak's renderer.

// writeBundle writes a registry+v1 bundle of the installed CSV and the CRDs it owns into dir.
func writeBundle(dir string, st *V0, pkg string) error {
	for _, d := range []string{"manifests", "metadata"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	annotations := fmt.Sprintf("annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.manifests.v1: manifests/\n  operators.operatorframework.io.bundle.metadata.v1: metadata/\n  operators.operatorframework.io.bundle.package.v1: %q\n", pkg)
	if err := os.WriteFile(filepath.Join(dir, "metadata", "annotations.yaml"), []byte(annotations), 0o644); err != nil {
		return err
	}
	csv := bundleCSV(st.CSV)
	if err := writeYAML(filepath.Join(dir, "manifests", "csv.yaml"), csv); err != nil {
		return err
	}
	owned := map[string]bool{}
	for _, d := range st.CSV.Spec.CustomResourceDefinitions.Owned {
		owned[d.Name] = true
	}
	for _, u := range st.Marked {
		if u.GetKind() != "CustomResourceDefinition" || !owned[u.GetName()] {
			continue
		}
		crd := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(),
			"metadata": map[string]any{"name": u.GetName()},
			"spec":     u.Object["spec"],
		}}
		if err := writeYAML(filepath.Join(dir, "manifests", u.GetName()+".yaml"), crd.Object); err != nil {
			return err
		}
	}
	return nil
}

// bundleCSV is the CSV as the bundle holds it: without status, cluster-assigned metadata and the
// annotations OLM v0's OperatorGroup controller adds.
func bundleCSV(in *v0.ClusterServiceVersion) *v0.ClusterServiceVersion {
	csv := &v0.ClusterServiceVersion{TypeMeta: in.TypeMeta, Spec: *in.Spec.DeepCopy()}
	csv.APIVersion, csv.Kind = GVKCSV.GroupVersion().String(), GVKCSV.Kind
	csv.Name = in.Name
	csv.Annotations = map[string]string{}
	for k, v := range in.Annotations {
		switch k {
		case AnnotationOperatorGroup, AnnotationOperatorNamespace, AnnotationTargetNamespaces, "olm.operatorGroupProvidedAPIs":
			continue
		}
		csv.Annotations[k] = v
	}
	return csv
}

func writeYAML(path string, v any) error {
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
