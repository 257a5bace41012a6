package graph

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func edgeSet(g *Graph) []string {
	var out []string
	for _, e := range g.Edges {
		out = append(out, fmt.Sprintf("%s %s %s %s", strings.TrimPrefix(e.From, "op."), e.Kind, strings.TrimPrefix(e.To, "op."), strings.Join(e.Channels, ",")))
	}
	return out
}

func TestBuildEdgesHeadsDefaultAndDeprecations(t *testing.T) {
	g, err := Build(fixture(), "op")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"v0.1.0 replaces v0.2.0 alpha,stable",
		"v0.1.0 skipRange v1.0.0 stable",
		"v0.1.1 skipRange v1.0.0 stable",
		"v0.1.1 skips v1.0.0 stable",
		"v0.2.0 replaces v0.3.0 alpha",
		"v0.2.0 replaces v1.0.0 stable",
		"v0.2.0 skipRange v1.0.0 stable",
		"v0.2.0 skipRange v1.1.0 alpha", // 1.0.0 is not in alpha: the range covers only alpha's entries
		"v0.3.0 replaces v1.1.0 alpha",
		"v0.3.0 skipRange v1.1.0 alpha",
	}
	if got := edgeSet(g); !slices.Equal(got, want) {
		t.Fatalf("edges:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var names []string
	for _, n := range g.Nodes {
		names = append(names, n.Version)
	}
	if !slices.Equal(names, []string{"0.1.0", "0.1.1", "0.2.0", "0.3.0", "1.0.0", "1.1.0"}) {
		t.Fatalf("nodes (other packages left out, by version): %v", names)
	}
	if g.DefaultChannel != "stable" || len(g.Channels) != 2 || g.Channels[0].Name != "alpha" || g.Channels[0].Head != "op.v1.1.0" ||
		g.Channels[1].Head != "op.v1.0.0" || !g.Channels[1].Default || g.Channels[0].Default {
		t.Fatalf("channels: %+v", g.Channels)
	}
	if g.Deprecated == "" || g.Channels[0].Deprecated != "alpha is frozen; use stable" || g.Nodes[1].Deprecated != "0.1.1 loses data; use 0.2.0" || g.Nodes[0].Deprecated != "" {
		t.Fatalf("deprecations: package %q, channels %+v, nodes %+v", g.Deprecated, g.Channels, g.Nodes[:2])
	}
	if n := g.Nodes[4]; !slices.Equal(n.Heads, []string{"stable"}) || !slices.Equal(n.Channels, []string{"stable"}) {
		t.Fatalf("1.0.0: %+v", n)
	}
}

func TestBuildMarksMissingEntriesAndRefusesUnknownDeprecations(t *testing.T) {
	cfg := fixture()
	cfg.Channels[1].Entries[0].Replaces = "op.v0.0.9" // not in the catalog
	g, err := Build(cfg, "op")
	if err != nil {
		t.Fatal(err)
	}
	if last := g.Nodes[len(g.Nodes)-1]; !last.Missing || last.Name != "op.v0.0.9" {
		t.Fatalf("last node %+v", last)
	}
	cfg.Deprecations[0].Entries[1].Reference.Name = "beta"
	if _, err := Build(cfg, "op"); err == nil || !strings.Contains(err.Error(), "channel beta") {
		t.Fatalf("err = %v", err)
	}
	if _, err := Build(cfg, "nope"); err == nil || !strings.Contains(err.Error(), "no package nope") {
		t.Fatalf("err = %v", err)
	}
}

// TestOutputsAreDeterministic: the same catalog in another order gives the same bytes.
func TestOutputsAreDeterministic(t *testing.T) {
	a := fixture()
	b := clone(a)
	slices.Reverse(b.Bundles)
	slices.Reverse(b.Channels)
	for i := range b.Channels {
		slices.Reverse(b.Channels[i].Entries)
	}
	ga, _ := Build(a, "op")
	gb, _ := Build(b, "op")
	for name, write := range map[string]func(io.Writer, *Graph) error{"svg": WriteSVG, "mermaid": WriteMermaid, "dot": WriteDOT} {
		var x, y bytes.Buffer
		if err := write(&x, ga); err != nil {
			t.Fatal(err)
		}
		_ = write(&y, gb)
		if !bytes.Equal(x.Bytes(), y.Bytes()) {
			t.Errorf("%s differs with the input reordered:\n%s\n---\n%s", name, x.String(), y.String())
		}
	}
}

func TestMermaid(t *testing.T) {
	g, _ := Build(fixture(), "op")
	var b bytes.Buffer
	_ = WriteMermaid(&b, g)
	out := b.String()
	for _, s := range []string{
		"graph LR\n",
		`n0["op.v0.1.0<br/>0.1.0"]`,
		`n4["op.v1.0.0<br/>1.0.0<br/>head of stable (default)"]`,
		`n1["op.v0.1.1<br/>0.1.1<br/>deprecated: 0.1.1 loses data; use 0.2.0"]`,
		`n0 -->|"alpha, stable"| n2`,
		`n1 -.->|"skips: stable"| n4`,
		`n3 -.->|"skipRange: alpha"| n5`,
		"class n5 head\n", "class n4 defaultHead\n", "class n1 deprecated\n",
		"%% package deprecated: op is \"end of life\" <soon>",
		"%% channel alpha: 4 entries, head op.v1.1.0; deprecated: alpha is frozen; use stable",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("mermaid lacks %q:\n%s", s, out)
		}
	}
	if strings.Count(out, "-->")+strings.Count(out, "-.->") != len(g.Edges) {
		t.Errorf("mermaid has not one line per edge:\n%s", out)
	}
}

