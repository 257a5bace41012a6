package fbcedit

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/Masterminds/semver/v3"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
)

func mk(pkg, version string, channels ...string) *Bundle {
	v := semver.MustParse(version)
	return &Bundle{Package: pkg, Name: pkg + ".v" + version, Version: v, Channels: channels,
		Properties: []property.Property{property.MustBuildPackage(pkg, version)}}
}

// entries renders a channel's entries as "name<replaces|skips|skipRange" strings.
func entries(cfg *declcfg.DeclarativeConfig, channel string) []string {
	for _, c := range cfg.Channels {
		if c.Name != channel {
			continue
		}
		var out []string
		for _, e := range c.Entries {
			s := strings.TrimPrefix(e.Name, "op.")
			if e.Replaces != "" {
				s += " replaces " + strings.TrimPrefix(e.Replaces, "op.")
			}
			if len(e.Skips) > 0 {
				var sk []string
				for _, x := range e.Skips {
					sk = append(sk, strings.TrimPrefix(x, "op."))
				}
				s += " skips " + strings.Join(sk, ",")
			}
			if e.SkipRange != "" {
				s += " skipRange " + e.SkipRange
			}
			out = append(out, s)
		}
		return out
	}
	return nil
}

func TestAddBundleComputesTheUpgradeEdge(t *testing.T) {
	cfg := &declcfg.DeclarativeConfig{}
	add := func(b *Bundle, opts AddOptions) *AddResult {
		t.Helper()
		if opts.Image == "" {
			opts.Image = "registry.test/op-bundle:" + b.Version.String()
		}
		res, err := AddBundle(cfg, b, opts)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	res := add(mk("op", "0.1.0", "stable"), AddOptions{})
	if !res.PackageCreated || !res.Channels[0].Created || res.Channels[0].Replaces != "" {
		t.Fatalf("first bundle: %+v", res)
	}
	if cfg.Packages[0].DefaultChannel != "stable" {
		t.Fatalf("default channel %q", cfg.Packages[0].DefaultChannel)
	}

	// The CSV says it replaces 0.1.5, which the catalog never had: the edge goes to the head instead.
	b := mk("op", "0.2.0", "stable", "fast")
	b.Replaces = "op.v0.1.5"
	res = add(b, AddOptions{})
	if got := entries(cfg, "stable"); !reflect.DeepEqual(got, []string{"v0.1.0", "v0.2.0 replaces v0.1.0"}) {
		t.Fatalf("stable = %v", got)
	}
	if got := entries(cfg, "fast"); !reflect.DeepEqual(got, []string{"v0.2.0"}) {
		t.Fatalf("fast = %v", got)
	}
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "op.v0.1.5") {
		t.Fatalf("notes = %v", res.Notes)
	}

	// A skip range from the flag, and the CSV's skips.
	b = mk("op", "0.3.0")
	b.Skips = []string{"op.v0.2.1"}
	add(b, AddOptions{Channels: []string{"stable"}, SkipRange: ">=0.1.0 <0.3.0"})
	if got := entries(cfg, "stable"); !reflect.DeepEqual(got, []string{"v0.1.0", "v0.2.0 replaces v0.1.0", "v0.3.0 replaces v0.2.0 skips v0.2.1 skipRange >=0.1.0 <0.3.0"}) {
		t.Fatalf("stable = %v", got)
	}

	// Every replaces names a bundle of the catalog.
	have := map[string]bool{}
	for _, b := range cfg.Bundles {
		have[b.Name] = true
	}
	for _, c := range cfg.Channels {
		for _, e := range c.Entries {
			if e.Replaces != "" && !have[e.Replaces] {
				t.Errorf("channel %s: %s replaces %s, which is not in the catalog", c.Name, e.Name, e.Replaces)
			}
		}
	}
}

