package operators

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
	deppyresolve "github.com/olmv1/olmv1/deppy/pkg/resolve"
)

// StageOperatorPackagesOnly is the pipeline stage that keeps resolution to the packages Operators ask
// for: a dependency is satisfied only by a package that an Operator installs.
const StageOperatorPackagesOnly = "operator-packages-only"

// Bundle is a resolved bundle with what operator-controller needs to install it.
type Bundle struct {
	Name    string
	Package string
	Version string
	Catalog string
	Image   string
	// MediaType is the bundle's olm.bundle.mediatype property ("" when absent: registry+v1).
	MediaType string
	// SuggestedNamespace is the CSV's operatorframework.io/suggested-namespace annotation, if any.
	SuggestedNamespace string
	// Deprecation: the catalog's deprecation messages for the package, the channel and the bundle
	// ("" when not deprecated).
	PackageDeprecation, ChannelDeprecation, BundleDeprecation string
	// Channel is the deprecated channel ChannelDeprecation is about.
	Channel string
	// Dependencies are the bundle's dependencies and the packages resolution chose to satisfy them.
	Dependencies []Dependency
	// Properties are the bundle's properties as its catalog lists them, except the large ones that
	// carry manifests or descriptions (olm.bundle.object, olm.csv.metadata); see RecordedProperties.
	Properties []property.Property
	// TiedWith names the other catalogs (sorted) that offer the same version of the package at the
	// same catalog priority, for the same request: the chosen catalog won only because ties are
	// broken by catalog name. Empty when there was no tie.
	TiedWith []string
}

