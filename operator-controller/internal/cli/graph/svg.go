package graph

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// The SVG layout is a version ladder: one row per bundle, newest at the top (bundles without a
// version and entries without a bundle below the oldest), so no two node boxes
// can overlap whatever the size of the package; left of each box its version, right of the boxes
// one lane per channel. A lane has a dot on the row of each of its entries (a ringed dot for the
// channel's head) and draws the channel's edges from the older to the newer bundle: a straight line
// between neighbouring entries of the lane, an arc bulging right (further for longer jumps) otherwise.
// Sizes are computed from a monospace font, so boxes and lanes fit their labels and the viewBox fits
// the drawing.
const (
	charW    = 7.3 // width of a 12px monospace character, rounded up
	rowH     = 26.0
	boxH     = 20.0
	margin   = 20.0
	titleH   = 78.0 // title, subtitle and legend
	headerH  = 40.0 // lane headers
	dotR     = 4.0
	headR    = 6.5
	maxBulge = 150.0
)

var palette = []string{"#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f"}

var dash = map[string]string{Replaces: "", Skips: "6 3", SkipRange: "2 3"}

// kindOrder is the order of strength in which a lane draws the edges between one pair of bundles:
// only the strongest is drawn, the others are named in its tooltip.
var kindOrder = []string{Replaces, Skips, SkipRange}

// lane is one channel's column of the drawing.
type lane struct {
	ch    Channel
	x, w  float64
	color int
	rows  []int // rows of the entries, ascending
}

