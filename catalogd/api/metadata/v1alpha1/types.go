// Package v1alpha1 holds the types of the CatalogMetadata aggregated API
// (metadata.catalogd.operatorframework.io/v1alpha1), which catalogd serves from its own content store:
// one read-only object per file-based catalog blob. Clients (operator-controller, kubectl plugins) use
// these types; the server is catalogd/internal/metadataapi. It is not a CRD:
// +kubebuilder:skip
package v1alpha1

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of CatalogMetadata.
const GroupName = "metadata.catalogd.operatorframework.io"

// SchemeGroupVersion is the served version.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// InternalGroupVersion registers the same Go types as the internal version: there is one version and
// nothing to convert.
var InternalGroupVersion = schema.GroupVersion{Group: GroupName, Version: runtime.APIVersionInternal}

// CatalogMetadata is one blob (olm.package, olm.channel, olm.bundle, olm.deprecations, or any other
// schema) of a catalog that catalogd serves.
type CatalogMetadata struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec CatalogMetadataSpec `json:"spec"`
}

// CatalogMetadataSpec identifies the blob and carries it unchanged.
type CatalogMetadataSpec struct {
	// Catalog is the name of the Catalog the blob belongs to.
	Catalog string `json:"catalog"`
	// Schema is the blob's schema, e.g. olm.bundle.
	Schema string `json:"schema"`
	// Package is the blob's package ("" for blobs outside any package).
	Package string `json:"package,omitempty"`
	// Name is the blob's name ("" for blobs without one, e.g. olm.deprecations).
	Name string `json:"name,omitempty"`
	// Content is the blob as the catalog has it. Empty in watch DELETED events.
	Content runtime.RawExtension `json:"content,omitempty"`
}

// CatalogMetadataList is a list of CatalogMetadata.
type CatalogMetadataList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []CatalogMetadata `json:"items"`
}

// DeepCopyInto copies m into out.
func (m *CatalogMetadata) DeepCopyInto(out *CatalogMetadata) {
	*out = *m
	out.TypeMeta = m.TypeMeta
	m.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	m.Spec.Content.DeepCopyInto(&out.Spec.Content)
}

// DeepCopy returns a copy of m.
func (m *CatalogMetadata) DeepCopy() *CatalogMetadata {
	if m == nil {
		return nil
	}
	out := new(CatalogMetadata)
	m.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (m *CatalogMetadata) DeepCopyObject() runtime.Object { return m.DeepCopy() }

// DeepCopyObject implements runtime.Object.
func (l *CatalogMetadataList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &CatalogMetadataList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]CatalogMetadata, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}

// AnnotationContentHash is set on every object a get or list answers: the content hash (the
// Catalog's status.contentHash) of the catalog content the answer was served from, so that a client
// reading part of a catalog can check that it is the content the Catalog's status names. It is not
// part of the object's resourceVersion (which changes only with the blob) and watch events do not
// carry it.
const AnnotationContentHash = "catalogd.operatorframework.io/content-hash"

// Field selectors the API supports (besides metadata.name), and the labels it sets where the value is
// a valid label value.
const (
	FieldCatalog = "spec.catalog"
	FieldSchema  = "spec.schema"
	FieldPackage = "spec.package"
	FieldName    = "spec.name"

	LabelCatalog = "catalog"
	LabelSchema  = "schema"
	LabelPackage = "package"
	LabelName    = "name"
)

// AddToScheme registers CatalogMetadata (external and internal versions, one Go type), the meta types
// the API server needs, and the field selectors it supports.
func AddToScheme(s *runtime.Scheme) error {
	for _, gv := range []schema.GroupVersion{SchemeGroupVersion, InternalGroupVersion} {
		s.AddKnownTypes(gv, &CatalogMetadata{}, &CatalogMetadataList{})
	}
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return s.AddFieldLabelConversionFunc(SchemeGroupVersion.WithKind("CatalogMetadata"), func(label, value string) (string, string, error) {
		switch label {
		case "metadata.name", FieldCatalog, FieldSchema, FieldPackage, FieldName:
			return label, value, nil
		}
		return "", "", fmt.Errorf("field selector %q is not supported for catalogmetadata (use metadata.name, %s, %s, %s or %s)",
			label, FieldCatalog, FieldSchema, FieldPackage, FieldName)
	})
}
