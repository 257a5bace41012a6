package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// OpenAPI definition names of the types of this package.
const (
	modelPrefix      = "io.operatorframework.catalogd.metadata.v1alpha1."
	catalogMetadata  = modelPrefix + "CatalogMetadata"
	metadataSpec     = modelPrefix + "CatalogMetadataSpec"
	catalogMetaList  = modelPrefix + "CatalogMetadataList"
	stringPropFormat = ""
)

// OpenAPIModelName implements the OpenAPI model namer.
func (CatalogMetadata) OpenAPIModelName() string { return catalogMetadata }

// OpenAPIModelName implements the OpenAPI model namer.
func (CatalogMetadataSpec) OpenAPIModelName() string { return metadataSpec }

// OpenAPIModelName implements the OpenAPI model namer.
func (CatalogMetadataList) OpenAPIModelName() string { return catalogMetaList }

func str(desc string) spec.Schema {
	return spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}, Format: stringPropFormat, Description: desc}}
}

func kindAndVersion() map[string]spec.Schema {
	return map[string]spec.Schema{
		"kind":       str("Kind is a string value representing the REST resource this object represents."),
		"apiVersion": str("APIVersion defines the versioned schema of this representation of an object."),
	}
}

// GetOpenAPIDefinitions returns the OpenAPI definitions of CatalogMetadata, its spec and its list.
// The meta/v1 definitions they reference come from elsewhere (e.g. apiextensions-apiserver's
// generated definitions).
func GetOpenAPIDefinitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	objProps := kindAndVersion()
	objProps["metadata"] = spec.Schema{SchemaProps: spec.SchemaProps{Default: map[string]interface{}{}, Ref: ref(metav1.ObjectMeta{}.OpenAPIModelName())}}
	objProps["spec"] = spec.Schema{SchemaProps: spec.SchemaProps{Default: map[string]interface{}{}, Ref: ref(metadataSpec)}}
	listProps := kindAndVersion()
	listProps["metadata"] = spec.Schema{SchemaProps: spec.SchemaProps{Default: map[string]interface{}{}, Ref: ref(metav1.ListMeta{}.OpenAPIModelName())}}
	listProps["items"] = spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"array"}, Items: &spec.SchemaOrArray{Schema: &spec.Schema{
		SchemaProps: spec.SchemaProps{Default: map[string]interface{}{}, Ref: ref(catalogMetadata)}}}}}
	content := spec.Schema{
		SchemaProps:      spec.SchemaProps{Type: []string{"object"}, Description: "Content is the blob as the catalog has it. Empty in watch DELETED events."},
		VendorExtensible: spec.VendorExtensible{Extensions: spec.Extensions{"x-kubernetes-preserve-unknown-fields": true}},
	}
	return map[string]common.OpenAPIDefinition{
		catalogMetadata: {
			Schema: spec.Schema{SchemaProps: spec.SchemaProps{
				Description: "CatalogMetadata is one blob (olm.package, olm.channel, olm.bundle, olm.deprecations, or any other schema) of a catalog that catalogd serves.",
				Type:        []string{"object"}, Properties: objProps, Required: []string{"spec"},
			}},
			Dependencies: []string{metav1.ObjectMeta{}.OpenAPIModelName(), metadataSpec},
		},
		metadataSpec: {
			Schema: spec.Schema{SchemaProps: spec.SchemaProps{
				Description: "CatalogMetadataSpec identifies the blob and carries it unchanged.",
				Type:        []string{"object"},
				Properties: map[string]spec.Schema{
					"catalog": str("Catalog is the name of the Catalog the blob belongs to."),
					"schema":  str("Schema is the blob's schema, e.g. olm.bundle."),
					"package": str("Package is the blob's package (empty for blobs outside any package)."),
					"name":    str("Name is the blob's name (empty for blobs without one)."),
					"content": content,
				},
				Required: []string{"catalog", "schema"},
			}},
		},
		catalogMetaList: {
			Schema: spec.Schema{SchemaProps: spec.SchemaProps{
				Description: "CatalogMetadataList is a list of CatalogMetadata.",
				Type:        []string{"object"}, Properties: listProps, Required: []string{"items"},
			}},
			Dependencies: []string{metav1.ListMeta{}.OpenAPIModelName(), catalogMetadata},
		},
	}
}