func TestDOT(t *testing.T) {
	g, _ := Build(fixture(), "op")
	var b bytes.Buffer
	_ = WriteDOT(&b, g)
	out := b.String()
	for _, s := range []string{
		"digraph \"op\" {\n",
		`"op.v0.1.0" -> "op.v0.2.0" [label="alpha, stable", style=solid];`,
		`"op.v0.1.1" -> "op.v1.0.0" [label="skips: stable", style=dashed];`,
		`"op.v0.3.0" -> "op.v1.1.0" [label="skipRange: alpha", style=dotted];`,
		`"op.v1.0.0" [label="op.v1.0.0\n1.0.0\nhead of stable (default)", penwidth=3, fillcolor="#e3f6e3", style="rounded,filled"];`,
		`package deprecated: op is \"end of life\" <soon>`,
	} {
		if !strings.Contains(out, s) {
			t.Errorf("dot lacks %q:\n%s", s, out)
		}
	}
	// Every statement line ends with ';' and quotes are balanced (escaped quotes aside).
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if lines[len(lines)-1] != "}" {
		t.Fatalf("dot does not end with }")
	}
	for _, l := range lines[1 : len(lines)-1] {
		if !strings.HasSuffix(l, ";") || strings.Count(strings.ReplaceAll(l, `\"`, ""), `"`)%2 != 0 {
			t.Errorf("dot line %q", l)
		}
	}
}

// svgDoc is what the tests read back from an SVG.
type svgDoc struct {
	Width, Height float64
	Nodes         []box
	Edges         []svgEdge
	Heads         []string // channel/name
}

type box struct {
	name       string
	x, y, w, h float64
}

type svgEdge struct{ from, to, channel, kind string }

