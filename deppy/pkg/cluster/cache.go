package cluster

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
)

// Cache keeps each served catalog parsed, keyed by name and content hash, and the index of the last
// set of catalogs it was asked for. It is safe for concurrent use. Set its fields before the first
// call to Index.
type Cache struct {
	// Reader reads a catalog's content.
	Reader ContentReader
	// Hasher, when set, computes the content hash catalogd reports in status.contentHash: the blobs
	// a BlobReader read are checked against it before anything is parsed (see verify.go). Without
	// it, content is checked against status.counts only.
	Hasher Hasher
	// Now is the clock of the retry backoff (nil: time.Now).
	Now func() time.Time

	mu       sync.Mutex
	catalogs map[string]cached // by catalog name
	parts    map[string]*part  // by catalog name: what IndexFor read (closure.go)
	retries  map[string]*retry // by catalog name: read content that did not match
	indexKey string
	index    *olm.Index
	reads    int
}

type cached struct {
	hash    string
	catalog *olm.Catalog
}

// Index returns the index of the serving catalogs among cats (reading only those whose content hash
// is new) and their names. An error reading any catalog fails the call: resolving without a catalog
// could move Operators to other bundles. So does content that is not what the catalog's status names
// (a *ContentMismatchError, see verify.go): it is not cached, and the catalog is read again after a
// backoff (until then the call returns the same error without reading).
func (c *Cache) Index(ctx context.Context, cats []Catalog) (*olm.Index, []string, error) {
	serving, names, key := servingCatalogs(cats)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.index != nil && key == c.indexKey {
		return c.index, names, nil
	}
	idx, err := c.indexWhole(ctx, serving)
	if err != nil {
		return nil, nil, err
	}
	c.index, c.indexKey = idx, key
	return idx, names, nil
}

// indexWhole reads every serving catalog whole (those whose content hash is new) and indexes them.
// c.mu is held.
func (c *Cache) indexWhole(ctx context.Context, serving []*Catalog) (*olm.Index, error) {
	if c.catalogs == nil {
		c.catalogs = map[string]cached{}
	}
	list := make([]*olm.Catalog, 0, len(serving))
	keep := map[string]bool{}
	for _, cat := range serving {
		keep[cat.Name] = true
		entry, ok := c.catalogs[cat.Name]
		if !ok || entry.hash != cat.ContentHash {
			oc, err := withRetry(c, cat, func() (*olm.Catalog, error) { return c.load(ctx, cat) })
			if err != nil {
				return nil, err
			}
			entry = cached{hash: cat.ContentHash, catalog: oc}
			c.catalogs[cat.Name] = entry
		}
		// The priority may change without the content: copy the catalog with the current one.
		oc := *entry.catalog
		oc.Priority = int(cat.Priority)
		list = append(list, &oc)
	}
	for name := range c.catalogs {
		if !keep[name] {
			delete(c.catalogs, name)
		}
	}
	for name := range c.retries {
		if !keep[name] {
			delete(c.retries, name)
		}
	}
	return olm.NewIndex(list...)
}

func (c *Cache) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// withRetry runs read for cat unless an earlier read of cat's current content hash did not match
// and its retry time has not come: then it returns that mismatch again without reading. A new
// mismatch is remembered with a backoff (see retry).
func withRetry[T any](c *Cache, cat *Catalog, read func() (T, error)) (T, error) {
	var zero T
	if c.retries == nil {
		c.retries = map[string]*retry{}
	}
	r := c.retries[cat.Name]
	if r != nil && r.hash != cat.ContentHash {
		r = nil // the status names other content now: read it at once
		delete(c.retries, cat.Name)
	}
	if r != nil && c.now().Before(r.next) {
		return zero, r.pending(c.now())
	}
	v, err := read()
	if mismatch := (*ContentMismatchError)(nil); errors.As(err, &mismatch) {
		if r == nil {
			r = &retry{hash: cat.ContentHash}
			c.retries[cat.Name] = r
		}
		return zero, r.failed(mismatch, c.now())
	}
	if err != nil {
		return zero, err
	}
	delete(c.retries, cat.Name)
	return v, nil
}

// load reads cat's content, checks that it is the content cat's status names, and parses it.
func (c *Cache) load(ctx context.Context, cat *Catalog) (*olm.Catalog, error) {
	cfg, err := c.read(ctx, cat)
	if err != nil {
		return nil, err
	}
	c.reads++
	return olm.NewCatalog(cat.Name, int(cat.Priority), cfg)
}

// read reads cat's content with c.Reader and checks it: the blobs when the reader gives them (a
// BlobReader), and the parsed content against status.counts when catalogd reported them.
func (c *Cache) read(ctx context.Context, cat *Catalog) (*declcfg.DeclarativeConfig, error) {
	var cfg *declcfg.DeclarativeConfig
	if br, ok := c.Reader.(BlobReader); ok {
		metas, err := br.ReadBlobs(ctx, cat.Name)
		if err != nil {
			return nil, err
		}
		if err := c.verifyBlobs(ctx, cat, metas); err != nil {
			return nil, err
		}
		if cfg, err = ParseBlobs(cat.Name, metas); err != nil {
			return nil, err
		}
	} else {
		var err error
		if cfg, err = c.Reader.ReadCatalog(ctx, cat.Name); err != nil {
			return nil, err
		}
	}
	if err := verifyCounts(cat, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Reads returns how many times a catalog's content was read and kept (for tests and metrics).
func (c *Cache) Reads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}
