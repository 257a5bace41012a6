package olm

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/olmv1/olmv1/deppy/pkg/resolve"
)

// catalogBuilder writes small file-based catalogs in Go for tests.
//
// Bundles are named "<pkg>.v<version>" and join channel "stable" unless
// in(...) says otherwise; the first channel of a package is its default.
// Without explicit edges a bundle replaces the previous bundle of each of its
// channels, which keeps every channel a valid upgrade graph.
type catalogBuilder struct {
	name     string
	priority int
	cfg      declcfg.DeclarativeConfig
	channels map[string]*declcfg.Channel
	packages map[string]bool
	deprec   map[string]*declcfg.Deprecation
}

func catalog(name string, priority int) *catalogBuilder {
	return &catalogBuilder{name: name, priority: priority, channels: map[string]*declcfg.Channel{},
		packages: map[string]bool{}, deprec: map[string]*declcfg.Deprecation{}}
}

type bundleSpec struct {
	channels   []string
	edges      bool
	replaces   string
	skips      []string
	skipRange  string
	props      []property.Property
	deprecated string
}

type opt func(*bundleSpec)

func in(channels ...string) opt { return func(s *bundleSpec) { s.channels = channels } }

// replaces sets an explicit edge to version v of the same package ("" for none).
func replaces(v string) opt {
	return func(s *bundleSpec) { s.edges = true; s.replaces = v }
}
func skips(vs ...string) opt {
	return func(s *bundleSpec) { s.edges = true; s.skips = vs }
}
func skipRange(r string) opt {
	return func(s *bundleSpec) { s.edges = true; s.skipRange = r }
}
func provides(group, version, kind string) opt {
	return func(s *bundleSpec) { s.props = append(s.props, property.MustBuildGVK(group, version, kind)) }
}
func needsGVK(group, version, kind string) opt {
	return func(s *bundleSpec) { s.props = append(s.props, property.MustBuildGVKRequired(group, version, kind)) }
}
func needsPackage(pkg, versionRange string) opt {
	return func(s *bundleSpec) { s.props = append(s.props, property.MustBuildPackageRequired(pkg, versionRange)) }
}

// olmConstraint adds an olm.constraint property written as JSON.
func olmConstraint(raw string) opt {
	return func(s *bundleSpec) {
		s.props = append(s.props, property.Property{Type: property.TypeConstraint, Value: json.RawMessage(raw)})
	}
}
func withProperty(typ, raw string) opt {
	return func(s *bundleSpec) {
		s.props = append(s.props, property.Property{Type: typ, Value: json.RawMessage(raw)})
	}
}
func deprecated(msg string) opt { return func(s *bundleSpec) { s.deprecated = msg } }

func bundleName(pkg, version string) string { return pkg + ".v" + version }

func (c *catalogBuilder) bundle(pkg, version string, opts ...opt) *catalogBuilder {
	s := bundleSpec{channels: []string{"stable"}}
	for _, o := range opts {
		o(&s)
	}
	name := bundleName(pkg, version)
	if !c.packages[pkg] {
		c.packages[pkg] = true
		c.cfg.Packages = append(c.cfg.Packages, declcfg.Package{Schema: declcfg.SchemaPackage, Name: pkg, DefaultChannel: s.channels[0]})
	}
	for _, ch := range s.channels {
		key := pkg + "/" + ch
		dch, ok := c.channels[key]
		if !ok {
			c.cfg.Channels = append(c.cfg.Channels, declcfg.Channel{Schema: declcfg.SchemaChannel, Name: ch, Package: pkg})
			dch = &c.cfg.Channels[len(c.cfg.Channels)-1]
			c.channels[key] = dch
		}
		e := declcfg.ChannelEntry{Name: name, SkipRange: s.skipRange}
		if s.edges {
			if s.replaces != "" {
				e.Replaces = bundleName(pkg, s.replaces)
			}
			for _, v := range s.skips {
				e.Skips = append(e.Skips, bundleName(pkg, v))
			}
		} else if n := len(dch.Entries); n > 0 {
			e.Replaces = dch.Entries[n-1].Name
		}
		dch.Entries = append(dch.Entries, e)
		// c.cfg.Channels may have moved: re-point the map.
		for i := range c.cfg.Channels {
			c.channels[c.cfg.Channels[i].Package+"/"+c.cfg.Channels[i].Name] = &c.cfg.Channels[i]
		}
	}
	props := append([]property.Property{property.MustBuildPackage(pkg, version)}, s.props...)
	c.cfg.Bundles = append(c.cfg.Bundles, declcfg.Bundle{Schema: declcfg.SchemaBundle, Name: name, Package: pkg,
		Image: "example.com/" + pkg + ":" + version, Properties: props})
	if s.deprecated != "" {
		d, ok := c.deprec[pkg]
		if !ok {
			d = &declcfg.Deprecation{Schema: declcfg.SchemaDeprecation, Package: pkg}
			c.deprec[pkg] = d
		}
		d.Entries = append(d.Entries, declcfg.DeprecationEntry{
			Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaBundle, Name: name}, Message: s.deprecated})
	}
	return c
}

func (c *catalogBuilder) build(t testing.TB) *Catalog {
	t.Helper()
	cfg := c.cfg
	cfg.Deprecations = nil
	for _, p := range cfg.Packages {
		if d, ok := c.deprec[p.Name]; ok {
			cfg.Deprecations = append(cfg.Deprecations, *d)
		}
	}
	cat, err := NewCatalog(c.name, c.priority, &cfg)
	if err != nil {
		t.Fatalf("building test catalog %q: %v", c.name, err)
	}
	return cat
}

func index(t testing.TB, builders ...*catalogBuilder) *Index {
	t.Helper()
	var cats []*Catalog
	for _, b := range builders {
		cats = append(cats, b.build(t))
	}
	idx, err := NewIndex(cats...)
	if err != nil {
		t.Fatalf("NewIndex: %v", err)
	}
	return idx
}

func require(pkg string) Requirement { return Requirement{Package: pkg} }

func requireRange(pkg, rng string) Requirement { return Requirement{Package: pkg, VersionRange: rng} }

func installed(pkg, version string) InstalledBundle {
	return InstalledBundle{Package: pkg, Version: version}
}

// chosen renders a result as "pkg=version" items, in result order.
func chosen(r *Result) string {
	parts := make([]string, len(r.Selections))
	for i, s := range r.Selections {
		parts[i] = s.Package + "=" + s.Version
	}
	return strings.Join(parts, " ")
}

// outcome resolves and returns either the chosen bundles or the explanation.
func outcome(t *testing.T, idx *Index, p Problem) (string, *resolve.NotSatisfiableError) {
	t.Helper()
	res, err := Resolve(context.Background(), idx, p)
	if err != nil {
		var ns *resolve.NotSatisfiableError
		if errors.As(err, &ns) {
			return "", ns
		}
		t.Fatalf("Resolve: unexpected error: %v", err)
	}
	return chosen(res), nil
}
