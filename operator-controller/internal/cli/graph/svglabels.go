package graph

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"
)

// The heading, legend and labels of the SVG drawing, and the monospace text measure it is sized by.

const legendW = 1010.0

// writeHeading draws the title, the package's default channel and deprecation, and the legend.
func writeHeading(b *bytes.Buffer, g *Graph) {
	fmt.Fprintf(b, `<text x="%s" y="%s" font-size="16" font-weight="bold">%s</text>`+"\n", num(margin), num(margin+12), esc(title(g)))
	sub := fmt.Sprintf("default channel %s · %d bundles · %d channels · %d edges", g.DefaultChannel, len(g.Nodes), len(g.Channels), len(g.Edges))
	fmt.Fprintf(b, `<text x="%s" y="%s" fill="#555">%s</text>`+"\n", num(margin), num(margin+30), esc(sub))
	ly := margin + 50
	if g.Deprecated != "" {
		fmt.Fprintf(b, `<text class="deprecated" x="%s" y="%s" fill="#c0392b">%s</text>`+"\n", num(margin), num(ly), esc("deprecated: "+g.Deprecated))
		ly += 18
	}
	x := margin
	for _, k := range kindOrder {
		d := ""
		if dash[k] != "" {
			d = fmt.Sprintf(` stroke-dasharray="%s"`, dash[k])
		}
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333" stroke-width="1.4"%s/><text x="%s" y="%s">%s</text>`+"\n", num(x), num(ly-4), num(x+30), num(ly-4), d, num(x+36), num(ly), k)
		x += 36 + textW(k) + 18
	}
	fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="%s" fill="#333"/><text x="%s" y="%s">entry</text>`+"\n", num(x+4), num(ly-4), num(dotR), num(x+14), num(ly))
	x += 14 + textW("entry") + 18
	fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="%s" fill="#333" stroke="black" stroke-width="2"/><text x="%s" y="%s">channel head (bold box)</text>`+"\n", num(x+6), num(ly-4), num(headR), num(x+16), num(ly))
	x += 16 + textW("channel head (bold box)") + 18
	fmt.Fprintf(b, `<rect x="%s" y="%s" width="24" height="12" fill="#e3f6e3" stroke="#333" stroke-width="2.5"/><text x="%s" y="%s">head of the default channel</text>`+"\n", num(x), num(ly-10), num(x+30), num(ly))
	x += 30 + textW("head of the default channel") + 18
	fmt.Fprintf(b, `<rect x="%s" y="%s" width="24" height="12" fill="#fde2e2" stroke="#c0392b" stroke-dasharray="5 2"/><text x="%s" y="%s">deprecated</text>`+"\n", num(x), num(ly-10), num(x+30), num(ly))
}

func title(g *Graph) string { return "package " + g.Package + ": upgrade graph" }

func nodeLabel(nd Node) string {
	switch {
	case nd.Missing:
		return nd.Name + " (not in catalog)"
	case nd.Deprecated != "":
		return nd.Name + " (deprecated)"
	}
	return nd.Name
}

func nodeTitle(nd Node) string {
	s := nd.Name
	if nd.Version != "" {
		s += " " + nd.Version
	}
	s += "\nchannels: " + strings.Join(nd.Channels, ", ")
	if len(nd.Heads) > 0 {
		s += "\nhead of: " + strings.Join(nd.Heads, ", ")
	}
	if nd.Deprecated != "" {
		s += "\ndeprecated: " + nd.Deprecated
	}
	return s
}

// laneNote is the second line of a lane's header.
func laneNote(c Channel) string {
	var parts []string
	if c.Default {
		parts = append(parts, "default")
	}
	if c.Deprecated != "" {
		parts = append(parts, "deprecated")
	}
	return strings.Join(parts, ", ")
}

func laneTitle(c Channel) string {
	s := fmt.Sprintf("channel %s: %s, head %s", c.Name, entryCount(len(c.Entries)), c.Head)
	if c.Default {
		s += " (the default channel)"
	}
	if c.Deprecated != "" {
		s += "\ndeprecated: " + c.Deprecated
	}
	return s
}

func textW(s string) float64 { return float64(len([]rune(s))) * charW }

func num(f float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", f), "0"), ".")
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