// Tie says, when resolution broke a tie between catalogs (TiedWith is set), that it did and how,
// and what to do to choose; "" otherwise.
func (b *Bundle) Tie() string {
	if len(b.TiedWith) == 0 {
		return ""
	}
	quoted := make([]string, len(b.TiedWith))
	for i, c := range b.TiedWith {
		quoted[i] = strconv.Quote(c)
	}
	return fmt.Sprintf("catalog %q and %s %s offer version %s of package %q at the same priority; %q won because ties are broken by catalog name "+
		"(alphabetical order): to choose, set spec.catalogSelector (e.g. matchLabels olm.operatorframework.io/metadata.name: <catalog>) or give one Catalog a higher spec.priority",
		b.Catalog, plural(len(b.TiedWith), "catalog", "catalogs"), strings.Join(quoted, ", "), b.Version, b.Package, b.Catalog)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Property types left out of Bundle.Properties: they carry whole manifests or long descriptions.
var largeProperties = map[string]bool{property.TypeBundleObject: true, property.TypeCSVMetadata: true}

// RecordedProperties is props without the large properties (largeProperties), in their order,
// each value as canonical compact JSON (HTML characters such as '>' not escaped): the same property
// gives the same bytes however its catalog was encoded. A value that is not JSON is left out.
func RecordedProperties(props []property.Property) []property.Property {
	var out []property.Property
	for _, p := range props {
		if largeProperties[p.Type] {
			continue
		}
		v, err := CanonicalJSON(p.Value)
		if err != nil {
			continue
		}
		out = append(out, property.Property{Type: p.Type, Value: v})
	}
	return out
}

// CanonicalJSON is raw decoded and encoded again: compact, object keys sorted, without escaping
// '<', '>' and '&'.
func CanonicalJSON(raw json.RawMessage) (json.RawMessage, error) {
	var v interface{}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// tiedCatalogs are the catalogs other than chosen's that offer the same version of its package at
// the same priority and standing (deprecation) to request r: those whose bundle the preference
// order (olm's newer) ranks below chosen by catalog name alone.
func tiedCatalogs(idx *olm.Index, r Request, chosen *olm.Bundle) []string {
	channels := (olm.Requirement{Channel: r.Channel, Channels: r.Channels}).ChannelList()
	seen := map[string]bool{}
	var out []string
	for _, o := range idx.Bundles(chosen.Package) {
		// Only catalogs the name rule ranks below chosen's: one ranked above it that was not chosen
		// was ruled out by something else (an upgrade edge, a constraint).
		if o.Catalog <= chosen.Catalog || seen[o.Catalog] || o.CatalogPriority != chosen.CatalogPriority ||
			o.VersionString != chosen.VersionString || o.Version.Compare(chosen.Version) != 0 || o.Deprecated() != chosen.Deprecated() {
			continue
		}
		if r.Catalogs != nil && !slices.Contains(r.Catalogs, o.Catalog) {
			continue
		}
		if len(channels) > 0 && !slices.ContainsFunc(channels, o.InChannel) {
			continue
		}
		seen[o.Catalog] = true
		out = append(out, o.Catalog)
	}
	sort.Strings(out)
	return out
}

// Dependency is one dependency of a resolved bundle and the package satisfying it.
type Dependency struct {
	// Requirement is the bundle's property, e.g. "olm.gvk.required kubevirt.io/v1 KubeVirt".
	Requirement string
	// Package, Bundle and Version are the chosen bundle that satisfies it.
	Package, Bundle, Version string
	// Operator is the request (Operator) that installs Package, or "" when none does: with
	// InstallDependencies, an Operator must be created for it.
	Operator string
}

// Property types read from bundles.
const (
	PropertyMediaType            = "olm.bundle.mediatype"
	AnnotationSuggestedNamespace = "operatorframework.io/suggested-namespace"
)

// newBundle describes the selection made for request r.
func newBundle(idx *olm.Index, r Request, sel *olm.Selection) *Bundle {
	b := &Bundle{Name: sel.Bundle, Package: sel.Package, Version: sel.Version, Catalog: sel.Catalog, Image: sel.Image}
	if chosen := idx.Bundle(sel.Catalog, sel.Package, sel.Bundle); chosen != nil {
		b.TiedWith = tiedCatalogs(idx, r, chosen)
	}
	if info := sel.BundleInfo(); info != nil {
		b.Properties = RecordedProperties(info.Properties)
		for _, p := range info.Properties {
			switch p.Type {
			case PropertyMediaType:
				var mt string
				if json.Unmarshal(p.Value, &mt) == nil {
					b.MediaType = mt
				}
			case property.TypeCSVMetadata:
				var md property.CSVMetadata
				if json.Unmarshal(p.Value, &md) == nil && b.SuggestedNamespace == "" {
					b.SuggestedNamespace = md.Annotations[AnnotationSuggestedNamespace]
				}
			}
		}
	}
	for _, c := range idx.Catalogs() {
		if c.Name != sel.Catalog {
			continue
		}
		pkg := c.Model[sel.Package]
		if pkg == nil {
			break
		}
		if pkg.Deprecation != nil {
			b.PackageDeprecation = pkg.Deprecation.Message
		}
		channels := sel.Channels
		if named := (olm.Requirement{Channel: r.Channel, Channels: r.Channels}).ChannelList(); len(named) > 0 {
			// The channels the bundle may come from: those named that hold it.
			channels = nil
			for _, c := range named {
				if slices.Contains(sel.Channels, c) {
					channels = append(channels, c)
				}
			}
		}
		// The channel counts as deprecated when every channel the bundle can come from is.
		var msgs []string
		for _, name := range channels {
			ch := pkg.Channels[name]
			if ch == nil || ch.Deprecation == nil {
				msgs = nil
				break
			}
			msgs = append(msgs, ch.Deprecation.Message)
		}
		if len(msgs) > 0 {
			b.ChannelDeprecation = strings.Join(msgs, "; ")
			b.Channel = strings.Join(channels, ", ")
		}
		for _, ch := range pkg.Channels {
			if mb := ch.Bundles[sel.Bundle]; mb != nil && mb.Deprecation != nil {
				b.BundleDeprecation = mb.Deprecation.Message
				break
			}
		}
	}
	return b
}

// onlyOperatorPackages adds the StageOperatorPackagesOnly stage after bundle dependencies: every bundle
// of a package that no Operator being resolved asks for is prohibited, with a message saying which
// Operator to create, or, when an Operator asks for it but gave way, which Operator cannot be resolved.
func (s *solver) onlyOperatorPackages(p deppyresolve.Pipeline) (deppyresolve.Pipeline, error) {
	stage := deppyresolve.NewSource(StageOperatorPackagesOnly, func(_ context.Context, vars *deppyresolve.Variables) error {
		allowed := s.withInstallableDependencies(vars)
		missing := map[string][]*olm.Bundle{}
		for _, v := range vars.All() {
			b, ok := v.Entity.(*olm.Bundle)
			if !ok {
				continue
			}
			if allowed[b.Package] {
				continue
			}
			missing[b.Package] = append(missing[b.Package], b)
		}
		s.missingFor = s.unprovided(vars, missing)
		pkgs := make([]string, 0, len(missing))
		for p := range missing {
			pkgs = append(pkgs, p)
		}
		sort.Strings(pkgs)
		for _, pkg := range pkgs {
			if op, ok := s.requestedBy[pkg]; ok {
				// The package has an Operator, which gave way: say why it cannot be resolved.
				msg := fmt.Sprintf("package %q is requested by Operator %q, which cannot be resolved", pkg, op)
				switch why := s.why[pkg]; {
				case why.text == "":
					msg += " (see that Operator's Resolved condition)"
				case why.op == op:
					msg += ": " + why.text
				default:
					msg += fmt.Sprintf(" because Operator %q cannot: %s", why.op, why.text)
				}
				for _, b := range missing[pkg] {
					vars.Get(b.ID()).Add(deppyresolve.Prohibited().WithMessage(msg).WithDetail(gaveWay{pkg: pkg}))
				}
				continue
			}
			catalogs := map[string]bool{}
			for _, b := range missing[pkg] {
				catalogs[b.Catalog] = true
			}
			names := make([]string, 0, len(catalogs))
			for c := range catalogs {
				names = append(names, fmt.Sprintf("%q", c))
			}
			sort.Strings(names)
			msg := fmt.Sprintf("package %q (in catalog %s) is not installed by any Operator: create an Operator with packageName %q to provide it",
				pkg, strings.Join(names, ", "), pkg)
			for _, b := range missing[pkg] {
				vars.Get(b.ID()).Add(deppyresolve.Prohibited().WithMessage(msg))
			}
		}
		return nil
	})
	return p.Insert(olm.StageBundleDependencies, stage)
}

// unprovided returns, per request (by name), the packages in missing (no Operator installs them)
// that bundles it may choose depend on, directly or through other dependencies, sorted.
func (s *solver) unprovided(vars *deppyresolve.Variables, missing map[string][]*olm.Bundle) map[string][]string {
	out := map[string][]string{}
	if len(missing) == 0 {
		return out
	}
	for _, v := range vars.All() {
		rp, ok := v.Entity.(*olm.RequiredPackage)
		if !ok {
			continue
		}
		var pkgs []string
		walkDependencies(vars, v, func(b *olm.Bundle) {
			if missing[b.Package] != nil && !slices.Contains(pkgs, b.Package) {
				pkgs = append(pkgs, b.Package)
			}
		})
		sort.Strings(pkgs)
		out[rp.Requirement.Name] = pkgs
	}
	return out
}

// walkDependencies calls visit for every bundle reachable from v through dependency constraints.
func walkDependencies(vars *deppyresolve.Variables, v *deppyresolve.Variable, visit func(*olm.Bundle)) {
	seen := map[deppyresolve.Identifier]bool{v.ID: true}
	queue := []*deppyresolve.Variable{v}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		if b, ok := v.Entity.(*olm.Bundle); ok {
			visit(b)
		}
		for _, c := range v.Constraints {
			if c.Kind != deppyresolve.KindDependency {
				continue
			}
			for _, id := range c.IDs {
				if seen[id] {
					continue
				}
				seen[id] = true
				if next := vars.Get(id); next != nil {
					queue = append(queue, next)
				}
			}
		}
	}
}

// withInstallableDependencies returns the allowed packages plus every package a request with
// InstallDependencies may need: the packages of the bundles reachable through dependency
// constraints from its requirement (its candidates, their dependencies' candidates, and so on).
func (s *solver) withInstallableDependencies(vars *deppyresolve.Variables) map[string]bool {
	allowed := make(map[string]bool, len(s.allowed))
	for p := range s.allowed {
		allowed[p] = true
	}
	for _, v := range vars.All() {
		if rp, ok := v.Entity.(*olm.RequiredPackage); ok && s.installDeps[rp.Requirement.Name] {
			walkDependencies(vars, v, func(b *olm.Bundle) { allowed[b.Package] = true })
		}
	}
	return allowed
}

// dependencies lists what sel's bundle depends on, naming the request that installs each package.
func dependencies(sel *olm.Selection, byPackage map[string]string) []Dependency {
	var out []Dependency
	for _, d := range sel.Dependencies {
		out = append(out, Dependency{Requirement: d.Requirement, Package: d.Package, Bundle: d.Bundle, Version: d.Version, Operator: byPackage[d.Package]})
	}
	return out
}
