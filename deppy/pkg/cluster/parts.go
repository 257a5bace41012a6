package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/olmv1/olmv1/deppy/pkg/operators"
)

// Reading parts of a catalog. A resolution needs the packages its Operators name and, transitively,
// the packages their bundles depend on; reading every blob of every catalog to find them makes
// operator-controller's memory grow with the catalogs (OpenShift's hold 6,000+ bundles). A
// PartReader lists only what the field selectors of the CatalogMetadata API select, and the Cache
// (IndexFor, closure.go) reads package by package.
//
// The whole-catalog check (the content hash of every blob, verify.go) cannot be made on a part. So
// every CatalogMetadata object carries the content hash of the catalog content it was served from
// (AnnotationContentHash); a part is used only when each of its blobs names status.contentHash. A
// package with no blob is only believed absent when the catalog itself is served at that hash
// (a probe of one blob): a replica that has not loaded the catalog answers empty lists.

// AnnotationContentHash is the CatalogMetadata annotation naming the content hash (the Catalog's
// status.contentHash) of the catalog content the object was served from.
const AnnotationContentHash = "catalogd.operatorframework.io/content-hash"

// Field selectors of the CatalogMetadata API besides FieldCatalog.
const (
	FieldSchema  = "spec.schema"
	FieldPackage = "spec.package"
	FieldName    = "spec.name"
)

// ServedBlob is a blob as the CatalogMetadata API served it.
type ServedBlob struct {
	Meta *declcfg.Meta
	// ContentHash is the object's AnnotationContentHash ("" from a catalogd that does not set it).
	ContentHash string
}

// PartReader lists the blobs of one catalog that a field selector selects.
type PartReader interface {
	// ReadPart lists the blobs of catalog matching terms (field → exact value, besides FieldCatalog),
	// pageSize at a time (0: DefaultPageSize), and calls fn for each in order; it stops, returning
	// nil, when fn returns ErrStopRead, and with fn's error otherwise. Blobs are not kept.
	ReadPart(ctx context.Context, catalog string, terms map[string]string, pageSize int64, fn func(ServedBlob) error) error
}

// ErrStopRead, returned by a ReadPart callback, ends the read without an error.
var ErrStopRead = errors.New("stop reading")

// ReadPartPages is ReadPart over a ListPage: the field selector is FieldCatalog=catalog plus terms.
func ReadPartPages(ctx context.Context, catalog string, terms map[string]string, pageSize int64, list func(ctx context.Context, sel fields.Selector, limit int64, cont string) ([]ServedBlob, string, error), fn func(ServedBlob) error) error {
	if pageSize <= 0 {
		pageSize = DefaultPageSize
	}
	set := fields.Set{FieldCatalog: catalog}
	for k, v := range terms {
		set[k] = v
	}
	sel := fields.SelectorFromSet(set)
	cont := ""
	for {
		page, next, err := list(ctx, sel, pageSize, cont)
		if err != nil {
			return fmt.Errorf("catalog %q: listing CatalogMetadata %s (is catalogd serving the metadata.catalogd.operatorframework.io API? check `kubectl get apiservices`): %w", catalog, sel, err)
		}
		for _, b := range page {
			if err := fn(b); err != nil {
				if errors.Is(err, ErrStopRead) {
					return nil
				}
				return err
			}
		}
		if next == "" {
			return nil
		}
		cont = next
	}
}

// readPackage reads the blobs of package pkg in cat and parses them. catalogd's spec.package of an
// olm.package blob is the package's name, so one list (spec.package=pkg) gives them all; a server
// that leaves it empty is asked for the olm.package blob by name too. It returns nil when cat has
// no such package, after checking that cat is served at its status.contentHash.
func (c *Cache) readPackage(ctx context.Context, pr PartReader, cat *Catalog, pkg string) (*declcfg.DeclarativeConfig, error) {
	var metas []*declcfg.Meta
	check := c.servedAt(cat, &metas)
	if err := pr.ReadPart(ctx, cat.Name, map[string]string{FieldPackage: pkg}, 0, check); err != nil {
		return nil, err
	}
	if !hasPackageBlob(metas, pkg) {
		if err := pr.ReadPart(ctx, cat.Name, map[string]string{FieldSchema: declcfg.SchemaPackage, FieldName: pkg}, 0, check); err != nil {
			return nil, err
		}
	}
	if len(metas) == 0 {
		return nil, c.probe(ctx, pr, cat, pkg)
	}
	return parsePackage(cat, pkg, metas)
}

// parsePackage parses the blobs of package pkg read from cat.
func parsePackage(cat *Catalog, pkg string, metas []*declcfg.Meta) (*declcfg.DeclarativeConfig, error) {
	cfg, err := declcfg.LoadSlice(metas)
	if err != nil {
		return nil, fmt.Errorf("catalog %q: parsing the %d blobs of package %q: %w", cat.Name, len(metas), pkg, err)
	}
	return cfg, nil
}

