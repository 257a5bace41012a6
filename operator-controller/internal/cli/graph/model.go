// Package graph turns one package of a file-based catalog into its upgrade graph and draws it.
//
// Build reads the package's olm.package, olm.channel, olm.bundle and olm.deprecations blobs into a
// Graph: one node per bundle (ordered by version), the channels with their heads and the default
// channel, and every upgrade edge of every channel, from the older bundle to the one that upgrades
// it: replaces, skips, and skipRange expanded to the entries of the same channel whose versions the
// range covers. WriteSVG, WriteMermaid and WriteDOT draw it; each output is a pure function of the
// Graph, so the same catalog always gives the same bytes.
package graph

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
)

// Edge kinds.
const (
	Replaces  = "replaces"
	Skips     = "skips"
	SkipRange = "skipRange"
)

// Graph is the upgrade graph of one package.
type Graph struct {
	Package        string `json:"package"`
	DefaultChannel string `json:"defaultChannel"`
	// Deprecated is the package's deprecation message ("" when it is not deprecated).
	Deprecated string `json:"deprecated,omitempty"`
	// Nodes are sorted by version, oldest first; bundles without a valid version, then entries
	// without a bundle, come last, by name.
	Nodes []Node `json:"nodes"`
	// Channels are sorted by the version of their head, newest first, then by name.
	Channels []Channel `json:"channels"`
	// Edges are sorted by the rank of From, then To, then kind.
	Edges []Edge `json:"edges"`
}

// Node is one bundle.
type Node struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	// Channels the bundle is an entry of, and those it is the head of (sorted by name).
	Channels []string `json:"channels,omitempty"`
	Heads    []string `json:"heads,omitempty"`
	// Deprecated is the bundle's deprecation message.
	Deprecated string `json:"deprecated,omitempty"`
	// Missing is true for a name that channel entries use but no olm.bundle blob of the package has.
	Missing bool `json:"missing,omitempty"`
}

// Channel is one channel of the package.
type Channel struct {
	Name       string `json:"name"`
	Head       string `json:"head,omitempty"`
	Default    bool   `json:"default,omitempty"`
	Deprecated string `json:"deprecated,omitempty"`
	// Entries are the channel's bundle names, in node order.
	Entries []string `json:"entries"`
}

// Edge is an upgrade from bundle From to bundle To, in the listed channels.
type Edge struct {
	From     string   `json:"from"`
	To       string   `json:"to"`
	Kind     string   `json:"kind"`
	Channels []string `json:"channels"`
}

// Build returns the upgrade graph of package pkg in cfg (which may hold other packages too).
func Build(cfg *declcfg.DeclarativeConfig, pkg string) (*Graph, error) {
	g := &Graph{Package: pkg}
	found := false
	for _, p := range cfg.Packages {
		if p.Name == pkg {
			g.DefaultChannel, found = p.DefaultChannel, true
		}
	}
	if !found {
		return nil, fmt.Errorf("the catalog has no package %s (no olm.package blob)", pkg)
	}
	versions := map[string]*semver.Version{}
	nodes := map[string]*Node{}
	for _, b := range cfg.Bundles {
		if b.Package != pkg {
			continue
		}
		n := &Node{Name: b.Name}
		if v := bundleVersion(b); v != nil {
			versions[b.Name], n.Version = v, v.String()
		}
		nodes[b.Name] = n
	}
	node := func(name string) *Node {
		if nodes[name] == nil {
			nodes[name] = &Node{Name: name, Missing: true}
		}
		return nodes[name]
	}
	edges := map[[3]string]*Edge{}
	addEdge := func(from, to, kind, channel string) {
		node(from)
		k := [3]string{from, to, kind}
		if edges[k] == nil {
			edges[k] = &Edge{From: from, To: to, Kind: kind}
		}
		if !slices.Contains(edges[k].Channels, channel) {
			edges[k].Channels = append(edges[k].Channels, channel)
		}
	}
	for _, c := range cfg.Channels {
		if c.Package != pkg {
			continue
		}
		ch := Channel{Name: c.Name, Default: c.Name == g.DefaultChannel, Head: head(c)}
		for _, e := range c.Entries {
			n := node(e.Name)
			n.Channels = append(n.Channels, c.Name)
			ch.Entries = append(ch.Entries, e.Name)
			if e.Replaces != "" {
				addEdge(e.Replaces, e.Name, Replaces, c.Name)
			}
			for _, s := range e.Skips {
				addEdge(s, e.Name, Skips, c.Name)
			}
			if e.SkipRange == "" {
				continue
			}
			r, err := semver.NewConstraint(e.SkipRange)
			if err != nil {
				return nil, fmt.Errorf("channel %s, entry %s: skipRange %q: %w", c.Name, e.Name, e.SkipRange, err)
			}
			for _, other := range c.Entries {
				if v := versions[other.Name]; other.Name != e.Name && v != nil && r.Check(v) {
					addEdge(other.Name, e.Name, SkipRange, c.Name)
				}
			}
		}
		if ch.Head != "" {
			n := node(ch.Head)
			n.Heads = append(n.Heads, c.Name)
		}
		g.Channels = append(g.Channels, ch)
	}
	if err := applyDeprecations(g, cfg, nodes); err != nil {
		return nil, err
	}
	g.Nodes = sortedNodes(nodes, versions)
	rank := map[string]int{}
	for i, n := range g.Nodes {
		rank[n.Name] = i
		slices.Sort(g.Nodes[i].Channels)
		g.Nodes[i].Channels = slices.Compact(g.Nodes[i].Channels)
		slices.Sort(g.Nodes[i].Heads)
	}
	for i := range g.Channels {
		slices.SortFunc(g.Channels[i].Entries, func(a, b string) int { return rank[a] - rank[b] })
	}
	slices.SortFunc(g.Channels, func(a, b Channel) int {
		if d := rankOf(rank, b.Head) - rankOf(rank, a.Head); d != 0 {
			return d
		}
		return strings.Compare(a.Name, b.Name)
	})
	for _, e := range edges {
		slices.Sort(e.Channels)
		g.Edges = append(g.Edges, *e)
	}
	slices.SortFunc(g.Edges, func(a, b Edge) int {
		if d := rank[a.From] - rank[b.From]; d != 0 {
			return d
		}
		if d := rank[a.To] - rank[b.To]; d != 0 {
			return d
		}
		return strings.Compare(a.Kind, b.Kind)
	})
	return g, nil
}

