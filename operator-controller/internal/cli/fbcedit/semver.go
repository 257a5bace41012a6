package fbcedit

import (
	"fmt"
	"slices"

	"github.com/Masterminds/semver/v3"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// SemverSchema is the schema of a semver template.
const SemverSchema = "olm.semver"

// SemverTemplate follows the semver catalog template convention: bundles listed under three channel
// kinds of increasing stability (candidate, fast, stable); channels per major and/or minor version
// and their upgrade edges are generated from the bundle versions. Keys match case-insensitively, so
// templates written for opm (Schema, GenerateMajorChannels, Candidate.Bundles[].Image) read as is.
type SemverTemplate struct {
	Schema                string        `json:"schema"`
	GenerateMajorChannels bool          `json:"generateMajorChannels,omitempty"`
	GenerateMinorChannels bool          `json:"generateMinorChannels,omitempty"`
	AvoidSkipPatch        bool          `json:"avoidSkipPatch,omitempty"`
	Candidate             SemverChannel `json:"candidate,omitempty"`
	Fast                  SemverChannel `json:"fast,omitempty"`
	Stable                SemverChannel `json:"stable,omitempty"`
}

// SemverChannel lists the bundles of one channel kind.
type SemverChannel struct {
	Bundles []SemverBundle `json:"bundles,omitempty"`
}

// SemverBundle is one bundle: its image reference, and optionally a local directory with its content
// (read instead of pulling the image; the catalog still references Image).
type SemverBundle struct {
	Image string `json:"image"`
	Path  string `json:"path,omitempty"`
}

// kinds in increasing stability: the default channel is taken from the most stable kind.
var semverKinds = []string{"candidate", "fast", "stable"}

func (t *SemverTemplate) kind(k string) SemverChannel {
	switch k {
	case "candidate":
		return t.Candidate
	case "fast":
		return t.Fast
	}
	return t.Stable
}

// RenderSemver renders t into a file-based catalog. bundles maps every image of the template to its
// bundle. Channels are named <kind>-v<major> and <kind>-v<major>.<minor>; minor channels are generated
// when neither generate flag is set. Within a major version, the highest patch of each minor skips the
// lower patches of that minor (or, with avoidSkipPatch, each patch replaces the one before) and
// replaces the highest patch of the previous minor; no edge crosses a major version.
func RenderSemver(t *SemverTemplate, bundles map[string]*Bundle) (*declcfg.DeclarativeConfig, error) {
	if t.Schema != SemverSchema {
		return nil, fmt.Errorf("template schema is %q, want %q", t.Schema, SemverSchema)
	}
	r := &semverRender{
		t: t, bundles: bundles,
		major: t.GenerateMajorChannels, minor: t.GenerateMinorChannels,
		cfg:       &declcfg.DeclarativeConfig{},
		images:    map[string]string{},
		byVersion: map[string]string{},
	}
	if !r.major && !r.minor {
		r.minor = true
	}
	for _, kind := range semverKinds {
		vs, err := r.kindBundles(kind)
		if err != nil {
			return nil, err
		}
		if len(vs) == 0 {
			continue
		}
		r.addChannels(kind, vs)
	}
	if r.pkg == "" {
		return nil, fmt.Errorf("the template lists no bundles")
	}
	r.cfg.Packages = []declcfg.Package{{Schema: declcfg.SchemaPackage, Name: r.pkg, DefaultChannel: r.defaultChannel()}}
	r.addBundles()
	return r.cfg, nil
}

// semverRender is one rendering of a semver template: the catalog so far and what the channel
// kinds read so far found.
type semverRender struct {
	t            *SemverTemplate
	bundles      map[string]*Bundle
	major, minor bool // which channels to generate
	cfg          *declcfg.DeclarativeConfig
	pkg          string
	images       map[string]string // bundle name -> image
	byVersion    map[string]string // version without build metadata -> bundle name
	// defaultHead is the channel with the most stable kind and, among those, the highest head.
	defaultHead *channelTop
}

// channelTop is a generated channel and the version of its head.
type channelTop struct {
	channel string
	version *semver.Version
}

// kindBundles checks the bundles the template lists under kind (one package; one image per bundle
// name; versions that differ by more than build metadata) and returns them once each, sorted by
// version.
func (r *semverRender) kindBundles(kind string) ([]*Bundle, error) {
	var vs []*Bundle
	seen := map[string]bool{}
	for i, e := range r.t.kind(kind).Bundles {
		b, ok := r.bundles[e.Image]
		if !ok || b == nil {
			return nil, fmt.Errorf("%s.bundles[%d]: no bundle read for image %q", kind, i, e.Image)
		}
		if r.pkg == "" {
			r.pkg = b.Package
		} else if b.Package != r.pkg {
			return nil, fmt.Errorf("%s.bundles[%d]: image %s is package %s, but the template's other bundles are package %s; a template renders one package", kind, i, e.Image, b.Package, r.pkg)
		}
		if prev, ok := r.images[b.Name]; ok && prev != e.Image {
			return nil, fmt.Errorf("bundle %s is both %s and %s", b.Name, prev, e.Image)
		}
		r.images[b.Name] = e.Image
		core := fmt.Sprintf("%d.%d.%d-%s", b.Version.Major(), b.Version.Minor(), b.Version.Patch(), b.Version.Prerelease())
		if other, ok := r.byVersion[core]; ok && other != b.Name {
			return nil, fmt.Errorf("bundles %s and %s differ only by build metadata (%s); semver ignores build metadata, so they cannot be ordered", other, b.Name, b.Version)
		}
		r.byVersion[core] = b.Name
		if seen[b.Name] {
			continue
		}
		seen[b.Name] = true
		vs = append(vs, b)
	}
	slices.SortFunc(vs, func(a, b *Bundle) int { return a.Version.Compare(b.Version) })
	return vs, nil
}

// addChannels adds the major and/or minor channels of kind over vs (sorted by version).
func (r *semverRender) addChannels(kind string, vs []*Bundle) {
	entries := semverEdges(vs, r.t.AvoidSkipPatch)
	if r.major {
		for _, m := range distinct(vs, func(b *Bundle) [2]uint64 { return [2]uint64{b.Version.Major(), 0} }) {
			r.addChannel(fmt.Sprintf("%s-v%d", kind, m[0]), vs, entries, func(b *Bundle) bool { return b.Version.Major() == m[0] })
		}
	}
	if r.minor {
		for _, m := range distinct(vs, func(b *Bundle) [2]uint64 { return [2]uint64{b.Version.Major(), b.Version.Minor()} }) {
			r.addChannel(fmt.Sprintf("%s-v%d.%d", kind, m[0], m[1]), vs, entries, func(b *Bundle) bool { return b.Version.Major() == m[0] && b.Version.Minor() == m[1] })
		}
	}
}

// addChannel adds channel name with the entries (of vs, index for index) of the bundles keep keeps,
// and makes it the default head when it beats the current one.
func (r *semverRender) addChannel(name string, vs []*Bundle, entries []declcfg.ChannelEntry, keep func(*Bundle) bool) {
	ch := declcfg.Channel{Schema: declcfg.SchemaChannel, Package: r.pkg, Name: name}
	var top *semver.Version
	for i, b := range vs {
		if keep(b) {
			ch.Entries = append(ch.Entries, entries[i])
			top = b.Version
		}
	}
	r.cfg.Channels = append(r.cfg.Channels, ch)
	if d := r.defaultHead; d == nil || kindRank(name) > kindRank(d.channel) || (kindRank(name) == kindRank(d.channel) && top.GreaterThan(d.version)) {
		r.defaultHead = &channelTop{channel: name, version: top}
	}
}

// defaultChannel is the package's default channel: the default head's channel, or, with both
// kinds of channels, the major channel of the chosen kind and version.
func (r *semverRender) defaultChannel() string {
	def := r.defaultHead.channel
	if r.major && r.minor {
		def = fmt.Sprintf("%s-v%d", kindOf(def), r.defaultHead.version.Major())
	}
	return def
}

// addBundles adds the olm.bundle blob of every bundle of the template, sorted by name.
func (r *semverRender) addBundles() {
	names := make([]string, 0, len(r.images))
	for n := range r.images {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		for _, b := range r.bundles {
			if b.Name == n {
				r.cfg.Bundles = append(r.cfg.Bundles, b.Blob(r.images[n]))
				break
			}
		}
	}
}

// semverEdges returns the channel entries of vs (sorted ascending, one channel kind).
func semverEdges(vs []*Bundle, avoidSkipPatch bool) []declcfg.ChannelEntry {
	entries := make([]declcfg.ChannelEntry, len(vs))
	var prevMinorHead *Bundle // highest bundle of the previous minor of the same major
	for i := 0; i < len(vs); {
		j := i
		for j < len(vs) && vs[j].Version.Major() == vs[i].Version.Major() && vs[j].Version.Minor() == vs[i].Version.Minor() {
			j++
		}
		if prevMinorHead != nil && prevMinorHead.Version.Major() != vs[i].Version.Major() {
			prevMinorHead = nil
		}
		group := vs[i:j]
		for k, b := range group {
			e := declcfg.ChannelEntry{Name: b.Name}
			switch {
			case avoidSkipPatch && k > 0:
				e.Replaces = group[k-1].Name
			case avoidSkipPatch && k == 0 && prevMinorHead != nil:
				e.Replaces = prevMinorHead.Name
			case !avoidSkipPatch && k == len(group)-1:
				if prevMinorHead != nil {
					e.Replaces = prevMinorHead.Name
				}
				for _, lower := range group[:k] {
					e.Skips = append(e.Skips, lower.Name)
				}
			}
			entries[i+k] = e
		}
		prevMinorHead = group[len(group)-1]
		i = j
	}
	return entries
}

func distinct(vs []*Bundle, key func(*Bundle) [2]uint64) [][2]uint64 {
	var out [][2]uint64
	for _, b := range vs {
		k := key(b)
		if len(out) == 0 || out[len(out)-1] != k {
			out = append(out, k)
		}
	}
	return out
}

func kindOf(channel string) string {
	for _, k := range semverKinds {
		if len(channel) > len(k) && channel[:len(k)+1] == k+"-" {
			return k
		}
	}
	return ""
}

func kindRank(channel string) int { return slices.Index(semverKinds, kindOf(channel)) }
