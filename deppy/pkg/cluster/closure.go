package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/operator-framework/api/pkg/constraints"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
)

// part is what the Cache has read of one catalog at one content hash: parsed packages and, once a
// GVK dependency needed it, which packages provide which GVKs.
type part struct {
	hash string
	// packages by name; a nil value: the catalog has no such package.
	packages map[string]*declcfg.DeclarativeConfig
	// provides maps each GVK to the packages whose bundles provide it (nil until scanned).
	provides map[olm.GVK][]string
}

// IndexFor is Index reading only what resolving roots needs: the packages roots names and,
// transitively, every package their bundles may depend on (olm.package.required, the providers of
// olm.gvk.required, and the packages and GVKs olm.constraint properties name), in every serving
// catalog. When the Reader is not a PartReader, or a bundle carries a constraint that can match any
// bundle (a cel expression), it reads every catalog whole, as Index does.
//
// Parts are cached by catalog, content hash and package: a new Operator reads only its package
// (and its dependencies) of each catalog. What was read is checked blob by blob against the
// catalog's status.contentHash (parts.go).
func (c *Cache) IndexFor(ctx context.Context, cats []Catalog, roots []string) (*olm.Index, []string, error) {
	pr, ok := c.Reader.(PartReader)
	if !ok {
		return c.Index(ctx, cats)
	}
	serving, names, key := servingCatalogs(cats)
	need := sortedSet(roots)
	key += "|" + strings.Join(need, ",")

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.index != nil && key == c.indexKey {
		return c.index, names, nil
	}
	c.dropParts(serving)
	closed, whole, err := c.closure(ctx, pr, serving, need)
	if err != nil {
		return nil, nil, err
	}
	var idx *olm.Index
	if whole {
		idx, err = c.indexWhole(ctx, serving)
	} else {
		idx, err = c.partIndex(serving, closed)
	}
	if err != nil {
		return nil, nil, err
	}
	c.index, c.indexKey = idx, key
	return idx, names, nil
}

