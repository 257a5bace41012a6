package cluster

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/dynamic"
)

// ContentReader reads the file-based catalog content of one served Catalog.
type ContentReader interface {
	ReadCatalog(ctx context.Context, name string) (*declcfg.DeclarativeConfig, error)
}

// BlobReader is a ContentReader that can also give the blobs as read, unparsed: the Cache then
// checks them before it parses, caches or resolves with them (see Cache.Hasher).
type BlobReader interface {
	ContentReader
	ReadBlobs(ctx context.Context, name string) ([]*declcfg.Meta, error)
}

// DefaultPageSize is the number of blobs per CatalogMetadata list request when none is given.
const DefaultPageSize = 500

// ReadAll lists every blob of the catalog name through pr, pageSize at a time (0: DefaultPageSize).
func ReadAll(ctx context.Context, pr PartReader, name string, pageSize int64) ([]*declcfg.Meta, error) {
	var metas []*declcfg.Meta
	err := pr.ReadPart(ctx, name, nil, pageSize, func(b ServedBlob) error {
		metas = append(metas, b.Meta)
		return nil
	})
	return metas, err
}

// ParseBlobs assembles a catalog's blobs into a DeclarativeConfig.
func ParseBlobs(name string, metas []*declcfg.Meta) (*declcfg.DeclarativeConfig, error) {
	cfg, err := declcfg.LoadSlice(metas)
	if err != nil {
		return nil, fmt.Errorf("catalog %q: parsing its %d blobs: %w", name, len(metas), err)
	}
	return cfg, nil
}

var (
	_ BlobReader = &DynamicReader{}
	_ PartReader = &DynamicReader{}
)

// DynamicReader reads a catalog's blobs from the CatalogMetadata API through the dynamic client.
type DynamicReader struct {
	Client dynamic.Interface
	// PageSize is the number of blobs per list request; 0 means DefaultPageSize.
	PageSize int64
}

// ReadCatalog lists every blob of the catalog and assembles them into a DeclarativeConfig.
func (r *DynamicReader) ReadCatalog(ctx context.Context, name string) (*declcfg.DeclarativeConfig, error) {
	metas, err := r.ReadBlobs(ctx, name)
	if err != nil {
		return nil, err
	}
	return ParseBlobs(name, metas)
}

// ReadBlobs lists every blob of the catalog.
func (r *DynamicReader) ReadBlobs(ctx context.Context, name string) ([]*declcfg.Meta, error) {
	return ReadAll(ctx, r, name, r.PageSize)
}

// ReadPart lists the blobs of catalog that terms select (see PartReader).
func (r *DynamicReader) ReadPart(ctx context.Context, catalog string, terms map[string]string, pageSize int64, fn func(ServedBlob) error) error {
	return ReadPartPages(ctx, catalog, terms, pageSize, func(ctx context.Context, sel fields.Selector, limit int64, cont string) ([]ServedBlob, string, error) {
		list, err := r.Client.Resource(CatalogMetadataGVR).List(ctx, metav1.ListOptions{FieldSelector: sel.String(), Limit: limit, Continue: cont})
		if err != nil {
			return nil, "", err
		}
		blobs := make([]ServedBlob, 0, len(list.Items))
		for i := range list.Items {
			m, err := metaFromUnstructured(&list.Items[i])
			if err != nil {
				return nil, "", err
			}
			blobs = append(blobs, ServedBlob{Meta: m, ContentHash: list.Items[i].GetAnnotations()[AnnotationContentHash]})
		}
		return blobs, list.GetContinue(), nil
	}, fn)
}

// metaFromUnstructured turns a CatalogMetadata object into the blob it serves.
func metaFromUnstructured(u *unstructured.Unstructured) (*declcfg.Meta, error) {
	spec, _ := u.Object["spec"].(map[string]any) // not NestedMap: no deep copy of the content
	str := func(k string) string { s, _ := spec[k].(string); return s }
	content, ok := spec["content"]
	if !ok {
		return nil, fmt.Errorf("CatalogMetadata %q has no spec.content", u.GetName())
	}
	blob, err := json.Marshal(content)
	if err != nil {
		return nil, fmt.Errorf("CatalogMetadata %q: spec.content: %w", u.GetName(), err)
	}
	return &declcfg.Meta{Schema: str("schema"), Package: str("package"), Name: str("name"), Blob: blob}, nil
}
