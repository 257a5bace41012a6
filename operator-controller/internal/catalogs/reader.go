// Package catalogs reads the content of served Catalogs through the CatalogMetadata API and keeps it,
// parsed and indexed for resolution, per catalog content hash: a catalog whose status.contentHash did
// not change is not read again. What is read is checked against that hash first (verify.go): content
// that catalogd has not loaded yet is neither cached nor resolved with.
//
// The cache, the checks and the pagination are deppy/pkg/cluster's, which `deppy resolve
// --kubeconfig` runs too; this package adapts them to catalogd's typed API and supplies catalogd's
// hash function (catalogd/pkg/fbcvalidate), which the deppy module cannot import.
package catalogs

import (
	"context"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	metadatav1alpha1 "github.com/olmv1/olmv1/catalogd/api/metadata/v1alpha1"
	"github.com/olmv1/olmv1/deppy/pkg/cluster"
)

// ContentReader reads the file-based catalog content of one served Catalog.
type ContentReader = cluster.ContentReader

// BlobReader is a ContentReader that can also give the blobs as read, unparsed: the Cache then
// checks them against the Catalog's status.contentHash before it parses, caches or resolves with
// them (see ContentHash). MetadataReader is one.
type BlobReader = cluster.BlobReader

var (
	_ BlobReader         = &MetadataReader{}
	_ cluster.PartReader = &MetadataReader{}
)

// MetadataReader reads a catalog's blobs from catalogd's CatalogMetadata API (list with the field
// selector spec.catalog=<name>, paginated by cluster.ReadAll, as `deppy resolve --kubeconfig`
// reads them) through a controller-runtime client and catalogd's typed CatalogMetadataList, which
// keeps each blob's content as the raw JSON the API served.
type MetadataReader struct {
	// Client must read from the API server directly (e.g. the manager's API reader): CatalogMetadata
	// is not cached.
	Client client.Reader
	// PageSize is the number of blobs per list request; 0 means 500.
	PageSize int64
}

// ReadCatalog lists every blob of the catalog and assembles them into a DeclarativeConfig.
func (r *MetadataReader) ReadCatalog(ctx context.Context, name string) (*declcfg.DeclarativeConfig, error) {
	metas, err := r.ReadBlobs(ctx, name)
	if err != nil {
		return nil, err
	}
	return parseBlobs(name, metas)
}

// ReadBlobs lists every blob of the catalog, as served: the Cache computes their content hash.
func (r *MetadataReader) ReadBlobs(ctx context.Context, name string) ([]*declcfg.Meta, error) {
	return cluster.ReadAll(ctx, servedReader{r}, name, r.PageSize)
}

// ReadPart lists the blobs of catalog that terms select (see cluster.PartReader), with the content
// hash each was served from, partPageSize at a time unless pageSize says otherwise. Bundles come
// slimmed (slim.go): without their manifests.
func (r *MetadataReader) ReadPart(ctx context.Context, catalog string, terms map[string]string, pageSize int64, fn func(cluster.ServedBlob) error) error {
	if pageSize <= 0 {
		pageSize = partPageSize
	}
	return r.readPart(ctx, catalog, terms, pageSize, true, fn)
}

// partPageSize is the page size of a part read that names none. Parts are read a blob at a time
// and slimmed, but a page is held whole (the response body and its decoded list) until its last
// blob was handed on: with bundles that carry their manifests a page of 500 blobs, as the Cache's
// pass over a whole catalog for many packages asked, is tens of MB. A package's own list is
// rarely longer.
const partPageSize = 100

// servedReader is a MetadataReader whose ReadPart gives the blobs as served, not slimmed.
type servedReader struct{ r *MetadataReader }

func (s servedReader) ReadPart(ctx context.Context, catalog string, terms map[string]string, pageSize int64, fn func(cluster.ServedBlob) error) error {
	return s.r.readPart(ctx, catalog, terms, pageSize, false, fn)
}

func (r *MetadataReader) readPart(ctx context.Context, catalog string, terms map[string]string, pageSize int64, slim bool, fn func(cluster.ServedBlob) error) error {
	return cluster.ReadPartPages(ctx, catalog, terms, pageSize, func(ctx context.Context, sel fields.Selector, limit int64, cont string) ([]cluster.ServedBlob, string, error) {
		list := &metadatav1alpha1.CatalogMetadataList{}
		if err := r.Client.List(ctx, list, &client.ListOptions{FieldSelector: sel, Limit: limit, Continue: cont}); err != nil {
			return nil, "", err
		}
		blobs := make([]cluster.ServedBlob, 0, len(list.Items))
		for i := range list.Items {
			it := &list.Items[i]
			blob := it.Spec.Content.Raw
			if slim {
				blob = slimBlob(it.Spec.Schema, blob)
			}
			blobs = append(blobs, cluster.ServedBlob{
				Meta:        &declcfg.Meta{Schema: it.Spec.Schema, Package: it.Spec.Package, Name: it.Spec.Name, Blob: blob},
				ContentHash: it.Annotations[cluster.AnnotationContentHash],
			})
		}
		return blobs, list.Continue, nil
	}, fn)
}

func parseBlobs(name string, metas []*declcfg.Meta) (*declcfg.DeclarativeConfig, error) {
	return cluster.ParseBlobs(name, metas)
}

// AddToScheme registers the CatalogMetadata client types: the served version only.
// metadatav1alpha1.AddToScheme also registers the internal version for catalogd's API server, which
// would leave a client unable to tell which GroupVersionKind a CatalogMetadataList is.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(metadatav1alpha1.SchemeGroupVersion, &metadatav1alpha1.CatalogMetadata{}, &metadatav1alpha1.CatalogMetadataList{})
	metav1.AddToGroupVersion(s, metadatav1alpha1.SchemeGroupVersion)
	return nil
}
