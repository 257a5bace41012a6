package metadataapi

import (
	"context"

	metadatav1alpha1 "github.com/olmv1/olmv1/catalogd/api/metadata/v1alpha1"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resource qualifies a resource of this group.
func Resource(resource string) schema.GroupResource {
	return metadatav1alpha1.SchemeGroupVersion.WithResource(resource).GroupResource()
}

var tableColumns = []metav1.TableColumnDefinition{
	{Name: "Catalog", Type: "string", Description: "The Catalog the blob belongs to."},
	{Name: "Schema", Type: "string", Description: "The blob's schema."},
	{Name: "Package", Type: "string", Description: "The blob's package."},
	{Name: "Name", Type: "string", Description: "The blob's name in the catalog."},
	{Name: "Object", Type: "string", Priority: 1, Description: "The metadatav1alpha1.CatalogMetadata object name."},
}

// ConvertToTable is the table kubectl get shows of a CatalogMetadata or a list of them.
func (r *REST) ConvertToTable(_ context.Context, object runtime.Object, _ runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{ColumnDefinitions: tableColumns}
	add := func(m *metadatav1alpha1.CatalogMetadata) {
		table.Rows = append(table.Rows, metav1.TableRow{
			Cells:  []interface{}{m.Spec.Catalog, m.Spec.Schema, m.Spec.Package, m.Spec.Name, m.Name},
			Object: runtime.RawExtension{Object: m},
		})
	}
	switch o := object.(type) {
	case *metadatav1alpha1.CatalogMetadata:
		add(o)
	case *metadatav1alpha1.CatalogMetadataList:
		for i := range o.Items {
			add(&o.Items[i])
		}
		table.ResourceVersion = o.ResourceVersion
		table.Continue = o.Continue
	default:
		if m, err := meta.ListAccessor(object); err == nil {
			table.ResourceVersion = m.GetResourceVersion()
		}
	}
	return table, nil
}
