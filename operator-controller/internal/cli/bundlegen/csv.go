package bundlegen

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"sort"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Annotations of the generated CSV.
const (
	almExamplesAnnotation        = "alm-examples"
	suggestedNamespaceAnnotation = "operatorframework.io/suggested-namespace"
)

// buildCSV writes the ClusterServiceVersion, as the unstructured content of its file.
func buildCSV(in *inputs, perms *permissions, hooks []operatorsv1alpha1.WebhookDescription, s *settings) (map[string]any, error) {
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	csv.Name = s.Package + ".v" + s.version
	annotations := map[string]string{}
	examples, err := almExamples(in.examples)
	if err != nil {
		return nil, err
	}
	if examples != "" {
		annotations[almExamplesAnnotation] = examples
	}
	if len(in.namespaces) == 1 {
		annotations[suggestedNamespaceAnnotation] = in.namespaces[0]
	}
	if len(annotations) > 0 {
		csv.Annotations = annotations
	}
	spec := &csv.Spec
	spec.DisplayName = s.Package
	spec.Provider = operatorsv1alpha1.AppLink{Name: s.Package}
	spec.InstallModes = s.installModes
	spec.MinKubeVersion = s.MinKubeVersion
	spec.WebhookDefinitions = hooks
	spec.InstallStrategy.StrategyName = operatorsv1alpha1.InstallStrategyNameDeployment
	spec.InstallStrategy.StrategySpec.Permissions = perms.namespaced
	spec.InstallStrategy.StrategySpec.ClusterPermissions = perms.cluster
	if len(s.Icon) > 0 {
		mt, err := iconMediaType(s.Icon)
		if err != nil {
			return nil, err
		}
		spec.Icon = []operatorsv1alpha1.Icon{{Data: base64.StdEncoding.EncodeToString(s.Icon), MediaType: mt}}
	}
	if spec.CustomResourceDefinitions.Owned, err = ownedCRDs(in.crds); err != nil {
		return nil, err
	}
	var deployments []any
	for _, d := range in.deployments {
		var dep appsv1.Deployment
		if err := toTyped(d, &dep); err != nil {
			return nil, err
		}
		spec.RelatedImages = appendImages(spec.RelatedImages, &dep)
		raw, _, _ := unstructured.NestedMap(d.Obj.Object, "spec")
		unstructured.RemoveNestedField(raw, "template", "metadata", "creationTimestamp")
		entry := map[string]any{"name": d.Obj.GetName(), "spec": raw}
		if l := d.Obj.GetLabels(); len(l) > 0 {
			entry["label"] = toAnyMap(l)
		}
		deployments = append(deployments, entry)
	}

	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(csv)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(operatorsv1alpha1.SchemeGroupVersion.String())
	u.SetKind(operatorsv1alpha1.ClusterServiceVersionKind)
	unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(m, "status")
	// Empty structs the typed CSV always has.
	unstructured.RemoveNestedField(m, "spec", "apiservicedefinitions")
	unstructured.RemoveNestedField(m, "spec", "cleanup")
	if err := unstructured.SetNestedField(m, s.version, "spec", "version"); err != nil {
		return nil, err
	}
	if deployments == nil {
		deployments = []any{}
	}
	if err := unstructured.SetNestedSlice(m, deployments, "spec", "install", "spec", "deployments"); err != nil {
		return nil, err
	}
	return m, nil
}

// ownedCRDs lists every served version of every CRD.
func ownedCRDs(crds []Object) ([]operatorsv1alpha1.CRDDescription, error) {
	var out []operatorsv1alpha1.CRDDescription
	for _, o := range crds {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := toTyped(o, &crd); err != nil {
			return nil, err
		}
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			d := operatorsv1alpha1.CRDDescription{Name: crd.Name, Version: v.Name, Kind: crd.Spec.Names.Kind, DisplayName: crd.Spec.Names.Kind}
			if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
				d.Description = v.Schema.OpenAPIV3Schema.Description
			}
			out = append(out, d)
		}
	}
	return out, nil
}

// appendImages adds the images of d's init containers and containers not listed yet, named after
// their container (made unique with the Deployment's name).
func appendImages(have []operatorsv1alpha1.RelatedImage, d *appsv1.Deployment) []operatorsv1alpha1.RelatedImage {
	images, names := map[string]bool{}, map[string]bool{}
	for _, r := range have {
		images[r.Image], names[r.Name] = true, true
	}
	pod := d.Spec.Template.Spec
	for _, c := range append(append([]corev1.Container(nil), pod.InitContainers...), pod.Containers...) {
		if c.Image == "" || images[c.Image] {
			continue
		}
		name := c.Name
		if names[name] {
			name = d.Name + "-" + c.Name
		}
		for i := 2; names[name]; i++ {
			name = fmt.Sprintf("%s-%s-%d", d.Name, c.Name, i)
		}
		images[c.Image], names[name] = true, true
		have = append(have, operatorsv1alpha1.RelatedImage{Name: name, Image: c.Image})
	}
	return have
}

// almExamples is the JSON list of the custom resources, sorted by apiVersion, kind and name.
func almExamples(crs []Object) (string, error) {
	if len(crs) == 0 {
		return "", nil
	}
	items := make([]map[string]any, 0, len(crs))
	for _, o := range crs {
		u := o.Obj.DeepCopy()
		for _, f := range [][]string{{"status"}, {"metadata", "creationTimestamp"}, {"metadata", "namespace"}} {
			unstructured.RemoveNestedField(u.Object, f...)
		}
		items = append(items, u.Object)
	}
	key := func(m map[string]any) string {
		u := unstructured.Unstructured{Object: m}
		return u.GetAPIVersion() + "\x00" + u.GetKind() + "\x00" + u.GetName()
	}
	sort.SliceStable(items, func(i, j int) bool { return key(items[i]) < key(items[j]) })
	data, err := json.MarshalIndent(items, "", "  ")
	return string(data), err
}

// iconMediaType detects the media type of an icon from its content.
func iconMediaType(data []byte) (string, error) {
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png", nil
	case bytes.HasPrefix(data, []byte{0xFF, 0xD8, 0xFF}):
		return "image/jpeg", nil
	case bytes.HasPrefix(data, []byte("GIF87a")), bytes.HasPrefix(data, []byte("GIF89a")):
		return "image/gif", nil
	case isSVG(data):
		return "image/svg+xml", nil
	}
	return "", fmt.Errorf("--icon: the file is not an SVG, PNG, JPEG or GIF image")
}

// isSVG reports whether the first element of an XML document is <svg>.
func isSVG(data []byte) bool {
	dec := xml.NewDecoder(bytes.NewReader(bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF"))))
	dec.Strict = false
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if se, ok := tok.(xml.StartElement); ok {
			return se.Name.Local == "svg"
		}
	}
}

func toAnyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