func rankOf(rank map[string]int, name string) int {
	if r, ok := rank[name]; ok {
		return r
	}
	return -1
}

// applyDeprecations records the package's olm.deprecations entries on g, its channels and nodes.
func applyDeprecations(g *Graph, cfg *declcfg.DeclarativeConfig, nodes map[string]*Node) error {
	for _, d := range cfg.Deprecations {
		if d.Package != g.Package {
			continue
		}
		for _, e := range d.Entries {
			msg := strings.TrimSpace(e.Message)
			switch e.Reference.Schema {
			case declcfg.SchemaPackage:
				g.Deprecated = msg
			case declcfg.SchemaChannel:
				i := slices.IndexFunc(g.Channels, func(c Channel) bool { return c.Name == e.Reference.Name })
				if i < 0 {
					return fmt.Errorf("olm.deprecations of package %s names channel %s, which the package does not have", g.Package, e.Reference.Name)
				}
				g.Channels[i].Deprecated = msg
			case declcfg.SchemaBundle:
				n, ok := nodes[e.Reference.Name]
				if !ok {
					return fmt.Errorf("olm.deprecations of package %s names bundle %s, which the package does not have", g.Package, e.Reference.Name)
				}
				n.Deprecated = msg
			default:
				return fmt.Errorf("olm.deprecations of package %s: reference schema %q is not olm.package, olm.channel or olm.bundle", g.Package, e.Reference.Schema)
			}
		}
	}
	return nil
}

// sortedNodes orders the nodes by version, then those without a version, then missing ones, by name.
func sortedNodes(nodes map[string]*Node, versions map[string]*semver.Version) []Node {
	out := make([]Node, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, *n)
	}
	class := func(n Node) int {
		switch {
		case n.Missing:
			return 2
		case versions[n.Name] == nil:
			return 1
		}
		return 0
	}
	slices.SortFunc(out, func(a, b Node) int {
		if d := class(a) - class(b); d != 0 {
			return d
		}
		if class(a) == 0 {
			if d := versions[a.Name].Compare(versions[b.Name]); d != 0 {
				return d
			}
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// head is the entry of c that no other entry replaces or skips; "" when there is not exactly one.
func head(c declcfg.Channel) string {
	incoming := map[string]bool{}
	for _, e := range c.Entries {
		incoming[e.Replaces] = true
		for _, s := range e.Skips {
			incoming[s] = true
		}
	}
	var heads []string
	for _, e := range c.Entries {
		if !incoming[e.Name] && !slices.Contains(heads, e.Name) {
			heads = append(heads, e.Name)
		}
	}
	if len(heads) != 1 {
		return ""
	}
	return heads[0]
}

// bundleVersion is the version of b's olm.package property, nil when it has none or it is invalid.
func bundleVersion(b declcfg.Bundle) *semver.Version {
	for _, p := range b.Properties {
		if p.Type != property.TypePackage {
			continue
		}
		var v property.Package
		if json.Unmarshal(p.Value, &v) != nil {
			return nil
		}
		sv, err := semver.NewVersion(v.Version)
		if err != nil {
			return nil
		}
		return sv
	}
	return nil
}
