package olm

import (
	"fmt"
	"slices"
	"strings"

	mmsemver "github.com/Masterminds/semver/v3"
	"github.com/blang/semver/v4"
)

// UpgradePolicy says whether an installed bundle must follow the catalog's
// upgrade edges.
type UpgradePolicy string

const (
	// Enforce: an installed bundle may stay or move to a bundle that replaces
	// it, skips it or whose skipRange includes its version (one hop), never
	// downgrade or jump elsewhere.
	Enforce UpgradePolicy = "Enforce"
	// Ignore: any bundle of the package may be chosen, downgrades included.
	Ignore UpgradePolicy = "Ignore"
)

// ParseUpgradePolicy accepts Enforce or Ignore (any case); empty means Enforce.
func ParseUpgradePolicy(s string) (UpgradePolicy, error) {
	switch strings.ToLower(s) {
	case "", "enforce":
		return Enforce, nil
	case "ignore":
		return Ignore, nil
	}
	return "", fmt.Errorf("invalid upgrade policy %q: want Enforce or Ignore", s)
}

// Requirement asks for one package to be installed, e.g. from an Operator.
type Requirement struct {
	// Name is who asks (e.g. the Operator's name); used in explanations.
	// Empty means the package name.
	Name string `json:"name,omitempty"`
	// Package is the package to install.
	Package string `json:"package"`
	// VersionRange is a Masterminds semver constraint ("1.2.x", ">=1.2 <2",
	// "~1.4"); an exact version ("1.2.3") pins. Empty means any version.
	VersionRange string `json:"versionRange,omitempty"`
	// Channel, when set, restricts candidates to bundles of that channel.
	Channel string `json:"channel,omitempty"`
	// Channels, when set, restricts candidates to bundles of any of these channels, and an installed
	// bundle's upgrades to edges of these channels (with Channel, both count).
	Channels []string `json:"channels,omitempty"`
	// Catalogs, when set, restricts candidates to these catalogs (selected
	// upstream, e.g. by a label selector).
	Catalogs []string `json:"catalogs,omitempty"`
	// UpgradePolicy governs how an installed bundle of this package may
	// change. Empty means Enforce.
	UpgradePolicy UpgradePolicy `json:"upgradePolicy,omitempty"`
}

// ChannelList is every channel the requirement names (Channel, then Channels), nil for any channel.
func (r Requirement) ChannelList() []string {
	var out []string
	if r.Channel != "" {
		out = append(out, r.Channel)
	}
	for _, c := range r.Channels {
		if c != "" && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

func (r Requirement) who() string {
	if r.Name != "" && r.Name != r.Package {
		return fmt.Sprintf("Operator %q", r.Name)
	}
	return "the request"
}

// describe renders "package "p" in range "r" in channel "c"".
func (r Requirement) describe() string {
	s := fmt.Sprintf("package %q", r.Package)
	if r.VersionRange != "" {
		s += fmt.Sprintf(" in range %q", r.VersionRange)
	}
	switch chs := r.ChannelList(); len(chs) {
	case 0:
	case 1:
		s += fmt.Sprintf(" in channel %q", chs[0])
	default:
		s += fmt.Sprintf(" in channels %s", strings.Join(quoteAll(chs), ", "))
	}
	if len(r.Catalogs) > 0 {
		s += fmt.Sprintf(" from catalogs %s", strings.Join(quoteAll(r.Catalogs), ", "))
	}
	return s
}

// ParseRequirement reads "PKG[@RANGE][#CHANNEL[,CHANNEL…]]", e.g. "etcd@>=0.9 <1#alpha" or
// "etcd#stable,fast".
func ParseRequirement(s string) (Requirement, error) {
	var r Requirement
	rest := strings.TrimSpace(s)
	if i := strings.LastIndex(rest, "#"); i >= 0 {
		for _, c := range strings.Split(rest[i+1:], ",") {
			if c = strings.TrimSpace(c); c != "" {
				r.Channels = append(r.Channels, c)
			}
		}
		if len(r.Channels) == 1 {
			r.Channel, r.Channels = r.Channels[0], nil
		}
		rest = rest[:i]
		if len(r.ChannelList()) == 0 {
			return r, fmt.Errorf("requirement %q: empty channel after '#'", s)
		}
	}
	if i := strings.Index(rest, "@"); i >= 0 {
		r.VersionRange = strings.TrimSpace(rest[i+1:])
		rest = rest[:i]
		if r.VersionRange == "" {
			return r, fmt.Errorf("requirement %q: empty version range after '@'", s)
		}
	}
	r.Package = strings.TrimSpace(rest)
	if r.Package == "" {
		return r, fmt.Errorf("requirement %q: missing package name (want PKG[@RANGE][#CHANNEL])", s)
	}
	if _, err := r.versionConstraint(); err != nil {
		return r, err
	}
	return r, nil
}

func (r Requirement) versionConstraint() (*mmsemver.Constraints, error) {
	if r.VersionRange == "" {
		return nil, nil
	}
	c, err := mmsemver.NewConstraint(r.VersionRange)
	if err != nil {
		return nil, fmt.Errorf("package %q: invalid version range %q: %w (examples: \"1.2.3\", \">=1.2.0 <2.0.0\", \"~1.4\")", r.Package, r.VersionRange, err)
	}
	return c, nil
}

// InstalledBundle is a bundle already running on the cluster.
type InstalledBundle struct {
	Package string `json:"package"`
	// Version is the installed version.
	Version string `json:"version"`
	// BundleName, when known, identifies the bundle (needed to follow
	// replaces and skips edges); when empty it is looked up by version.
	BundleName string `json:"bundleName,omitempty"`
	// UpgradePolicy applies when no Requirement names the package; otherwise
	// the Requirement's policy wins. Empty means Enforce.
	UpgradePolicy UpgradePolicy `json:"upgradePolicy,omitempty"`
}

// ParseInstalled reads "PKG@VERSION" or "PKG@VERSION=BUNDLE-NAME".
func ParseInstalled(s string) (InstalledBundle, error) {
	var ib InstalledBundle
	pkg, rest, ok := strings.Cut(strings.TrimSpace(s), "@")
	if !ok || pkg == "" || rest == "" {
		return ib, fmt.Errorf("installed bundle %q: want PKG@VERSION (or PKG@VERSION=BUNDLE-NAME)", s)
	}
	ib.Package = pkg
	ib.Version, ib.BundleName, _ = strings.Cut(rest, "=")
	if _, err := semver.ParseTolerant(ib.Version); err != nil {
		return ib, fmt.Errorf("installed bundle %q: invalid version %q: %w", s, ib.Version, err)
	}
	return ib, nil
}

// Problem is everything a cluster asks for, solved together.
type Problem struct {
	Requirements []Requirement     `json:"requirements,omitempty"`
	Installed    []InstalledBundle `json:"installed,omitempty"`
	// Cluster, when it knows a version, excludes the bundles the cluster cannot run
	// (minKubeVersion, olm.minKubeVersion, olm.maxOpenShiftVersion; see ClusterVersions).
	Cluster *Cluster `json:"cluster,omitempty"`
}

func quoteAll(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