// closure reads the packages need names and those they depend on, in every serving catalog, and
// returns every package read. whole is true when a dependency cannot be bounded by names.
func (c *Cache) closure(ctx context.Context, pr PartReader, serving []*Catalog, need []string) ([]string, bool, error) {
	seen := map[string]bool{}
	queue := append([]string(nil), need...)
	for _, p := range need {
		seen[p] = true
	}
	for len(queue) > 0 {
		// Many new packages of one catalog at once (the first resolution, or new content) are read
		// in one pass over the catalog rather than a list each.
		for _, cat := range serving {
			if err := c.prefetch(ctx, pr, cat, queue); err != nil {
				return nil, false, err
			}
		}
		pkg := queue[0]
		queue = queue[1:]
		var deps dependencies
		for _, cat := range serving {
			cfg, err := c.partPackage(ctx, pr, cat, pkg)
			if err != nil {
				return nil, false, err
			}
			if cfg != nil {
				deps.add(cfg)
			}
		}
		if deps.unbounded {
			return nil, true, nil
		}
		more := deps.packages
		for _, g := range deps.gvks {
			for _, cat := range serving {
				providers, err := c.partProviders(ctx, pr, cat, g)
				if err != nil {
					return nil, false, err
				}
				more = append(more, providers...)
			}
		}
		for _, p := range more {
			if !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	return sortedSet(keys(seen)), false, nil
}

// partPackage returns package pkg of cat, reading it on first use at cat's content hash.
func (c *Cache) partPackage(ctx context.Context, pr PartReader, cat *Catalog, pkg string) (*declcfg.DeclarativeConfig, error) {
	p := c.part(cat)
	if cfg, ok := p.packages[pkg]; ok {
		return cfg, nil
	}
	cfg, err := withRetry(c, cat, func() (*declcfg.DeclarativeConfig, error) { return c.readPackage(ctx, pr, cat, pkg) })
	if err != nil {
		return nil, err
	}
	p.packages[pkg] = cfg
	c.reads++
	return cfg, nil
}

// batchPackages is the number of packages of one catalog, not read yet, from which they are read in
// one pass over the whole catalog (one paginated list) instead of one list each.
const batchPackages = 8

// prefetch reads the packages of pkgs that cat's part does not hold yet in one pass over cat, when
// there are at least batchPackages of them. Only their blobs are kept; the others are dropped as
// they arrive.
func (c *Cache) prefetch(ctx context.Context, pr PartReader, cat *Catalog, pkgs []string) error {
	p := c.part(cat)
	want := map[string]bool{}
	for _, pkg := range pkgs {
		if _, ok := p.packages[pkg]; !ok {
			want[pkg] = true
		}
	}
	if len(want) < batchPackages {
		return nil
	}
	read, err := withRetry(c, cat, func() (map[string]*declcfg.DeclarativeConfig, error) { return c.readPackages(ctx, pr, cat, want) })
	if err != nil {
		return err
	}
	for pkg := range want {
		p.packages[pkg] = read[pkg] // nil: cat has no such package
	}
	c.reads++
	return nil
}

// partProviders returns the packages of cat whose bundles provide g, scanning cat's bundles (their
// olm.gvk properties only; nothing else is kept) on first use at cat's content hash.
func (c *Cache) partProviders(ctx context.Context, pr PartReader, cat *Catalog, g olm.GVK) ([]string, error) {
	p := c.part(cat)
	if p.provides == nil {
		provides, err := withRetry(c, cat, func() (map[olm.GVK][]string, error) { return c.scanProviders(ctx, pr, cat) })
		if err != nil {
			return nil, err
		}
		p.provides = provides
	}
	return p.provides[g], nil
}

// scanProviders lists cat's olm.bundle blobs, a page at a time, and indexes the GVKs they provide.
func (c *Cache) scanProviders(ctx context.Context, pr PartReader, cat *Catalog) (map[olm.GVK][]string, error) {
	provides := map[olm.GVK][]string{}
	seen := map[olm.GVK]map[string]bool{}
	err := pr.ReadPart(ctx, cat.Name, map[string]string{FieldSchema: declcfg.SchemaBundle}, scanPageSize, func(b ServedBlob) error {
		if err := checkServedHash(cat, b); err != nil {
			return err
		}
		var blob struct {
			Properties []property.Property `json:"properties"`
		}
		if err := json.Unmarshal(b.Meta.Blob, &blob); err != nil {
			return fmt.Errorf("catalog %q: bundle %q: %w", cat.Name, b.Meta.Name, err)
		}
		for _, prop := range blob.Properties {
			if prop.Type != property.TypeGVK {
				continue
			}
			var v property.GVK
			if json.Unmarshal(prop.Value, &v) != nil {
				continue
			}
			g := olm.GVK{Group: v.Group, Version: v.Version, Kind: v.Kind}
			if seen[g] == nil {
				seen[g] = map[string]bool{}
			}
			if !seen[g][b.Meta.Package] {
				seen[g][b.Meta.Package] = true
				provides[g] = append(provides[g], b.Meta.Package)
			}
		}
		return nil
	})
	return provides, err
}

// scanPageSize is the page size of a providers scan: bundle blobs can be tens of KiB each.
const scanPageSize = 100

// part returns the cached part of cat at its current content hash (a new one when the hash moved).
func (c *Cache) part(cat *Catalog) *part {
	if c.parts == nil {
		c.parts = map[string]*part{}
	}
	p := c.parts[cat.Name]
	if p == nil || p.hash != cat.ContentHash {
		p = &part{hash: cat.ContentHash, packages: map[string]*declcfg.DeclarativeConfig{}}
		c.parts[cat.Name] = p
	}
	return p
}

// dropParts forgets the parts of catalogs that are no longer serving.
func (c *Cache) dropParts(serving []*Catalog) {
	keep := map[string]bool{}
	for _, cat := range serving {
		keep[cat.Name] = true
	}
	for name := range c.parts {
		if !keep[name] {
			delete(c.parts, name)
		}
	}
}

// partIndex indexes the packages pkgs of every serving catalog (each catalog's parts merged).
func (c *Cache) partIndex(serving []*Catalog, pkgs []string) (*olm.Index, error) {
	list := make([]*olm.Catalog, 0, len(serving))
	for _, cat := range serving {
		merged := &declcfg.DeclarativeConfig{}
		p := c.part(cat)
		for _, name := range pkgs {
			if cfg := p.packages[name]; cfg != nil {
				merged.Merge(cfg)
			}
		}
		oc, err := olm.NewCatalog(cat.Name, int(cat.Priority), merged)
		if err != nil {
			return nil, err
		}
		list = append(list, oc)
	}
	return olm.NewIndex(list...)
}

// dependencies are the package names and GVKs the bundles of some packages depend on.
type dependencies struct {
	packages  []string
	gvks      []olm.GVK
	unbounded bool
}

func (d *dependencies) add(cfg *declcfg.DeclarativeConfig) {
	for i := range cfg.Bundles {
		for _, prop := range cfg.Bundles[i].Properties {
			switch prop.Type {
			case property.TypePackageRequired:
				var v property.PackageRequired
				if json.Unmarshal(prop.Value, &v) == nil {
					d.packages = append(d.packages, v.PackageName)
				}
			case property.TypeGVKRequired:
				var v property.GVKRequired
				if json.Unmarshal(prop.Value, &v) == nil {
					d.gvks = append(d.gvks, olm.GVK{Group: v.Group, Version: v.Version, Kind: v.Kind})
				}
			case constraints.OLMConstraintType:
				var v constraints.Constraint
				if json.Unmarshal(prop.Value, &v) != nil {
					continue // invalid: the resolver reports it; it matches nothing
				}
				d.constraint(v)
			}
		}
	}
}

// constraint adds what an olm.constraint names; a cel expression can match any bundle.
func (d *dependencies) constraint(v constraints.Constraint) {
	switch {
	case v.Package != nil:
		d.packages = append(d.packages, v.Package.PackageName)
	case v.GVK != nil:
		d.gvks = append(d.gvks, olm.GVK{Group: v.GVK.Group, Version: v.GVK.Version, Kind: v.GVK.Kind})
	case v.Cel != nil:
		d.unbounded = true
	}
	for _, comp := range []*constraints.CompoundConstraint{v.All, v.Any, v.Not} {
		if comp == nil {
			continue
		}
		for _, inner := range comp.Constraints {
			d.constraint(inner)
		}
	}
}

// servingCatalogs returns the serving catalogs of cats sorted by name, their names, and a key of
// their names, content hashes and priorities.
func servingCatalogs(cats []Catalog) ([]*Catalog, []string, string) {
	var serving []*Catalog
	for i := range cats {
		if cats[i].Serving() {
			serving = append(serving, &cats[i])
		}
	}
	sort.Slice(serving, func(i, j int) bool { return serving[i].Name < serving[j].Name })
	names := make([]string, len(serving))
	keyParts := make([]string, len(serving))
	for i, cat := range serving {
		names[i] = cat.Name
		keyParts[i] = fmt.Sprintf("%s/%s/%d", cat.Name, cat.ContentHash, cat.Priority)
	}
	return serving, names, strings.Join(keyParts, ",")
}

func sortedSet(list []string) []string {
	set := map[string]bool{}
	for _, s := range list {
		if s != "" {
			set[s] = true
		}
	}
	out := keys(set)
	sort.Strings(out)
	return out
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
