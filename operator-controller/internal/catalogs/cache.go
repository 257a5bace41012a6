package catalogs

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	apimeta "k8s.io/apimachinery/pkg/api/meta"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/deppy/pkg/olm"
)

// Cache keeps each served catalog parsed, keyed by name and content hash, and the index of the last
// set of catalogs it was asked for. It is safe for concurrent use.
type Cache struct {
	Reader ContentReader

	mu       sync.Mutex
	catalogs map[string]cached // by catalog name
	indexKey string
	index    *olm.Index
	reads    int
}

type cached struct {
	hash    string
	catalog *olm.Catalog
}

// Serving reports whether a Catalog has content to resolve from: a content hash and Serving=True.
func Serving(c *catalogdv1alpha1.Catalog) bool {
	return c.Status.ContentHash != "" && apimeta.IsStatusConditionTrue(c.Status.Conditions, catalogdv1alpha1.TypeServing)
}

// Index returns the index of the serving catalogs among cats (reading only those whose content hash
// is new) and their names. An error reading any catalog fails the call: resolving without a catalog
// could move Operators to other bundles.
func (c *Cache) Index(ctx context.Context, cats []catalogdv1alpha1.Catalog) (*olm.Index, []string, error) {
	var serving []*catalogdv1alpha1.Catalog
	for i := range cats {
		if Serving(&cats[i]) {
			serving = append(serving, &cats[i])
		}
	}
	sort.Slice(serving, func(i, j int) bool { return serving[i].Name < serving[j].Name })
	names := make([]string, len(serving))
	keyParts := make([]string, len(serving))
	for i, cat := range serving {
		names[i] = cat.Name
		keyParts[i] = fmt.Sprintf("%s/%s/%d", cat.Name, cat.Status.ContentHash, cat.Spec.Priority)
	}
	key := strings.Join(keyParts, ",")

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.index != nil && key == c.indexKey {
		return c.index, names, nil
	}
	if c.catalogs == nil {
		c.catalogs = map[string]cached{}
	}
	list := make([]*olm.Catalog, 0, len(serving))
	keep := map[string]bool{}
	for _, cat := range serving {
		keep[cat.Name] = true
		entry, ok := c.catalogs[cat.Name]
		if !ok || entry.hash != cat.Status.ContentHash {
			cfg, err := c.Reader.ReadCatalog(ctx, cat.Name)
			if err != nil {
				return nil, nil, err
			}
			c.reads++
			oc, err := olm.NewCatalog(cat.Name, int(cat.Spec.Priority), cfg)
			if err != nil {
				return nil, nil, err
			}
			entry = cached{hash: cat.Status.ContentHash, catalog: oc}
			c.catalogs[cat.Name] = entry
		}
		// The priority may change without the content: copy the catalog with the current one.
		oc := *entry.catalog
		oc.Priority = int(cat.Spec.Priority)
		list = append(list, &oc)
	}
	for name := range c.catalogs {
		if !keep[name] {
			delete(c.catalogs, name)
		}
	}
	idx, err := olm.NewIndex(list...)
	if err != nil {
		return nil, nil, err
	}
	c.index, c.indexKey = idx, key
	return idx, names, nil
}

// Reads returns how many times a catalog's content was read (for tests and metrics).
func (c *Cache) Reads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}
