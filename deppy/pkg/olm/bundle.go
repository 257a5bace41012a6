package olm

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	mmsemver "github.com/Masterminds/semver/v3"
	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/constraints"
	"github.com/operator-framework/operator-registry/alpha/model"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/olmv1/olmv1/deppy/pkg/resolve"
)

// GVK names a Kubernetes API kind.
type GVK struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

// String renders the GVK as "group/version Kind" (a part with characters that do not show is
// quoted, see visible).
func (g GVK) String() string {
	if g.Group == "" {
		return visible(g.Version) + " " + visible(g.Kind)
	}
	return visible(g.Group) + "/" + visible(g.Version) + " " + visible(g.Kind)
}

// PackageRequired is an olm.package.required dependency.
type PackageRequired struct {
	Package      string `json:"packageName"`
	VersionRange string `json:"versionRange"`
	matches      semver.Range
}

// Constraint is a parsed olm.constraint dependency.
type Constraint struct {
	constraints.Constraint
	// Raw is the property value as written in the catalog.
	Raw json.RawMessage
}

// Edge is a bundle's upgrade edge in one channel.
type Edge struct {
	Channel   string   `json:"channel"`
	Replaces  string   `json:"replaces,omitempty"`
	Skips     []string `json:"skips,omitempty"`
	SkipRange string   `json:"skipRange,omitempty"`
	skipRange semver.Range
}

// upgrades reports whether this edge leads from the bundle called name at
// version v (either may be unknown) to the bundle owning the edge.
func (e Edge) upgrades(name string, v *semver.Version) bool {
	if name != "" {
		if e.Replaces == name {
			return true
		}
		for _, s := range e.Skips {
			if s == name {
				return true
			}
		}
	}
	return v != nil && e.skipRange != nil && e.skipRange(*v)
}

// Bundle is one bundle of one package in one catalog, with everything the
// resolver needs already parsed. Values are shared and must not be modified.
type Bundle struct {
	Catalog         string         `json:"catalog"`
	CatalogPriority int            `json:"-"`
	Package         string         `json:"package"`
	Name            string         `json:"name"`
	Version         semver.Version `json:"-"`
	// VersionString is the version as shown to people (with its release, if any).
	VersionString string   `json:"version"`
	Image         string   `json:"image,omitempty"`
	Channels      []string `json:"channels,omitempty"`
	// Deprecation is the bundle's or its package's deprecation message.
	Deprecation string `json:"deprecation,omitempty"`
	// Edges are the bundle's upgrade edges, one per channel it is in.
	Edges            []Edge            `json:"-"`
	Provides         []GVK             `json:"-"`
	PackagesRequired []PackageRequired `json:"-"`
	GVKsRequired     []GVK             `json:"-"`
	Constraints      []Constraint      `json:"-"`
	// Properties are the bundle's raw properties (the input of cel constraints).
	Properties []property.Property `json:"-"`

	release   semver.Version
	mmVersion *mmsemver.Version
	id        resolve.Identifier
	// inDefaultChannel: the bundle is in the default channel its catalog
	// declares for its package.
	inDefaultChannel bool

	celOnce sync.Once
	celData map[string]any
	celErr  error
}

// ID is the identifier of the bundle's variable.
func (b *Bundle) ID() resolve.Identifier { return b.id }

// Deprecated reports whether the bundle or its package is deprecated.
func (b *Bundle) Deprecated() bool { return b.Deprecation != "" }

// InChannel reports whether the bundle is in the named channel.
func (b *Bundle) InChannel(name string) bool {
	for _, c := range b.Channels {
		if c == name {
			return true
		}
	}
	return false
}

// InDefaultChannel reports whether the bundle is in the default channel that
// its catalog declares for its package.
func (b *Bundle) InDefaultChannel() bool { return b.inDefaultChannel }

// String names the bundle for people: "name (package 1.2.3)".
func (b *Bundle) String() string {
	return fmt.Sprintf("%s (%s %s)", visible(b.Name), visible(b.Package), b.VersionString)
}

func bundleID(catalog, pkg, name string) resolve.Identifier {
	return resolve.Identifier("bundle/" + catalog + "/" + pkg + "/" + name)
}

