package catalogs

import (
	"context"
	"sync"
	"time"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/deppy/pkg/cluster"
	"github.com/olmv1/olmv1/deppy/pkg/olm"
)

// Cache keeps each served catalog parsed, keyed by name and content hash, and the index of the last
// set of catalogs it was asked for: deppy's cluster.Cache, with catalogd's hash function as its
// Hasher and the Catalogs converted from catalogd's API. It is safe for concurrent use.
type Cache struct {
	Reader ContentReader
	// ReadWhole makes IndexFor read every catalog whole, as Index does (--read-whole-catalogs).
	ReadWhole bool

	once   sync.Once
	shared *cluster.Cache
	now    func() time.Time // time.Now; tests set it
}

func (c *Cache) cache() *cluster.Cache {
	c.once.Do(func() {
		c.shared = &cluster.Cache{Reader: c.Reader, Hasher: catalogdHasher, Now: func() time.Time {
			if c.now != nil {
				return c.now()
			}
			return time.Now()
		}}
	})
	return c.shared
}

// Serving reports whether a Catalog has content to resolve from: a content hash and Serving=True.
func Serving(c *catalogdv1alpha1.Catalog) bool {
	in := Input(c)
	return in.Serving()
}

// Index returns the index of the serving catalogs among cats (reading only those whose content hash
// is new) and their names. An error reading any catalog fails the call: resolving without a catalog
// could move Operators to other bundles. So does content that is not what the catalog's status names
// (a *ContentMismatchError, see verify.go): it is not cached, and the catalog is read again after a
// backoff (until then the call returns the same error without reading).
func (c *Cache) Index(ctx context.Context, cats []catalogdv1alpha1.Catalog) (*olm.Index, []string, error) {
	return c.cache().Index(ctx, Inputs(cats))
}

// IndexFor is Index reading only the packages roots names and those their bundles depend on (deppy's
// cluster.Cache.IndexFor): what a resolution of Operators naming roots needs.
func (c *Cache) IndexFor(ctx context.Context, cats []catalogdv1alpha1.Catalog, roots []string) (*olm.Index, []string, error) {
	if c.ReadWhole {
		return c.Index(ctx, cats)
	}
	return c.cache().IndexFor(ctx, Inputs(cats), roots)
}

// Reads returns how many times a catalog's content was read (for tests and metrics).
func (c *Cache) Reads() int {
	return c.cache().Reads()
}

// Input is what resolution reads of a Catalog (deppy's cluster.Catalog).
func Input(c *catalogdv1alpha1.Catalog) cluster.Catalog {
	in := cluster.Catalog{
		Name: c.Name, Labels: c.Labels, Priority: c.Spec.Priority,
		ContentHash: c.Status.ContentHash, Conditions: c.Status.Conditions,
	}
	if n := c.Status.Counts; n != nil {
		in.Counts = &cluster.Counts{Packages: n.Packages, Channels: n.Channels, Bundles: n.Bundles}
	}
	return in
}

// Inputs converts Catalogs with Input.
func Inputs(cats []catalogdv1alpha1.Catalog) []cluster.Catalog {
	out := make([]cluster.Catalog, len(cats))
	for i := range cats {
		out[i] = Input(&cats[i])
	}
	return out
}
