package olm

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
)

// BenchmarkResolveOnePackage resolves one package with a dependency
// (rabbitmq-messaging-topology-operator → rabbitmq-cluster-operator, 2
// packages, ~100 bundles in play) against community-v4.20. The index is
// built once, outside the timer, as a controller would per catalog content.
func BenchmarkResolveOnePackage(b *testing.B) {
	idx, _ := communityIndex(b)
	p := Problem{Requirements: []Requirement{require("rabbitmq-messaging-topology-operator")}}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Resolve(b.Context(), idx, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResolveAllCommunityPackages resolves the 36 packages of
// community-v4.20 that can be resolved, together as one problem.
func BenchmarkResolveAllCommunityPackages(b *testing.B) {
	idx, _ := communityIndex(b)
	var p Problem
	for _, pkg := range idx.Packages() {
		if pkg != "alloydb-omni-operator" {
			p.Requirements = append(p.Requirements, require(pkg))
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Resolve(b.Context(), idx, p); err != nil {
			b.Fatal(err)
		}
	}
}

var hundred struct {
	once sync.Once
	idx  *Index
	reqs []Requirement
	err  error
}

// BenchmarkResolve100Packages resolves 100 packages together as one problem.
// community-v4.20 has only 37 packages, so the catalog is served three times
// as three catalogs whose package names and API groups are suffixed per copy
// (real bundles, channels and upgrade graphs; 2409 bundles in all), and 100
// of the 108 resolvable packages are required at once.
func BenchmarkResolve100Packages(b *testing.B) {
	_, cfg := communityIndex(b)
	hundred.once.Do(func() {
		var cats []*Catalog
		for copyN := 1; copyN <= 3; copyN++ {
			suffix := fmt.Sprintf("-c%d", copyN)
			cat, err := NewCatalog(communityCatalog+suffix, 0, renamedCopy(cfg, suffix))
			if err != nil {
				hundred.err = err
				return
			}
			cats = append(cats, cat)
		}
		if hundred.idx, hundred.err = NewIndex(cats...); hundred.err != nil {
			return
		}
		for _, pkg := range hundred.idx.Packages() {
			if len(hundred.reqs) < 100 && pkg[:len(pkg)-3] != "alloydb-omni-operator" {
				hundred.reqs = append(hundred.reqs, require(pkg))
			}
		}
	})
	if hundred.err != nil {
		b.Fatal(hundred.err)
	}
	p := Problem{Requirements: hundred.reqs}
	if len(p.Requirements) != 100 {
		b.Fatalf("built %d requirements, want 100", len(p.Requirements))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := Resolve(b.Context(), hundred.idx, p)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Selections) < 100 {
			b.Fatalf("got %d selections, want at least 100", len(res.Selections))
		}
	}
}

// BenchmarkNewIndex measures cross-referencing community-v4.20 (once per
// catalog content in a controller; not part of a resolution).
func BenchmarkNewIndex(b *testing.B) {
	idx, _ := communityIndex(b)
	cats := idx.Catalogs()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := NewIndex(cats...); err != nil {
			b.Fatal(err)
		}
	}
}

// renamedCopy returns cfg with every package name and every API group
// suffixed, so that copies can be served side by side without sharing
// packages or APIs.
func renamedCopy(cfg *declcfg.DeclarativeConfig, suffix string) *declcfg.DeclarativeConfig {
	out := &declcfg.DeclarativeConfig{}
	for _, p := range cfg.Packages {
		p.Name += suffix
		out.Packages = append(out.Packages, p)
	}
	for _, c := range cfg.Channels {
		c.Package += suffix
		out.Channels = append(out.Channels, c)
	}
	for _, d := range cfg.Deprecations {
		d.Package += suffix
		out.Deprecations = append(out.Deprecations, d)
	}
	for _, bundle := range cfg.Bundles {
		bundle.Package += suffix
		props := make([]property.Property, 0, len(bundle.Properties))
		for _, p := range bundle.Properties {
			props = append(props, renameProperty(p, suffix))
		}
		bundle.Properties = props
		out.Bundles = append(out.Bundles, bundle)
	}
	sort.SliceStable(out.Bundles, func(i, j int) bool { return out.Bundles[i].Package < out.Bundles[j].Package })
	return out
}

func renameProperty(p property.Property, suffix string) property.Property {
	rewrite := func(v any) property.Property {
		raw, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		return property.Property{Type: p.Type, Value: raw}
	}
	switch p.Type {
	case property.TypePackage:
		var v property.Package
		mustUnmarshal(p.Value, &v)
		v.PackageName += suffix
		return rewrite(v)
	case property.TypePackageRequired:
		var v property.PackageRequired
		mustUnmarshal(p.Value, &v)
		v.PackageName += suffix
		return rewrite(v)
	case property.TypeGVK:
		var v property.GVK
		mustUnmarshal(p.Value, &v)
		v.Group = suffix[1:] + "." + v.Group
		return rewrite(v)
	case property.TypeGVKRequired:
		var v property.GVKRequired
		mustUnmarshal(p.Value, &v)
		v.Group = suffix[1:] + "." + v.Group
		return rewrite(v)
	}
	return p
}

func mustUnmarshal(data []byte, v any) {
	if err := json.Unmarshal(data, v); err != nil {
		panic(err)
	}
}