// newBundle parses the first channel copy of a model bundle; addChannel adds the others.
func newBundle(cat *Catalog, mb *model.Bundle) (*Bundle, error) {
	b := &Bundle{
		Catalog:         cat.Name,
		CatalogPriority: cat.Priority,
		Package:         mb.Package.Name,
		Name:            mb.Name,
		Version:         mb.Version,
		VersionString:   mb.VersionString(),
		release:         mb.Release,
		Image:           mb.Image,
		Properties:      mb.Properties,
		id:              bundleID(cat.Name, mb.Package.Name, mb.Name),
	}
	mv, err := mmsemver.NewVersion(mb.Version.String())
	if err != nil {
		return nil, fmt.Errorf("bundle %q: version %q: %w", mb.Name, mb.Version, err)
	}
	b.mmVersion = mv
	switch {
	case mb.Deprecation != nil:
		b.Deprecation = mb.Deprecation.Message
	case mb.Package.Deprecation != nil:
		b.Deprecation = mb.Package.Deprecation.Message
	}
	props := mb.PropertiesP
	if props == nil {
		if props, err = property.Parse(mb.Properties); err != nil {
			return nil, fmt.Errorf("bundle %q: %w", mb.Name, err)
		}
	}
	for _, g := range props.GVKs {
		b.Provides = append(b.Provides, GVK{Group: g.Group, Version: g.Version, Kind: g.Kind})
	}
	for _, g := range props.GVKsRequired {
		b.GVKsRequired = append(b.GVKsRequired, GVK{Group: g.Group, Version: g.Version, Kind: g.Kind})
	}
	for _, p := range props.PackagesRequired {
		r, err := semver.ParseRange(p.VersionRange)
		if err != nil {
			return nil, fmt.Errorf("bundle %q: olm.package.required %q: invalid versionRange %q: %w", mb.Name, p.PackageName, p.VersionRange, err)
		}
		b.PackagesRequired = append(b.PackagesRequired, PackageRequired{Package: p.PackageName, VersionRange: p.VersionRange, matches: r})
	}
	for _, o := range props.Others {
		if o.Type != property.TypeConstraint {
			continue
		}
		c, err := constraints.Parse(o.Value)
		if err != nil {
			return nil, fmt.Errorf("bundle %q: invalid olm.constraint %s: %w", mb.Name, o.Value, err)
		}
		b.Constraints = append(b.Constraints, Constraint{Constraint: c, Raw: o.Value})
	}
	return b, b.addChannel(mb)
}

func (b *Bundle) addChannel(mb *model.Bundle) error {
	b.Channels = append(b.Channels, mb.Channel.Name)
	sort.Strings(b.Channels)
	e := Edge{Channel: mb.Channel.Name, Replaces: mb.Replaces, Skips: mb.Skips, SkipRange: mb.SkipRange}
	if mb.SkipRange != "" {
		r, err := semver.ParseRange(mb.SkipRange)
		if err != nil {
			return fmt.Errorf("bundle %q: channel %q: invalid skipRange %q: %w", mb.Name, mb.Channel.Name, mb.SkipRange, err)
		}
		e.skipRange = r
	}
	b.Edges = append(b.Edges, e)
	sort.Slice(b.Edges, func(i, j int) bool { return b.Edges[i].Channel < b.Edges[j].Channel })
	return nil
}

// compareVersions orders by version, then release (a release sorts above none).
func compareVersions(a, b *Bundle) int {
	if c := a.Version.Compare(b.Version); c != 0 {
		return c
	}
	ar, br := len(a.release.Pre) > 0, len(b.release.Pre) > 0
	switch {
	case ar && !br:
		return 1
	case !ar && br:
		return -1
	case !ar && !br:
		return 0
	}
	return a.release.Compare(b.release)
}

// celProperties returns the bundle's properties in the shape cel rules expect:
// a list of {"type": …, "value": …} maps.
func (b *Bundle) celProperties() (map[string]any, error) {
	b.celOnce.Do(func() {
		list := make([]any, 0, len(b.Properties))
		for _, p := range b.Properties {
			var v any
			if err := json.Unmarshal(p.Value, &v); err != nil {
				b.celErr = fmt.Errorf("bundle %q: property %q: %w", b.Name, p.Type, err)
				return
			}
			list = append(list, map[string]any{"type": p.Type, "value": v})
		}
		b.celData = map[string]any{constraints.PropertiesKey: list}
	})
	return b.celData, b.celErr
}
