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

// AddOptions says where a bundle goes.
type AddOptions struct {
	// Image is the bundle image the catalog references.
	Image string
	// Channels default to the bundle's channels (annotations.yaml).
	Channels []string
	// SkipRange overrides the CSV's olm.skipRange annotation; the new entry skips these versions.
	SkipRange string
}

// ChannelChange says what AddBundle did to one channel.
type ChannelChange struct {
	Channel string `json:"channel"`
	Created bool   `json:"created,omitempty"`
	// Replaces is the previous head of the channel ("" for the first entry).
	Replaces  string   `json:"replaces,omitempty"`
	Skips     []string `json:"skips,omitempty"`
	SkipRange string   `json:"skipRange,omitempty"`
}

// AddResult describes the change.
type AddResult struct {
	Package        string          `json:"package"`
	Bundle         string          `json:"bundle"`
	PackageCreated bool            `json:"packageCreated,omitempty"`
	Channels       []ChannelChange `json:"channels"`
	// Notes are things the author should know (e.g. the CSV's spec.replaces was not used).
	Notes []string `json:"notes,omitempty"`
}

// AddBundle adds b to cfg (the blobs of b's package) and computes the upgrade edge of every channel
// it joins: the new entry replaces the channel's head, so the replaces chain never names a bundle the
// catalog does not have, whatever the CSV's spec.replaces says. The bundle must be newer than the
// head. A missing package or channel is created.
func AddBundle(cfg *declcfg.DeclarativeConfig, b *Bundle, opts AddOptions) (*AddResult, error) {
	if opts.Image == "" {
		return nil, fmt.Errorf("bundle %s: no image reference for the catalog (push the bundle first and pass its reference)", b.Name)
	}
	channels := opts.Channels
	if len(channels) == 0 {
		channels = b.Channels
	}
	if len(channels) == 0 {
		return nil, fmt.Errorf("bundle %s names no channel (annotations.yaml operators.operatorframework.io.bundle.channels.v1); pass --channel", b.Name)
	}
	res := &AddResult{Package: b.Package, Bundle: b.Name}

	versions, err := packageVersions(cfg, b)
	if err != nil {
		return nil, err
	}
	res.PackageCreated = ensurePackage(cfg, b, channels)
	skipRange, err := skipRangeOf(b, opts.SkipRange)
	if err != nil {
		return nil, err
	}
	usedReplaces := false
	for _, name := range channels {
		change, err := addToChannel(cfg, b, name, skipRange, versions)
		if err != nil {
			return nil, err
		}
		if b.Replaces != "" && b.Replaces == change.Replaces {
			usedReplaces = true
		}
		res.Channels = append(res.Channels, change)
	}
	if b.Replaces != "" && !usedReplaces {
		res.Notes = append(res.Notes, fmt.Sprintf("the CSV's spec.replaces %s is not the head of any of the channels; the entries replace the channel heads instead", b.Replaces))
	}
	cfg.Bundles = append(cfg.Bundles, b.Blob(opts.Image))
	return res, nil
}

// packageVersions returns the versions of the bundles cfg has of b's package, by name; a bundle of
// b's name or version is an error (a published bundle is never replaced).
func packageVersions(cfg *declcfg.DeclarativeConfig, b *Bundle) (map[string]*semver.Version, error) {
	versions := map[string]*semver.Version{}
	for _, existing := range cfg.Bundles {
		if existing.Package != b.Package {
			continue
		}
		if existing.Name == b.Name {
			return nil, fmt.Errorf("package %s already has bundle %s (image %s); a published bundle is never replaced in place: bump the CSV's version and name", b.Package, b.Name, existing.Image)
		}
		v, err := bundleVersion(existing)
		if err != nil {
			return nil, err
		}
		if v.Equal(b.Version) {
			return nil, fmt.Errorf("package %s already has version %s (bundle %s)", b.Package, b.Version, existing.Name)
		}
		versions[existing.Name] = v
	}
	return versions, nil
}

// ensurePackage adds the olm.package blob of b's package to cfg when it has none, with b's default
// channel (when it is one of channels, else the first of channels); it reports whether it did.
func ensurePackage(cfg *declcfg.DeclarativeConfig, b *Bundle, channels []string) bool {
	if slices.ContainsFunc(cfg.Packages, func(p declcfg.Package) bool { return p.Name == b.Package }) {
		return false
	}
	def := b.DefaultChannel
	if def == "" || !slices.Contains(channels, def) {
		def = channels[0]
	}
	cfg.Packages = append(cfg.Packages, declcfg.Package{Schema: declcfg.SchemaPackage, Name: b.Package, DefaultChannel: def})
	return true
}