// readPackages reads the packages of want in one pass over cat's blobs, keeping only theirs, and
// parses each. A package with no blob is absent (the catalog was read at its status.contentHash).
func (c *Cache) readPackages(ctx context.Context, pr PartReader, cat *Catalog, want map[string]bool) (map[string]*declcfg.DeclarativeConfig, error) {
	byPkg := map[string][]*declcfg.Meta{}
	blobs := 0
	err := pr.ReadPart(ctx, cat.Name, nil, 0, func(b ServedBlob) error {
		blobs++
		pkg := b.Meta.Package
		if b.Meta.Schema == declcfg.SchemaPackage {
			pkg = b.Meta.Name
		}
		if !want[pkg] {
			return checkServedHash(cat, b)
		}
		m, err := keep(cat, b)
		if err != nil {
			return err
		}
		byPkg[pkg] = append(byPkg[pkg], m)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if blobs == 0 && !statusSaysEmpty(cat) {
		return nil, &ContentMismatchError{Catalog: cat.Name, Want: cat.ContentHash, Read: "0 blobs"}
	}
	out := make(map[string]*declcfg.DeclarativeConfig, len(byPkg))
	for pkg, metas := range byPkg {
		cfg, err := parsePackage(cat, pkg, metas)
		if err != nil {
			return nil, err
		}
		out[pkg] = cfg
	}
	return out, nil
}

func hasPackageBlob(metas []*declcfg.Meta, pkg string) bool {
	for _, m := range metas {
		if m.Schema == declcfg.SchemaPackage && m.Name == pkg {
			return true
		}
	}
	return false
}

// servedAt returns a ReadPart callback that keeps each blob in *metas (keep).
func (c *Cache) servedAt(cat *Catalog, metas *[]*declcfg.Meta) func(ServedBlob) error {
	return func(b ServedBlob) error {
		m, err := keep(cat, b)
		if err != nil {
			return err
		}
		*metas = append(*metas, m)
		return nil
	}
}

// keep is a blob of a part as it is kept: checked to have been served from cat's
// status.contentHash, then slimmed.
func keep(cat *Catalog, b ServedBlob) (*declcfg.Meta, error) {
	if err := checkServedHash(cat, b); err != nil {
		return nil, err
	}
	m, err := slim(b.Meta)
	if err != nil {
		return nil, fmt.Errorf("catalog %q: %w", cat.Name, err)
	}
	return m, nil
}

// statusSaysEmpty: cat's status.counts say it holds no package and no bundle, so reading nothing of
// it is no sign of a replica that does not serve it.
func statusSaysEmpty(cat *Catalog) bool {
	return cat.Counts != nil && cat.Counts.Packages == 0 && cat.Counts.Bundles == 0
}

func checkServedHash(cat *Catalog, b ServedBlob) error {
	if b.ContentHash == cat.ContentHash {
		return nil
	}
	read := fmt.Sprintf("a blob served from content %s", ShortHash(b.ContentHash))
	if b.ContentHash == "" {
		read = "a blob without the " + AnnotationContentHash + " annotation (is catalogd older than operator-controller? upgrade catalogd, or run operator-controller with --read-whole-catalogs)"
	}
	return &ContentMismatchError{Catalog: cat.Name, Want: cat.ContentHash, Read: read}
}

// probe decides whether package pkg, of which nothing was read, is absent from cat: it is when one
// blob of cat is served from status.contentHash. A replica that does not serve cat (yet) answers
// nothing: that is a mismatch, retried.
func (c *Cache) probe(ctx context.Context, pr PartReader, cat *Catalog, pkg string) error {
	if statusSaysEmpty(cat) {
		return nil
	}
	found := false
	err := pr.ReadPart(ctx, cat.Name, nil, 1, func(b ServedBlob) error {
		if err := checkServedHash(cat, b); err != nil {
			return err
		}
		found = true
		return ErrStopRead
	})
	if err != nil {
		return err
	}
	if !found {
		return &ContentMismatchError{Catalog: cat.Name, Want: cat.ContentHash,
			Read: fmt.Sprintf("no blob of package %q and none of the catalog", pkg)}
	}
	return nil
}

// slim drops from a bundle blob what resolution never reads, before it is parsed and kept: of its
// olm.csv.metadata property (descriptions, examples, CRD descriptors: most of a community bundle's
// bytes) only the suggested-namespace annotation and minKubeVersion (olm.Cluster.CannotRun reads
// it) stay. Parts are only used when no bundle of the closure has a cel constraint (which could
// read any property); other blobs are kept as they are.
func slim(m *declcfg.Meta) (*declcfg.Meta, error) {
	if m.Schema != declcfg.SchemaBundle || !bytes.Contains(m.Blob, []byte(property.TypeCSVMetadata)) {
		return m, nil
	}
	var blob map[string]json.RawMessage
	if err := json.Unmarshal(m.Blob, &blob); err != nil {
		return nil, fmt.Errorf("bundle %q: %w", m.Name, err)
	}
	var props []property.Property
	if err := json.Unmarshal(blob["properties"], &props); err != nil {
		return nil, fmt.Errorf("bundle %q: properties: %w", m.Name, err)
	}
	for i, p := range props {
		if p.Type != property.TypeCSVMetadata {
			continue
		}
		var md struct {
			Annotations    map[string]string `json:"annotations"`
			MinKubeVersion string            `json:"minKubeVersion"`
		}
		if err := json.Unmarshal(p.Value, &md); err != nil {
			return nil, fmt.Errorf("bundle %q: %s: %w", m.Name, p.Type, err)
		}
		kept := struct {
			Annotations    map[string]string `json:"annotations,omitempty"`
			MinKubeVersion string            `json:"minKubeVersion,omitempty"`
		}{MinKubeVersion: md.MinKubeVersion}
		if ns, ok := md.Annotations[operators.AnnotationSuggestedNamespace]; ok {
			kept.Annotations = map[string]string{operators.AnnotationSuggestedNamespace: ns}
		}
		raw, err := json.Marshal(kept)
		if err != nil {
			return nil, err
		}
		props[i].Value = raw
	}
	raw, err := json.Marshal(props)
	if err != nil {
		return nil, err
	}
	blob["properties"] = raw
	out, err := json.Marshal(blob)
	if err != nil {
		return nil, err
	}
	return &declcfg.Meta{Schema: m.Schema, Package: m.Package, Name: m.Name, Blob: out}, nil
}
