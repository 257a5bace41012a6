package graph

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
)

// WriteMermaid writes g as a Mermaid flowchart (graph LR): one node per bundle (n0 is the oldest),
// one edge per kind and pair of bundles labelled with its channels (replaces solid, skips and
// skipRange dotted); channel heads, the default channel's head, deprecated and missing bundles
// carry a class. The package, its channels and their deprecations are listed in %% comments.
func WriteMermaid(w io.Writer, g *Graph) error {
	var b bytes.Buffer
	b.WriteString("graph LR\n")
	for _, line := range summary(g) {
		fmt.Fprintf(&b, "  %%%% %s\n", oneLine(line))
	}
	id := ids(g)
	classes := map[string][]string{}
	for _, n := range g.Nodes {
		fmt.Fprintf(&b, "  %s[\"%s\"]\n", id[n.Name], mermaidText(strings.Join(nodeLines(g, n), "<br/>")))
		for _, c := range nodeClasses(g, n) {
			classes[c] = append(classes[c], id[n.Name])
		}
	}
	for _, e := range g.Edges {
		arrow := "-.->"
		if e.Kind == Replaces {
			arrow = "-->"
		}
		fmt.Fprintf(&b, "  %s %s|\"%s\"| %s\n", id[e.From], arrow, mermaidText(edgeLabel(e)), id[e.To])
	}
	b.WriteString("  classDef head stroke-width:3px\n")
	b.WriteString("  classDef defaultHead fill:#e3f6e3,stroke-width:3px\n")
	b.WriteString("  classDef deprecated fill:#fde2e2,stroke:#c0392b,stroke-dasharray:5 2\n")
	b.WriteString("  classDef missing stroke-dasharray:4 2,color:#999\n")
	for _, c := range []string{"head", "defaultHead", "deprecated", "missing"} {
		if len(classes[c]) > 0 {
			fmt.Fprintf(&b, "  class %s %s\n", strings.Join(classes[c], ","), c)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// WriteDOT writes g as a Graphviz digraph (rankdir=LR): nodes named by bundle, edges labelled with
// their channels (replaces solid, skips dashed, skipRange dotted), heads bold, the default channel's
// head filled green, deprecated bundles filled red; the graph's label summarises the package.
func WriteDOT(w io.Writer, g *Graph) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "digraph %s {\n", dotQuote(g.Package))
	b.WriteString("  rankdir=LR;\n  labelloc=t;\n")
	fmt.Fprintf(&b, "  label=%s;\n", dotQuote(strings.Join(summary(g), "\n")))
	b.WriteString("  node [shape=box, style=rounded, fontname=monospace];\n  edge [fontname=monospace, fontsize=10];\n")
	for _, n := range g.Nodes {
		attrs := []string{"label=" + dotQuote(strings.Join(nodeLines(g, n), "\n"))}
		style := []string{"rounded"}
		cls := nodeClasses(g, n)
		if slices.Contains(cls, "head") || slices.Contains(cls, "defaultHead") {
			attrs = append(attrs, "penwidth=3")
		}
		switch {
		case slices.Contains(cls, "deprecated"):
			style = append(style, "filled", "dashed")
			attrs = append(attrs, `fillcolor="#fde2e2"`, `color="#c0392b"`)
		case slices.Contains(cls, "defaultHead"):
			style = append(style, "filled")
			attrs = append(attrs, `fillcolor="#e3f6e3"`)
		case slices.Contains(cls, "missing"):
			style = append(style, "dashed")
			attrs = append(attrs, `fontcolor="#999999"`)
		}
		attrs = append(attrs, "style="+dotQuote(strings.Join(style, ",")))
		fmt.Fprintf(&b, "  %s [%s];\n", dotQuote(n.Name), strings.Join(attrs, ", "))
	}
	for _, e := range g.Edges {
		style := map[string]string{Replaces: "solid", Skips: "dashed", SkipRange: "dotted"}[e.Kind]
		fmt.Fprintf(&b, "  %s -> %s [label=%s, style=%s];\n", dotQuote(e.From), dotQuote(e.To), dotQuote(edgeLabel(e)), style)
	}
	b.WriteString("}\n")
	_, err := w.Write(b.Bytes())
	return err
}

// summary describes the package and its channels, one line each.
func summary(g *Graph) []string {
	lines := []string{fmt.Sprintf("package %s, default channel %s", g.Package, g.DefaultChannel)}
	if g.Deprecated != "" {
		lines = append(lines, oneLine("package deprecated: "+g.Deprecated))
	}
	for _, c := range g.Channels {
		s := fmt.Sprintf("channel %s: %s, head %s", c.Name, entryCount(len(c.Entries)), c.Head)
		if c.Default {
			s += " (default)"
		}
		if c.Deprecated != "" {
			s += "; deprecated: " + c.Deprecated
		}
		lines = append(lines, oneLine(s))
	}
	return lines
}

// nodeLines are the lines of a node's label: name, version, heads, deprecation.
func nodeLines(g *Graph, n Node) []string {
	lines := []string{n.Name}
	if n.Version != "" {
		lines = append(lines, n.Version)
	}
	if n.Missing {
		lines = append(lines, "not in catalog")
	}
	if len(n.Heads) > 0 {
		heads := slices.Clone(n.Heads)
		for i, h := range heads {
			if h == g.DefaultChannel {
				heads[i] += " (default)"
			}
		}
		lines = append(lines, "head of "+strings.Join(heads, ", "))
	}
	if n.Deprecated != "" {
		lines = append(lines, "deprecated: "+oneLine(n.Deprecated))
	}
	return lines
}

// nodeClasses are the marks of a node: head or defaultHead, deprecated, missing.
func nodeClasses(g *Graph, n Node) []string {
	var out []string
	switch {
	case slices.Contains(n.Heads, g.DefaultChannel):
		out = append(out, "defaultHead")
	case len(n.Heads) > 0:
		out = append(out, "head")
	}
	if n.Deprecated != "" {
		out = append(out, "deprecated")
	}
	if n.Missing {
		out = append(out, "missing")
	}
	return out
}

func edgeLabel(e Edge) string {
	if e.Kind == Replaces {
		return strings.Join(e.Channels, ", ")
	}
	return e.Kind + ": " + strings.Join(e.Channels, ", ")
}

// ids names the nodes n0, n1, … in node order (Mermaid ids cannot hold every bundle name).
func ids(g *Graph) map[string]string {
	id := make(map[string]string, len(g.Nodes))
	for i, n := range g.Nodes {
		id[n.Name] = fmt.Sprintf("n%d", i)
	}
	return id
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// mermaidText escapes s for a quoted Mermaid label: quotes and angle brackets become entities
// (the <br/> line breaks are added after).
func mermaidText(s string) string {
	s = strings.NewReplacer(`"`, "#quot;", "<br/>", "\x00").Replace(s)
	s = strings.NewReplacer("<", "#lt;", ">", "#gt;").Replace(s)
	return strings.ReplaceAll(s, "\x00", "<br/>")
}

func dotQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", "").Replace(s) + `"`
}

func entryCount(n int) string {
	if n == 1 {
		return "1 entry"
	}
	return fmt.Sprintf("%d entries", n)
}