// skipRangeOf is the skip range of b's new entries: override when set, else the CSV's; it must be
// a semver range.
func skipRangeOf(b *Bundle, override string) (string, error) {
	skipRange := override
	if skipRange == "" {
		skipRange = b.SkipRange
	}
	if skipRange != "" {
		if _, err := semver.NewConstraint(skipRange); err != nil {
			return "", fmt.Errorf("skip range %q: %w", skipRange, err)
		}
	}
	return skipRange, nil
}

// addToChannel adds b's entry to channel name of its package (created when missing): it replaces
// the channel's head, which must be older (versions are the package's bundle versions by name).
func addToChannel(cfg *declcfg.DeclarativeConfig, b *Bundle, name, skipRange string, versions map[string]*semver.Version) (ChannelChange, error) {
	idx := slices.IndexFunc(cfg.Channels, func(c declcfg.Channel) bool { return c.Package == b.Package && c.Name == name })
	change := ChannelChange{Channel: name, SkipRange: skipRange}
	if idx < 0 {
		cfg.Channels = append(cfg.Channels, declcfg.Channel{Schema: declcfg.SchemaChannel, Package: b.Package, Name: name})
		idx = len(cfg.Channels) - 1
		change.Created = true
	}
	ch := &cfg.Channels[idx]
	head, err := channelHead(ch)
	if err != nil {
		return ChannelChange{}, err
	}
	if head != "" {
		hv, ok := versions[head]
		if !ok {
			return ChannelChange{}, fmt.Errorf("channel %s of package %s: its head %s has no olm.bundle blob in the catalog", name, b.Package, head)
		}
		if !b.Version.GreaterThan(hv) {
			return ChannelChange{}, fmt.Errorf("bundle %s (version %s) is not newer than %s (version %s), the head of channel %s: a channel's head is its newest bundle (bump spec.version, or add the bundle to another channel)",
				b.Name, b.Version, head, hv, name)
		}
		change.Replaces = head
	}
	for _, s := range b.Skips {
		if s != change.Replaces {
			change.Skips = append(change.Skips, s)
		}
	}
	ch.Entries = append(ch.Entries, declcfg.ChannelEntry{Name: b.Name, Replaces: change.Replaces, Skips: change.Skips, SkipRange: change.SkipRange})
	return change, nil
}

// channelHead returns the entry of ch that no other entry replaces or skips ("" for an empty
// channel). More than one is an invalid channel.
func channelHead(ch *declcfg.Channel) (string, error) {
	incoming := map[string]bool{}
	for _, e := range ch.Entries {
		if e.Replaces != "" {
			incoming[e.Replaces] = true
		}
		for _, s := range e.Skips {
			incoming[s] = true
		}
	}
	var heads []string
	for _, e := range ch.Entries {
		if !incoming[e.Name] {
			heads = append(heads, e.Name)
		}
	}
	switch len(heads) {
	case 0:
		if len(ch.Entries) > 0 {
			return "", fmt.Errorf("channel %s of package %s has no head (its replaces/skips edges form a cycle)", ch.Name, ch.Package)
		}
		return "", nil
	case 1:
		return heads[0], nil
	}
	slices.Sort(heads)
	return "", fmt.Errorf("channel %s of package %s has %d heads (%s): fix the channel so that one entry replaces or skips each of the others", ch.Name, ch.Package, len(heads), strings.Join(heads, ", "))
}

// bundleVersion reads the version of an olm.bundle blob from its olm.package property.
func bundleVersion(b declcfg.Bundle) (*semver.Version, error) {
	for _, p := range b.Properties {
		if p.Type != property.TypePackage {
			continue
		}
		var v property.Package
		if err := json.Unmarshal(p.Value, &v); err != nil {
			return nil, fmt.Errorf("bundle %s: olm.package property: %w", b.Name, err)
		}
		sv, err := semver.NewVersion(v.Version)
		if err != nil {
			return nil, fmt.Errorf("bundle %s: version %q: %w", b.Name, v.Version, err)
		}
		return sv, nil
	}
	return nil, fmt.Errorf("bundle %s has no olm.package property", b.Name)
}
