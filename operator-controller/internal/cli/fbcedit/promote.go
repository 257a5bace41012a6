package fbcedit

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
)

// PromoteOptions says where an existing bundle goes.
type PromoteOptions struct {
	// Channel is the channel the bundle joins (created when the package has no such channel).
	Channel string
	// SkipRange overrides the olm.skipRange annotation the bundle's olm.csv.metadata records; the new
	// entry skips these versions.
	SkipRange string
}

// PromoteResult describes what Promote did.
type PromoteResult struct {
	Package string `json:"package"`
	Bundle  string `json:"bundle"`
	Version string `json:"version"`
	// AlreadyInChannel is true when the bundle was already an entry of the channel: nothing changed.
	AlreadyInChannel bool          `json:"alreadyInChannel,omitempty"`
	Channel          ChannelChange `json:"channel"`
}

// Promote adds the bundle ref (a version or a bundle name) of package pkg, already in cfg, to
// another channel, with the upgrade edge AddBundle computes: the new entry replaces the channel's
// head, which must be older. A bundle already in the channel is not an error: the result says so
// and cfg is unchanged.
func Promote(cfg *declcfg.DeclarativeConfig, pkg, ref string, opts PromoteOptions) (*PromoteResult, error) {
	if opts.Channel == "" {
		return nil, fmt.Errorf("no channel to promote to (pass --to CHANNEL)")
	}
	blob, v, err := FindBundle(cfg, pkg, ref)
	if err != nil {
		return nil, err
	}
	res := &PromoteResult{Package: pkg, Bundle: blob.Name, Version: v.String(), Channel: ChannelChange{Channel: opts.Channel}}
	idx := slices.IndexFunc(cfg.Channels, func(c declcfg.Channel) bool { return c.Package == pkg && c.Name == opts.Channel })
	if idx >= 0 && slices.ContainsFunc(cfg.Channels[idx].Entries, func(e declcfg.ChannelEntry) bool { return e.Name == blob.Name }) {
		res.AlreadyInChannel = true
		return res, nil
	}
	versions, err := versionsOf(cfg, pkg)
	if err != nil {
		return nil, err
	}
	if idx >= 0 {
		// addToChannel refuses an older bundle too; this says it in the terms of a promotion.
		head, err := channelHead(&cfg.Channels[idx])
		if err != nil {
			return nil, err
		}
		if hv, ok := versions[head]; ok && !v.GreaterThan(hv) {
			return nil, fmt.Errorf("cannot promote %s (version %s) to channel %s of package %s: the channel's head %s (version %s) is not older; "+
				"a channel's head is its newest bundle, so only a version newer than %s can join it",
				blob.Name, v, opts.Channel, pkg, head, hv, hv)
		}
	}
	b := &Bundle{Package: pkg, Name: blob.Name, Version: v, SkipRange: csvSkipRange(blob)}
	skipRange, err := skipRangeOf(b, opts.SkipRange)
	if err != nil {
		return nil, err
	}
	change, err := addToChannel(cfg, b, opts.Channel, skipRange, versions)
	if err != nil {
		return nil, err
	}
	res.Channel = change
	return res, nil
}

// FindBundle returns the olm.bundle blob of package pkg that ref names, by bundle name or by version
// ("1.2.0" or "v1.2.0"), and its version.
func FindBundle(cfg *declcfg.DeclarativeConfig, pkg, ref string) (declcfg.Bundle, *semver.Version, error) {
	want, verr := semver.NewVersion(ref)
	var names []string
	for _, b := range cfg.Bundles {
		if b.Package != pkg {
			continue
		}
		names = append(names, b.Name)
		if b.Name != ref && verr != nil {
			continue
		}
		v, err := bundleVersion(b)
		if err != nil {
			return declcfg.Bundle{}, nil, err
		}
		if b.Name == ref || v.Equal(want) {
			return b, v, nil
		}
	}
	if len(names) == 0 {
		return declcfg.Bundle{}, nil, fmt.Errorf("package %s has no bundle in the catalog (check the package name; add bundles with `kubectl olmv1 catalog add-bundle`)", pkg)
	}
	slices.Sort(names)
	return declcfg.Bundle{}, nil, fmt.Errorf("package %s has no bundle %s (give a version or a bundle name; its bundles: %s)", pkg, ref, strings.Join(names, ", "))
}

// versionsOf returns the versions of the bundles of package pkg in cfg, by name.
func versionsOf(cfg *declcfg.DeclarativeConfig, pkg string) (map[string]*semver.Version, error) {
	versions := map[string]*semver.Version{}
	for _, b := range cfg.Bundles {
		if b.Package != pkg {
			continue
		}
		v, err := bundleVersion(b)
		if err != nil {
			return nil, err
		}
		versions[b.Name] = v
	}
	return versions, nil
}

// csvSkipRange is the olm.skipRange annotation of the CSV, as the bundle's olm.csv.metadata
// property records it ("" when it has none).
func csvSkipRange(b declcfg.Bundle) string {
	for _, p := range b.Properties {
		if p.Type != property.TypeCSVMetadata {
			continue
		}
		var md struct {
			Annotations map[string]string `json:"annotations"`
		}
		if json.Unmarshal(p.Value, &md) == nil {
			return md.Annotations["olm.skipRange"]
		}
	}
	return ""
}
