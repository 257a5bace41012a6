package graph

import (
	"encoding/json"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
)

// fixture is package op: stable (default) 0.1.0 → 0.2.0 → 1.0.0 (1.0.0 skips 0.1.1 and has
// skipRange <1.0.0), alpha 0.1.0 → 0.2.0 → 0.3.0 → 1.1.0 (skipRange >=0.2.0 <1.1.0), a package
// of another name, and deprecations at every scope. Entries are deliberately out of order.
func fixture() *declcfg.DeclarativeConfig {
	bundle := func(pkg, v string) declcfg.Bundle {
		return declcfg.Bundle{Schema: declcfg.SchemaBundle, Package: pkg, Name: pkg + ".v" + v, Image: "registry.test/" + pkg + ":" + v,
			Properties: []property.Property{property.MustBuildPackage(pkg, v)}}
	}
	cfg := &declcfg.DeclarativeConfig{
		Packages: []declcfg.Package{
			{Schema: declcfg.SchemaPackage, Name: "other", DefaultChannel: "stable"},
			{Schema: declcfg.SchemaPackage, Name: "op", DefaultChannel: "stable"},
		},
		Channels: []declcfg.Channel{
			{Schema: declcfg.SchemaChannel, Package: "op", Name: "stable", Entries: []declcfg.ChannelEntry{
				{Name: "op.v1.0.0", Replaces: "op.v0.2.0", Skips: []string{"op.v0.1.1"}, SkipRange: "<1.0.0"},
				{Name: "op.v0.1.0"},
				{Name: "op.v0.2.0", Replaces: "op.v0.1.0"},
				{Name: "op.v0.1.1"},
			}},
			{Schema: declcfg.SchemaChannel, Package: "op", Name: "alpha", Entries: []declcfg.ChannelEntry{
				{Name: "op.v0.1.0"},
				{Name: "op.v0.2.0", Replaces: "op.v0.1.0"},
				{Name: "op.v0.3.0", Replaces: "op.v0.2.0"},
				{Name: "op.v1.1.0", Replaces: "op.v0.3.0", SkipRange: ">=0.2.0 <1.1.0"},
			}},
			{Schema: declcfg.SchemaChannel, Package: "other", Name: "stable", Entries: []declcfg.ChannelEntry{{Name: "other.v9.0.0"}}},
		},
		Bundles: []declcfg.Bundle{bundle("op", "1.1.0"), bundle("op", "0.1.0"), bundle("op", "0.2.0"), bundle("op", "0.3.0"),
			bundle("op", "1.0.0"), bundle("op", "0.1.1"), bundle("other", "9.0.0")},
		Deprecations: []declcfg.Deprecation{{Schema: declcfg.SchemaDeprecation, Package: "op", Entries: []declcfg.DeprecationEntry{
			{Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaBundle, Name: "op.v0.1.1"}, Message: "0.1.1 loses data; use 0.2.0\n"},
			{Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaChannel, Name: "alpha"}, Message: "alpha is frozen; use stable"},
			{Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaPackage}, Message: `op is "end of life" <soon>`},
		}}},
	}
	return cfg
}

// clone deep-copies cfg (through JSON) so a test can reorder it.
func clone(cfg *declcfg.DeclarativeConfig) *declcfg.DeclarativeConfig {
	data, _ := json.Marshal(cfg)
	out := &declcfg.DeclarativeConfig{}
	_ = json.Unmarshal(data, out)
	return out
}
