package controller

// Bundle properties: the properties of the bundle an Operator resolved (as its catalog lists them,
// without the large ones: operators.RecordedProperties) travel on its BundleDeployment's annotation
// AnnotationBundleProperties and come back as status.resolvedBundle.properties and
// status.installedBundle.properties.

import (
	"encoding/json"

	"github.com/operator-framework/operator-registry/alpha/property"

	operators "github.com/olmv1/olmv1/deppy/pkg/operators"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
)

// Limits of the recorded properties: the API's (maxPropertyValue, maxProperties), and a total that
// keeps the annotation far below the 256 KiB all annotations of an object may take.
const (
	maxPropertyValue   = 4096
	maxProperties      = 64
	maxPropertiesBytes = 32 << 10
)

// bundleProperties are props as the API records them: compact JSON values, in catalog order,
// leaving out a value longer than maxPropertyValue and what goes past maxProperties or
// maxPropertiesBytes in total.
func bundleProperties(props []property.Property) []operatorsv1alpha1.BundleProperty {
	var out []operatorsv1alpha1.BundleProperty
	total := 0
	for _, p := range props {
		raw, err := operators.CanonicalJSON(p.Value)
		v := string(raw)
		if err != nil || len(v) > maxPropertyValue || len(p.Type) > 253 {
			continue
		}
		if len(out) == maxProperties || total+len(p.Type)+len(v) > maxPropertiesBytes {
			break
		}
		total += len(p.Type) + len(v)
		out = append(out, operatorsv1alpha1.BundleProperty{Type: p.Type, Value: v})
	}
	return out
}

// propertiesAnnotation is the value of AnnotationBundleProperties for props ("" when empty).
func propertiesAnnotation(props []operatorsv1alpha1.BundleProperty) string {
	if len(props) == 0 {
		return ""
	}
	b, err := json.Marshal(props)
	if err != nil {
		return ""
	}
	return string(b)
}

// propertiesFromAnnotation reads AnnotationBundleProperties back; nil when absent or unreadable
// (an annotation edited by hand is not trusted further).
func propertiesFromAnnotation(v string) []operatorsv1alpha1.BundleProperty {
	if v == "" {
		return nil
	}
	var props []operatorsv1alpha1.BundleProperty
	if json.Unmarshal([]byte(v), &props) != nil || len(props) > maxProperties {
		return nil
	}
	return props
}
