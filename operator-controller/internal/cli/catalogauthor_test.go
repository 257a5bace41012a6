package cli

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/olmv1/olmv1/operator-controller/internal/cli/author"
)

// authorCatalog writes a catalog of two packages to a new directory: op (alpha 0.1.0 → 0.2.0 →
// 0.3.0 skipping 0.2.1, stable 0.1.0 → 0.2.0) in op/catalog.yaml and other in other/catalog.yaml.
func authorCatalog(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bundle := func(pkg, v string) declcfg.Bundle {
		return declcfg.Bundle{Schema: declcfg.SchemaBundle, Package: pkg, Name: pkg + ".v" + v, Image: "registry.test/" + pkg + ":" + v,
			Properties: []property.Property{property.MustBuildPackage(pkg, v)}}
	}
	op := &declcfg.DeclarativeConfig{
		Packages: []declcfg.Package{{Schema: declcfg.SchemaPackage, Name: "op", DefaultChannel: "stable"}},
		Channels: []declcfg.Channel{
			{Schema: declcfg.SchemaChannel, Package: "op", Name: "alpha", Entries: []declcfg.ChannelEntry{
				{Name: "op.v0.1.0"}, {Name: "op.v0.2.0", Replaces: "op.v0.1.0"}, {Name: "op.v0.2.1"},
				{Name: "op.v0.3.0", Replaces: "op.v0.2.0", Skips: []string{"op.v0.2.1"}},
			}},
			{Schema: declcfg.SchemaChannel, Package: "op", Name: "stable", Entries: []declcfg.ChannelEntry{
				{Name: "op.v0.1.0"}, {Name: "op.v0.2.0", Replaces: "op.v0.1.0"},
			}},
		},
		Bundles: []declcfg.Bundle{bundle("op", "0.1.0"), bundle("op", "0.2.0"), bundle("op", "0.2.1"), bundle("op", "0.3.0")},
	}
	other := &declcfg.DeclarativeConfig{
		Packages: []declcfg.Package{{Schema: declcfg.SchemaPackage, Name: "other", DefaultChannel: "stable"}},
		Channels: []declcfg.Channel{{Schema: declcfg.SchemaChannel, Package: "other", Name: "stable", Entries: []declcfg.ChannelEntry{{Name: "other.v1.0.0"}}}},
		Bundles:  []declcfg.Bundle{bundle("other", "1.0.0")},
	}
	for file, cfg := range map[string]*declcfg.DeclarativeConfig{"op/catalog.yaml": op, "other/catalog.yaml": other} {
		if err := author.WriteConfig(dir, file, cfg); err != nil {
			t.Fatal(err)
		}
	}
	mustRun(t, "catalog", "validate", dir)
	return dir
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// checkFormatted fails unless dir/file is exactly what add-bundle would write for its content.
func checkFormatted(t *testing.T, dir, file string) {
	t.Helper()
	cfg, err := declcfg.LoadFile(os.DirFS(dir), file)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	_ = declcfg.WriteYAML(*cfg, &want)
	if got := readFile(t, filepath.Join(dir, file)); !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("%s is not formatted as add-bundle writes it:\n%s", file, got)
	}
}

func TestCatalogPromoteCommand(t *testing.T) {
	dir := authorCatalog(t)
	opFile, otherFile := filepath.Join(dir, "op", "catalog.yaml"), filepath.Join(dir, "other", "catalog.yaml")
	other := readFile(t, otherFile)

	out := mustRun(t, "catalog", "promote", dir, "op", "0.3.0", "--to", "stable")
	if !strings.Contains(out, "promoted op.v0.3.0 (version 0.3.0) of package op in "+opFile) || !strings.Contains(out, "channel stable: replaces op.v0.2.0") {
		t.Fatalf("promote:\n%s", out)
	}
	checkFormatted(t, dir, "op/catalog.yaml")
	if !bytes.Equal(readFile(t, otherFile), other) {
		t.Fatalf("promote changed another package's file")
	}
	out = mustRun(t, "catalog", "promote", dir, "op", "0.3.0", "--to", "fast", "--skip-range", "<0.3.0")
	if !strings.Contains(out, "channel fast (new channel): first entry, skipRange <0.3.0") {
		t.Fatalf("promote to a new channel:\n%s", out)
	}

	before := readFile(t, opFile)
	out = mustRun(t, "catalog", "promote", dir, "op", "0.2.0", "--to", "stable")
	if !strings.Contains(out, "op.v0.2.0 (version 0.2.0) is already in channel stable of package op; nothing changed") {
		t.Fatalf("promote again:\n%s", out)
	}
	_, _, err := run(t, "catalog", "promote", dir, "op", "0.2.1", "--to", "stable")
	if err == nil || !strings.Contains(err.Error(), "cannot promote op.v0.2.1 (version 0.2.1) to channel stable of package op: the channel's head op.v0.3.0 (version 0.3.0) is not older") {
		t.Fatalf("promoting an older bundle: err = %v", err)
	}
	if !bytes.Equal(readFile(t, opFile), before) {
		t.Fatalf("a no-op or refused promote changed the catalog")
	}
	if _, _, err := run(t, "catalog", "promote", dir, "op", "0.3.0"); err == nil || !strings.Contains(err.Error(), `"to" not set`) {
		t.Fatalf("promote without --to: err = %v", err)
	}
}