// parseSVG parses an SVG with encoding/xml (failing on malformed XML) and collects the node boxes,
// edges and head marks.
func parseSVG(t *testing.T, data []byte) svgDoc {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	var doc svgDoc
	depth := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			depth++
			attr := map[string]string{}
			for _, a := range el.Attr {
				attr[a.Name.Local] = a.Value
			}
			f := func(k string) float64 { v, _ := strconv.ParseFloat(attr[k], 64); return v }
			switch {
			case el.Name.Local == "svg" && depth == 1:
				doc.Width, doc.Height = f("width"), f("height")
				if attr["viewBox"] != fmt.Sprintf("0 0 %s %s", attr["width"], attr["height"]) {
					t.Errorf("viewBox %q for %sx%s", attr["viewBox"], attr["width"], attr["height"])
				}
			case el.Name.Local == "rect" && attr["class"] == "node":
				doc.Nodes = append(doc.Nodes, box{attr["data-name"], f("x"), f("y"), f("width"), f("height")})
			case el.Name.Local == "path" && strings.HasPrefix(attr["class"], "edge "):
				doc.Edges = append(doc.Edges, svgEdge{attr["data-from"], attr["data-to"], attr["data-channel"], strings.TrimPrefix(attr["class"], "edge ")})
			case el.Name.Local == "circle" && attr["class"] == "head":
				doc.Heads = append(doc.Heads, attr["data-channel"]+"/"+attr["data-name"])
			}
		case xml.EndElement:
			depth--
		}
	}
	return doc
}

// checkBoxes fails when two node boxes overlap or one leaves the drawing.
func checkBoxes(t *testing.T, doc svgDoc) {
	t.Helper()
	for i, a := range doc.Nodes {
		if a.x < 0 || a.y < 0 || a.x+a.w > doc.Width || a.y+a.h > doc.Height {
			t.Errorf("node %s (%v) outside the %vx%v drawing", a.name, a, doc.Width, doc.Height)
		}
		for _, b := range doc.Nodes[i+1:] {
			if a.x < b.x+b.w && b.x < a.x+a.w && a.y < b.y+b.h && b.y < a.y+a.h {
				t.Errorf("nodes %s and %s overlap", a.name, b.name)
			}
		}
	}
}

func TestSVG(t *testing.T) {
	g, _ := Build(fixture(), "op")
	var b bytes.Buffer
	if err := WriteSVG(&b, g); err != nil {
		t.Fatal(err)
	}
	doc := parseSVG(t, b.Bytes())
	if len(doc.Nodes) != 6 {
		t.Fatalf("%d node boxes, want 6", len(doc.Nodes))
	}
	checkBoxes(t, doc)
	edges := map[svgEdge]bool{}
	for _, e := range doc.Edges {
		edges[e] = true
	}
	// One drawn edge per channel and pair; replaces wins over skipRange between the same pair.
	for _, e := range []svgEdge{
		{"op.v0.1.0", "op.v0.2.0", "stable", Replaces}, {"op.v0.1.0", "op.v0.2.0", "alpha", Replaces},
		{"op.v0.2.0", "op.v1.0.0", "stable", Replaces}, {"op.v0.1.1", "op.v1.0.0", "stable", Skips},
		{"op.v0.1.0", "op.v1.0.0", "stable", SkipRange}, {"op.v0.3.0", "op.v1.1.0", "alpha", Replaces},
		{"op.v0.2.0", "op.v1.1.0", "alpha", SkipRange},
	} {
		if !edges[e] {
			t.Errorf("SVG lacks edge %+v; has %+v", e, doc.Edges)
		}
	}
	if len(doc.Edges) != 8 {
		t.Errorf("%d edges drawn, want 8: %+v", len(doc.Edges), doc.Edges)
	}
	if !slices.Equal(doc.Heads, []string{"alpha/op.v1.1.0", "stable/op.v1.0.0"}) {
		t.Errorf("heads %v", doc.Heads)
	}
	out := b.String()
	for _, s := range []string{">stable</text>", ">default</text>", ">deprecated</text>", "op.v0.1.1 (deprecated)", "deprecated: op is &#34;end of life&#34; &lt;soon&gt;"} {
		if !strings.Contains(out, s) {
			t.Errorf("SVG lacks %q", s)
		}
	}
}

// TestWriteFixtureSVG writes the fixture's drawing to $GRAPH_FIXTURE_SVG, for a look.
func TestWriteFixtureSVG(t *testing.T) {
	out := os.Getenv("GRAPH_FIXTURE_SVG")
	if out == "" {
		t.Skip("set GRAPH_FIXTURE_SVG=FILE to write the fixture's SVG")
	}
	g, _ := Build(fixture(), "op")
	var b bytes.Buffer
	_ = WriteSVG(&b, g)
	if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