// WriteSVG draws g as a standalone SVG document.
func WriteSVG(w io.Writer, g *Graph) error {
	n := len(g.Nodes)
	row := map[string]int{}
	verW, nameW := 0.0, 0.0
	versioned := slices.IndexFunc(g.Nodes, func(nd Node) bool { return nd.Version == "" })
	if versioned < 0 {
		versioned = n
	}
	for i, nd := range g.Nodes {
		row[nd.Name] = versioned - 1 - i // newest at the top
		if i >= versioned {
			row[nd.Name] = i // then bundles without a version and missing entries, by name
		}
		verW = math.Max(verW, textW(nd.Version))
		nameW = math.Max(nameW, textW(nodeLabel(nd)))
	}
	boxX := margin + verW + 10
	boxW := nameW + 16
	top := margin + titleH + headerH
	y := func(r int) float64 { return top + float64(r)*rowH + rowH/2 }

	perLane := map[string][]Edge{}
	for _, e := range g.Edges {
		for _, c := range e.Channels {
			perLane[c] = append(perLane[c], e)
		}
	}
	lanes := make([]*lane, len(g.Channels))
	x := boxX + boxW + 24
	for i, c := range g.Channels {
		l := &lane{ch: c, x: x, color: i % len(palette)}
		for _, name := range c.Entries {
			l.rows = append(l.rows, row[name])
		}
		slices.Sort(l.rows)
		reach := 0.0
		for _, e := range perLane[c.Name] {
			if !l.straight(row[e.From], row[e.To]) {
				reach = math.Max(reach, 0.75*bulge(row[e.From], row[e.To]))
			}
		}
		l.w = math.Max(math.Max(textW(c.Name), textW(laneNote(c)))+12, 24+reach+8)
		lanes[i] = l
		x += l.w
	}
	width := math.Max(x+margin, margin+textW(title(g))*1.2+margin)
	width = math.Max(width, margin+legendW+margin)
	if g.Deprecated != "" {
		width = math.Max(width, margin+textW("deprecated: "+g.Deprecated)+margin)
	}
	height := top + float64(n)*rowH + margin

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="monospace" font-size="12">`+"\n", num(width), num(height), num(width), num(height))
	fmt.Fprintf(&b, "<title>%s</title>\n", esc(title(g)))
	b.WriteString("<defs>")
	for i, c := range palette {
		fmt.Fprintf(&b, `<marker id="arrow%d" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="%s"/></marker>`, i, c)
	}
	b.WriteString("</defs>\n")
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	writeHeading(&b, g)
	for r := 0; r < n; r += 2 {
		fmt.Fprintf(&b, `<rect class="stripe" x="%s" y="%s" width="%s" height="%s" fill="#f4f6f8"/>`+"\n", num(margin/2), num(top+float64(r)*rowH), num(width-margin), num(rowH))
	}
	for _, l := range lanes {
		l.draw(&b, perLane[l.ch.Name], row, y, top)
	}
	for _, nd := range g.Nodes {
		writeNode(&b, nd, g.DefaultChannel, boxX, boxW, y(row[nd.Name]))
	}
	b.WriteString("</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

// straight is whether an edge between rows a and b of the lane has no entry of the lane between them.
func (l *lane) straight(a, b int) bool {
	lo, hi := min(a, b), max(a, b)
	for _, r := range l.rows {
		if r > lo && r < hi {
			return false
		}
	}
	return true
}

func bulge(a, b int) float64 {
	d := math.Abs(float64(a - b))
	return math.Min(maxBulge, 14+9*math.Sqrt(d))
}

// draw writes the lane: its header, its edges (the strongest per pair of bundles) and its dots.
func (l *lane) draw(b *bytes.Buffer, edges []Edge, row map[string]int, y func(int) float64, top float64) {
	color := palette[l.color]
	dotX := l.x + 12
	weight := ""
	if l.ch.Default {
		weight = ` font-weight="bold"`
	}
	fmt.Fprintf(b, `<g class="lane" data-channel="%s"><title>%s</title>`, esc(l.ch.Name), esc(laneTitle(l.ch)))
	fmt.Fprintf(b, `<text x="%s" y="%s" fill="%s"%s>%s</text>`, num(l.x+4), num(top-headerH+14), color, weight, esc(l.ch.Name))
	if note := laneNote(l.ch); note != "" {
		fill := "#555"
		if l.ch.Deprecated != "" {
			fill = "#c0392b"
		}
		fmt.Fprintf(b, `<text x="%s" y="%s" fill="%s" font-size="11">%s</text>`, num(l.x+4), num(top-headerH+29), fill, esc(note))
	}
	b.WriteString("</g>\n")

	pairs := map[[2]string][]string{}
	var order [][2]string
	for _, e := range edges {
		k := [2]string{e.From, e.To}
		if pairs[k] == nil {
			order = append(order, k)
		}
		pairs[k] = append(pairs[k], e.Kind)
	}
	for _, k := range order {
		kinds := pairs[k]
		slices.SortFunc(kinds, func(a, b string) int { return slices.Index(kindOrder, a) - slices.Index(kindOrder, b) })
		from, to := row[k[0]], row[k[1]]
		y1, y2 := y(from), y(to)
		var d string
		if l.straight(from, to) {
			off := dotR + 1
			if from < to { // an edge to an older bundle (an invalid catalog) still points at its target
				off = -off
			}
			d = fmt.Sprintf("M%s,%s L%s,%s", num(dotX), num(y1-off), num(dotX), num(y2+off))
		} else {
			bx := dotX + bulge(from, to)
			d = fmt.Sprintf("M%s,%s C%s,%s %s,%s %s,%s", num(dotX+dotR), num(y1), num(bx), num(y1), num(bx), num(y2), num(dotX+dotR+1), num(y2))
		}
		dashAttr := ""
		if dash[kinds[0]] != "" {
			dashAttr = fmt.Sprintf(` stroke-dasharray="%s"`, dash[kinds[0]])
		}
		fmt.Fprintf(b, `<path class="edge %s" data-from="%s" data-to="%s" data-channel="%s" d="%s" fill="none" stroke="%s" stroke-width="1.4"%s marker-end="url(#arrow%d)"><title>%s</title></path>`+"\n",
			kinds[0], esc(k[0]), esc(k[1]), esc(l.ch.Name), d, color, dashAttr, l.color, esc(fmt.Sprintf("%s → %s (%s, channel %s)", k[0], k[1], strings.Join(kinds, ", "), l.ch.Name)))
	}
	inLane := map[string]bool{}
	for _, name := range l.ch.Entries {
		inLane[name] = true
	}
	for _, k := range order {
		for _, name := range k {
			if !inLane[name] { // a replaces or skips of a bundle that is not in this channel
				inLane[name] = true
				fmt.Fprintf(b, `<circle class="outside" cx="%s" cy="%s" r="%s" fill="white" stroke="%s" stroke-width="1.5"><title>%s</title></circle>`+"\n",
					num(dotX), num(y(row[name])), num(dotR), color, esc(name+": not in channel "+l.ch.Name))
			}
		}
	}
	for _, name := range l.ch.Entries {
		cy := y(row[name])
		if name == l.ch.Head {
			fmt.Fprintf(b, `<circle class="head" data-channel="%s" data-name="%s" cx="%s" cy="%s" r="%s" fill="%s" stroke="black" stroke-width="2"><title>%s</title></circle>`+"\n",
				esc(l.ch.Name), esc(name), num(dotX), num(cy), num(headR), color, esc(name+": head of channel "+l.ch.Name))
			continue
		}
		fmt.Fprintf(b, `<circle class="entry" cx="%s" cy="%s" r="%s" fill="%s"/>`+"\n", num(dotX), num(cy), num(dotR), color)
	}
}

// writeNode draws a bundle's version and box on the row centred on cy; the head of the default
// channel is filled green.
func writeNode(b *bytes.Buffer, nd Node, defaultChannel string, boxX, boxW, cy float64) {
	fill, stroke, strokeW, dashAttr, textDeco := "white", "#333", "1", "", ""
	switch {
	case nd.Missing:
		stroke, dashAttr = "#999", ` stroke-dasharray="4 2"`
	case nd.Deprecated != "":
		fill, stroke, dashAttr, textDeco = "#fde2e2", "#c0392b", ` stroke-dasharray="5 2"`, ` text-decoration="line-through"`
	}
	if len(nd.Heads) > 0 {
		strokeW = "2.5"
	}
	if nd.Deprecated == "" && !nd.Missing && slices.Contains(nd.Heads, defaultChannel) {
		fill = "#e3f6e3"
	}
	fmt.Fprintf(b, `<g class="bundle"><title>%s</title>`, esc(nodeTitle(nd)))
	fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="end" fill="#555">%s</text>`, num(boxX-8), num(cy+4), esc(nd.Version))
	fmt.Fprintf(b, `<rect class="node" data-name="%s" x="%s" y="%s" width="%s" height="%s" rx="4" fill="%s" stroke="%s" stroke-width="%s"%s/>`,
		esc(nd.Name), num(boxX), num(cy-boxH/2), num(boxW), num(boxH), fill, stroke, strokeW, dashAttr)
	fmt.Fprintf(b, `<text x="%s" y="%s"%s>%s</text>`, num(boxX+8), num(cy+4), textDeco, esc(nodeLabel(nd)))
	b.WriteString("</g>\n")
}
