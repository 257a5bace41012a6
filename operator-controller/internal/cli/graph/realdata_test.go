package graph

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/olmv1/olmv1/platform/sharedtestdata"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// testdataDir is $OLMV1_TESTDATA, default ../shared/testdata beside the repository (real
// third-party catalogs).
func testdataDir() string {
	d, _ := sharedtestdata.Root()
	return d
}

// largestPackage returns the catalog directory and package with the most bundles among the
// catalogs of root/catalogs (ties: first catalog, then package, by name).
func largestPackage(t *testing.T, root string) (string, string, int) {
	t.Helper()
	cats, _ := filepath.Glob(filepath.Join(root, "catalogs", "*"))
	sort.Strings(cats)
	bestCat, bestPkg, best := "", "", 0
	for _, cat := range cats {
		var mu sync.Mutex
		counts := map[string]int{}
		err := declcfg.WalkMetasFS(context.Background(), os.DirFS(cat), func(_ string, m *declcfg.Meta, err error) error {
			if err != nil {
				return err
			}
			if m.Schema == declcfg.SchemaBundle {
				mu.Lock()
				counts[m.Package]++
				mu.Unlock()
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", cat, err)
		}
		pkgs := make([]string, 0, len(counts))
		for p := range counts {
			pkgs = append(pkgs, p)
		}
		sort.Strings(pkgs)
		for _, p := range pkgs {
			if counts[p] > best {
				bestCat, bestPkg, best = cat, p, counts[p]
			}
		}
	}
	return bestCat, bestPkg, best
}

// TestSVGOfTheLargestRealPackage draws the package with the most bundles of the real catalogs of
// $OLMV1_TESTDATA/catalogs: the SVG is well-formed, has one box per bundle, no two boxes overlap,
// and every replaces edge of every channel is drawn.
func TestSVGOfTheLargestRealPackage(t *testing.T) {
	root := testdataDir()
	if _, err := os.Stat(filepath.Join(root, "catalogs")); err != nil {
		t.Skipf("no real catalogs at %s/catalogs (set OLMV1_TESTDATA to the shared testdata directory): %v", root, err)
	}
	cat, pkg, n := largestPackage(t, root)
	if pkg == "" {
		t.Skipf("the catalogs of %s/catalogs hold no bundles", root)
	}
	var (
		mu    sync.Mutex
		metas []*declcfg.Meta
	)
	err := declcfg.WalkMetasFS(context.Background(), os.DirFS(cat), func(_ string, m *declcfg.Meta, err error) error {
		if err == nil && (m.Package == pkg || (m.Schema == declcfg.SchemaPackage && m.Name == pkg)) {
			mu.Lock()
			metas = append(metas, m)
			mu.Unlock()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := declcfg.LoadSlice(metas)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	g, err := Build(cfg, pkg)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteSVG(&b, g); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	doc := parseSVG(t, b.Bytes())

	missing := 0
	for _, nd := range g.Nodes {
		if nd.Missing {
			missing++
		}
	}
	if len(g.Nodes)-missing != n || len(cfg.Bundles) != n {
		t.Errorf("graph has %d bundle nodes (+%d missing), the catalog %d bundles", len(g.Nodes)-missing, missing, n)
	}
	if len(doc.Nodes) != len(g.Nodes) {
		t.Errorf("SVG has %d node boxes, the graph %d nodes", len(doc.Nodes), len(g.Nodes))
	}
	checkBoxes(t, doc)
	drawn := map[svgEdge]bool{}
	for _, e := range doc.Edges {
		drawn[svgEdge{e.from, e.to, e.channel, ""}] = true
	}
	replaces, kinds := 0, map[string]int{}
	for _, e := range g.Edges {
		kinds[e.Kind]++
	}
	for _, c := range cfg.Channels {
		for _, e := range c.Entries {
			if e.Replaces == "" {
				continue
			}
			replaces++
			if !drawn[svgEdge{e.Replaces, e.Name, c.Name, ""}] {
				t.Errorf("channel %s: edge %s replaces %s is not drawn", c.Name, e.Name, e.Replaces)
			}
		}
	}
	t.Logf("%s: package %s, %d bundles (+%d missing entries), %d channels, %d replaces entries; graph edges %d replaces, %d skips, %d skipRange (expanded); "+
		"SVG %d bytes, %vx%v px, %d boxes, %d drawn edges, %d heads; built and drawn in %v",
		filepath.Base(cat), pkg, n, missing, len(cfg.Channels), replaces, kinds[Replaces], kinds[Skips], kinds[SkipRange],
		b.Len(), doc.Width, doc.Height, len(doc.Nodes), len(doc.Edges), len(doc.Heads), elapsed.Round(time.Millisecond))
	if out := os.Getenv("GRAPH_SVG_OUT"); out != "" {
		_ = os.WriteFile(out, b.Bytes(), 0o644)
	}
}