func TestAddBundleRefuses(t *testing.T) {
	base := func() *declcfg.DeclarativeConfig {
		cfg := &declcfg.DeclarativeConfig{}
		for _, v := range []string{"1.0.0", "1.1.0"} {
			if _, err := AddBundle(cfg, mk("op", v, "stable"), AddOptions{Image: "img:" + v}); err != nil {
				t.Fatal(err)
			}
		}
		return cfg
	}
	for _, tc := range []struct {
		name string
		edit func(*declcfg.DeclarativeConfig)
		b    *Bundle
		opts AddOptions
		want string
	}{
		{name: "older than the head", b: mk("op", "1.0.5", "stable"), want: "is not newer than op.v1.1.0 (version 1.1.0), the head of channel stable"},
		{name: "same name", b: mk("op", "1.1.0", "stable"), want: "already has bundle op.v1.1.0"},
		{name: "no image", b: mk("op", "1.2.0", "stable"), opts: AddOptions{Image: "-"}, want: "no image reference"},
		{name: "no channel", b: mk("op", "1.2.0"), want: "names no channel"},
		{name: "bad skip range", b: mk("op", "1.2.0", "stable"), opts: AddOptions{SkipRange: ">=one.two"}, want: `skip range ">=one.two"`},
		{name: "two heads", b: mk("op", "1.2.0", "stable"), edit: func(cfg *declcfg.DeclarativeConfig) {
			cfg.Channels[0].Entries[1].Replaces = ""
		}, want: "has 2 heads (op.v1.0.0, op.v1.1.0)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base()
			if tc.edit != nil {
				tc.edit(cfg)
			}
			opts := tc.opts
			switch opts.Image {
			case "":
				opts.Image = "img"
			case "-":
				opts.Image = ""
			}
			_, err := AddBundle(cfg, tc.b, opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestReadBundle(t *testing.T) {
	csv := `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: op.v1.2.0
  annotations: {olm.skipRange: "<1.2.0"}
spec:
  version: 1.2.0
  replaces: op.v1.1.0
  installModes: [{type: AllNamespaces, supported: true}]
  customresourcedefinitions:
    owned: [{name: widgets.example.com, version: v1, kind: Widget}]
    required: [{name: gadgets.example.com, version: v1, kind: Gadget}]
  install: {strategy: deployment, spec: {deployments: []}}
`
	content := fstest.MapFS{
		"metadata/annotations.yaml":  {Data: []byte("annotations:\n  operators.operatorframework.io.bundle.package.v1: op\n  operators.operatorframework.io.bundle.channels.v1: stable, fast\n  operators.operatorframework.io.bundle.channel.default.v1: stable\n")},
		"metadata/dependencies.yaml": {Data: []byte("dependencies:\n- type: olm.package\n  value: {packageName: dep, version: '>=1.0.0'}\n")},
		"manifests/op.csv.yaml":      {Data: []byte(csv)},
	}
	b, err := ReadBundle(content)
	if err != nil {
		t.Fatal(err)
	}
	if b.Package != "op" || b.Name != "op.v1.2.0" || b.Version.String() != "1.2.0" || !reflect.DeepEqual(b.Channels, []string{"stable", "fast"}) ||
		b.DefaultChannel != "stable" || b.Replaces != "op.v1.1.0" || b.SkipRange != "<1.2.0" {
		t.Fatalf("bundle = %+v", b)
	}
	var types []string
	for _, p := range b.Properties {
		types = append(types, p.Type+"="+string(p.Value)[:min(len(p.Value), 60)])
	}
	got := strings.Join(types, "\n")
	for _, w := range []string{
		`olm.package={"packageName":"op","version":"1.2.0"}`,
		`olm.gvk={"group":"example.com","kind":"Widget","version":"v1"}`,
		`olm.gvk.required={"group":"example.com","kind":"Gadget","version":"v1"}`,
		`olm.package.required={"packageName":"dep","versionRange":">=1.0.0"}`,
		`olm.csv.metadata=`,
	} {
		if !strings.Contains(got, w) {
			t.Errorf("properties lack %s:\n%s", w, got)
		}
	}
}

// TestReadRealBundles reads every real bundle of ../shared/testdata/bundles and adds the strimzi
// versions to one channel in order: the chain has one edge per version.
func TestReadRealBundles(t *testing.T) {
	root := os.Getenv("OLMV1_TESTDATA")
	if root == "" {
		root = filepath.Join("..", "..", "..", "..", "..", "shared", "testdata")
	}
	dirs, _ := filepath.Glob(filepath.Join(root, "bundles", "strimzi-kafka-operator", "*"))
	if len(dirs) == 0 {
		t.Skipf("no real bundles under %s/bundles (set OLMV1_TESTDATA to the shared testdata directory)", root)
	}
	cfg := &declcfg.DeclarativeConfig{}
	for _, d := range dirs { // Glob sorts: 0.33.0 ... 0.35.0
		b, err := ReadBundle(os.DirFS(d))
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if _, err := AddBundle(cfg, b, AddOptions{Image: "registry.test/strimzi:" + b.Version.String(), Channels: []string{"stable"}}); err != nil {
			t.Fatal(err)
		}
	}
	got := entries(cfg, "stable")
	if len(got) != len(dirs) {
		t.Fatalf("entries %v", got)
	}
	for i, e := range got[1:] {
		if !strings.Contains(e, "replaces strimzi-cluster-operator.v"+filepath.Base(dirs[i])) {
			t.Errorf("entry %d = %q, want it to replace %s", i+1, e, filepath.Base(dirs[i]))
		}
	}
	m, err := declcfg.ConvertToModel(*cfg)
	if err == nil {
		err = m.Validate()
	}
	if err != nil {
		t.Fatal(fmt.Errorf("the catalog built from the real bundles is invalid: %w", err))
	}
}
