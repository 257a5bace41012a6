package olm

import (
	"fmt"
	"sort"
)

// Index is the parsed, cross-referenced content of a set of catalogs: the
// input of every variable source. Build it once per catalog content (it is
// the expensive part) and share it: it is read-only and safe for concurrent
// use.
type Index struct {
	catalogs  []*Catalog // sorted by name
	bundles   []*Bundle  // every bundle, sorted by package, then preference
	byPackage map[string][]*Bundle
	byID      map[string]*Bundle
	providers map[GVK][]*Bundle
	packages  map[string][]*PackageInfo
}

// PackageInfo describes a package as one catalog declares it.
type PackageInfo struct {
	Catalog        string
	Name           string
	DefaultChannel string
	Channels       []string
	Deprecation    string
}

// NewIndex parses and cross-references catalogs. Catalog names must be unique.
func NewIndex(catalogs ...*Catalog) (*Index, error) {
	idx := &Index{
		byPackage: map[string][]*Bundle{},
		byID:      map[string]*Bundle{},
		providers: map[GVK][]*Bundle{},
		packages:  map[string][]*PackageInfo{},
	}
	seen := map[string]bool{}
	for _, c := range catalogs {
		if c.Name == "" {
			return nil, fmt.Errorf("a catalog has no name")
		}
		if seen[c.Name] {
			return nil, fmt.Errorf("catalog %q is given twice", c.Name)
		}
		seen[c.Name] = true
		idx.catalogs = append(idx.catalogs, c)
	}
	sort.Slice(idx.catalogs, func(i, j int) bool { return idx.catalogs[i].Name < idx.catalogs[j].Name })
	for _, c := range idx.catalogs {
		if err := idx.addCatalog(c); err != nil {
			return nil, err
		}
	}
	for _, list := range idx.byPackage {
		sortNewestFirst(list)
	}
	for _, list := range idx.providers {
		sortNewestFirst(list)
	}
	pkgs := make([]string, 0, len(idx.byPackage))
	for p := range idx.byPackage {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		idx.bundles = append(idx.bundles, idx.byPackage[p]...)
	}
	return idx, nil
}

func (idx *Index) addCatalog(c *Catalog) error {
	for _, pkgName := range sortedKeys(c.Model) {
		pkg := c.Model[pkgName]
		info := &PackageInfo{Catalog: c.Name, Name: pkg.Name}
		if pkg.DefaultChannel != nil {
			info.DefaultChannel = pkg.DefaultChannel.Name
		}
		if pkg.Deprecation != nil {
			info.Deprecation = pkg.Deprecation.Message
		}
		for _, chName := range sortedKeys(pkg.Channels) {
			info.Channels = append(info.Channels, chName)
			ch := pkg.Channels[chName]
			for _, bName := range sortedKeys(ch.Bundles) {
				mb := ch.Bundles[bName]
				key := string(bundleID(c.Name, pkg.Name, mb.Name))
				if b, ok := idx.byID[key]; ok {
					if err := b.addChannel(mb); err != nil {
						return fmt.Errorf("catalog %q: package %q: %w", c.Name, pkg.Name, err)
					}
					b.inDefaultChannel = b.inDefaultChannel || chName == info.DefaultChannel
					continue
				}
				b, err := newBundle(c, mb)
				if err != nil {
					return fmt.Errorf("catalog %q: package %q: %w", c.Name, pkg.Name, err)
				}
				b.inDefaultChannel = chName == info.DefaultChannel
				idx.byID[key] = b
				idx.byPackage[pkg.Name] = append(idx.byPackage[pkg.Name], b)
				for _, g := range b.Provides {
					idx.providers[g] = append(idx.providers[g], b)
				}
			}
		}
		idx.packages[pkg.Name] = append(idx.packages[pkg.Name], info)
	}
	return nil
}

// Catalogs returns the indexed catalogs, sorted by name.
func (idx *Index) Catalogs() []*Catalog { return idx.catalogs }

// Packages returns the names of every package of every catalog, sorted.
func (idx *Index) Packages() []string {
	return sortedKeys(idx.byPackage)
}

// PackageInfo returns how each catalog declares the package.
func (idx *Index) PackageInfo(name string) []*PackageInfo { return idx.packages[name] }

// Bundles returns every bundle of a package across catalogs, newest first
// (then higher catalog priority, then catalog name).
func (idx *Index) Bundles(pkg string) []*Bundle { return idx.byPackage[pkg] }

// AllBundles returns every bundle of every package.
func (idx *Index) AllBundles() []*Bundle { return idx.bundles }

// Bundle returns a bundle by catalog, package and name, or nil.
func (idx *Index) Bundle(catalog, pkg, name string) *Bundle {
	return idx.byID[string(bundleID(catalog, pkg, name))]
}

// Providers returns the bundles providing a GVK, newest first.
func (idx *Index) Providers(g GVK) []*Bundle { return idx.providers[g] }

func sortNewestFirst(list []*Bundle) {
	sort.SliceStable(list, func(i, j int) bool { return newer(list[i], list[j]) })
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