func TestCatalogDeprecateCommand(t *testing.T) {
	dir := authorCatalog(t)
	opFile, otherFile := filepath.Join(dir, "op", "catalog.yaml"), filepath.Join(dir, "other", "catalog.yaml")
	other := readFile(t, otherFile)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bundle", "0.2.1", "--message", "0.2.1 loses data; use 0.3.0"}, "deprecated bundle op.v0.2.1 of package op in " + opFile},
		{[]string{"--channel", "alpha", "--message", "alpha is frozen"}, "deprecated channel alpha of package op"},
		{[]string{"--message", "op is end of life"}, "deprecated package op in"},
		{[]string{"--channel", "alpha", "--message", "alpha is frozen; use stable"}, "updated the deprecation message of channel alpha of package op"},
		{[]string{"--message", "op is end of life"}, "package op is already deprecated with this message; nothing changed"},
	} {
		out := mustRun(t, append([]string{"catalog", "deprecate", dir, "op"}, tc.args...)...)
		if !strings.Contains(out, tc.want) {
			t.Errorf("deprecate %v:\n%s", tc.args, out)
		}
	}
	checkFormatted(t, dir, "op/catalog.yaml")
	if !bytes.Equal(readFile(t, otherFile), other) {
		t.Fatalf("deprecate changed another package's file")
	}
	if s := string(readFile(t, opFile)); !strings.Contains(s, "schema: olm.deprecations") || strings.Count(s, "- message:") != 3 {
		t.Fatalf("op/catalog.yaml:\n%s", s)
	}
	before := readFile(t, opFile)
	for args, want := range map[string]string{
		"--channel beta --message m":                 "package op has no channel beta (its channels: alpha, stable)",
		"--bundle 9.0.0 --message m":                 "package op has no bundle 9.0.0",
		"--channel alpha --bundle 0.1.0 --message m": "none of the others can be",
		"--channel alpha":                            `"message" not set`,
	} {
		_, _, err := run(t, append([]string{"catalog", "deprecate", dir, "op"}, strings.Fields(args)...)...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("deprecate %s: err = %v, want %q", args, err, want)
		}
	}
	if !bytes.Equal(readFile(t, opFile), before) {
		t.Fatalf("a refused deprecate changed the catalog")
	}
}

func TestCatalogGraphCommand(t *testing.T) {
	dir := authorCatalog(t)
	mustRun(t, "catalog", "deprecate", dir, "op", "--bundle", "0.2.1", "--message", "0.2.1 loses data")
	mustRun(t, "catalog", "promote", dir, "op", "0.3.0", "--to", "stable", "--skip-range", ">=0.2.0 <0.3.0")

	mermaid := mustRun(t, "catalog", "graph", dir, "op")
	for _, s := range []string{"graph LR\n", `n0 -->|"alpha, stable"| n1`, `n2 -.->|"skips: alpha"| n3`, `n1 -.->|"skipRange: stable"| n3`, "class n3 defaultHead", "class n2 deprecated"} {
		if !strings.Contains(mermaid, s) {
			t.Errorf("graph (mermaid by default) lacks %q:\n%s", s, mermaid)
		}
	}
	if got := mustRun(t, "catalog", "graph", dir, "op", "-o", "mermaid"); got != mermaid {
		t.Errorf("-o mermaid differs from the default")
	}
	dot := mustRun(t, "catalog", "graph", dir, "op", "-o", "dot")
	if !strings.HasPrefix(dot, `digraph "op" {`) || !strings.Contains(dot, `"op.v0.2.0" -> "op.v0.3.0" [label="alpha, stable", style=solid];`) {
		t.Errorf("dot:\n%s", dot)
	}
	svg := mustRun(t, "catalog", "graph", dir, "op", "-o", "svg")
	dec := xml.NewDecoder(strings.NewReader(svg))
	nodes := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("svg is not well-formed: %v", err)
		}
		if el, ok := tok.(xml.StartElement); ok && el.Name.Local == "rect" {
			for _, a := range el.Attr {
				if a.Name.Local == "class" && a.Value == "node" {
					nodes++
				}
			}
		}
	}
	if nodes != 4 || !strings.Contains(svg, "op.v0.2.1 (deprecated)") {
		t.Errorf("svg: %d nodes\n%s", nodes, svg)
	}
	if _, _, err := run(t, "catalog", "graph", dir, "op", "-o", "png"); err == nil || !strings.Contains(err.Error(), "use svg, mermaid, dot, json or yaml") {
		t.Errorf("-o png: err = %v", err)
	}
	if _, _, err := run(t, "catalog", "graph", dir, "nope"); err == nil || !strings.Contains(err.Error(), "has no package nope") {
		t.Errorf("unknown package: err = %v", err)
	}

	// From a catalog image: the same graph.
	reg := startRegistry(t)
	ref := reg + "/catalogs/op:latest"
	mustRun(t, "catalog", "push", dir, ref, "--insecure")
	if got := mustRun(t, "catalog", "graph", ref, "op", "-o", "dot", "--insecure"); got != dot {
		t.Errorf("graph of the image:\n%s\nof the directory:\n%s", got, dot)
	}
}

func TestCatalogAuthorCommandsHaveExamples(t *testing.T) {
	root := NewRootCommand(Streams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
	for _, name := range []string{"promote", "deprecate", "graph"} {
		cmd, _, err := root.Find([]string{"catalog", name})
		if err != nil || !strings.Contains(cmd.Example, "kubectl olmv1 catalog "+name) {
			t.Errorf("catalog %s: err %v, example %q", name, err, cmd.Example)
		}
	}
}
