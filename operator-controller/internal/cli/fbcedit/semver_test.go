package fbcedit

import (
	"reflect"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// semverFixture is the semver template convention's own example: 11 versions over candidate, fast
// and stable.
func semverFixture(major, minor bool) (*SemverTemplate, map[string]*Bundle) {
	t := &SemverTemplate{Schema: SemverSchema, GenerateMajorChannels: major, GenerateMinorChannels: minor}
	bundles := map[string]*Bundle{}
	list := func(vs ...string) SemverChannel {
		var c SemverChannel
		for _, v := range vs {
			img := "quay.io/foo/olm:op.v" + v
			bundles[img] = mk("op", v)
			c.Bundles = append(c.Bundles, SemverBundle{Image: img})
		}
		return c
	}
	t.Candidate = list("0.1.0", "0.1.1", "0.1.2", "0.1.3", "0.2.0", "0.2.1", "0.2.2", "0.3.0", "1.0.0", "1.0.1", "1.1.0")
	t.Fast = list("0.2.1", "0.2.2", "0.3.0", "1.0.1", "1.1.0")
	t.Stable = list("1.0.1")
	return t, bundles
}

func TestRenderSemverMajorChannels(t *testing.T) {
	tmpl, bundles := semverFixture(true, false)
	cfg, err := RenderSemver(tmpl, bundles)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"candidate-v0": {"v0.1.0", "v0.1.1", "v0.1.2", "v0.1.3 skips v0.1.0,v0.1.1,v0.1.2", "v0.2.0", "v0.2.1", "v0.2.2 replaces v0.1.3 skips v0.2.0,v0.2.1", "v0.3.0 replaces v0.2.2"},
		"candidate-v1": {"v1.0.0", "v1.0.1 skips v1.0.0", "v1.1.0 replaces v1.0.1"},
		"fast-v0":      {"v0.2.1", "v0.2.2 skips v0.2.1", "v0.3.0 replaces v0.2.2"},
		"fast-v1":      {"v1.0.1", "v1.1.0 replaces v1.0.1"},
		"stable-v1":    {"v1.0.1"},
	}
	checkChannels(t, cfg, want, "stable-v1")
	if len(cfg.Bundles) != 11 {
		t.Fatalf("%d bundles, want 11", len(cfg.Bundles))
	}
}

func TestRenderSemverMinorChannels(t *testing.T) {
	tmpl, bundles := semverFixture(false, false) // minor channels are the default
	cfg, err := RenderSemver(tmpl, bundles)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"candidate-v0.1": {"v0.1.0", "v0.1.1", "v0.1.2", "v0.1.3 skips v0.1.0,v0.1.1,v0.1.2"},
		"candidate-v0.2": {"v0.2.0", "v0.2.1", "v0.2.2 replaces v0.1.3 skips v0.2.0,v0.2.1"},
		"candidate-v0.3": {"v0.3.0 replaces v0.2.2"},
		"candidate-v1.0": {"v1.0.0", "v1.0.1 skips v1.0.0"},
		"candidate-v1.1": {"v1.1.0 replaces v1.0.1"},
		"fast-v0.2":      {"v0.2.1", "v0.2.2 skips v0.2.1"},
		"fast-v0.3":      {"v0.3.0 replaces v0.2.2"},
		"fast-v1.0":      {"v1.0.1"},
		"fast-v1.1":      {"v1.1.0 replaces v1.0.1"},
		"stable-v1.0":    {"v1.0.1"},
	}
	checkChannels(t, cfg, want, "stable-v1.0")
}

func TestRenderSemverAvoidSkipPatch(t *testing.T) {
	tmpl, bundles := semverFixture(true, false)
	tmpl.AvoidSkipPatch = true
	cfg, err := RenderSemver(tmpl, bundles)
	if err != nil {
		t.Fatal(err)
	}
	if got := entries(cfg, "candidate-v0"); !reflect.DeepEqual(got, []string{"v0.1.0", "v0.1.1 replaces v0.1.0", "v0.1.2 replaces v0.1.1", "v0.1.3 replaces v0.1.2",
		"v0.2.0 replaces v0.1.3", "v0.2.1 replaces v0.2.0", "v0.2.2 replaces v0.2.1", "v0.3.0 replaces v0.2.2"}) {
		t.Fatalf("candidate-v0 = %v", got)
	}
}

func TestRenderSemverRefuses(t *testing.T) {
	tmpl, bundles := semverFixture(true, false)
	bundles["quay.io/foo/olm:op.v0.1.1"] = mk("other", "0.1.1")
	if _, err := RenderSemver(tmpl, bundles); err == nil || !strings.Contains(err.Error(), "a template renders one package") {
		t.Fatalf("err = %v", err)
	}
	tmpl, bundles = semverFixture(true, false)
	b := mk("op", "0.1.1+build2")
	b.Name = "op.v0.1.1-build2"
	bundles["quay.io/foo/olm:op.v0.1.1+b"] = b
	tmpl.Fast.Bundles = append(tmpl.Fast.Bundles, SemverBundle{Image: "quay.io/foo/olm:op.v0.1.1+b"})
	if _, err := RenderSemver(tmpl, bundles); err == nil || !strings.Contains(err.Error(), "differ only by build metadata") {
		t.Fatalf("err = %v", err)
	}
	tmpl.Schema = "olm.template.basic"
	if _, err := RenderSemver(tmpl, bundles); err == nil || !strings.Contains(err.Error(), `want "olm.semver"`) {
		t.Fatalf("err = %v", err)
	}
}

// TestRenderSemverIsAValidCatalog: the output passes operator-registry's model validation.
func TestRenderSemverIsAValidCatalog(t *testing.T) {
	for _, flags := range [][2]bool{{true, false}, {false, true}, {true, true}} {
		tmpl, bundles := semverFixture(flags[0], flags[1])
		cfg, err := RenderSemver(tmpl, bundles)
		if err != nil {
			t.Fatal(err)
		}
		m, err := declcfg.ConvertToModel(*cfg)
		if err == nil {
			err = m.Validate()
		}
		if err != nil {
			t.Fatalf("major=%v minor=%v: %v", flags[0], flags[1], err)
		}
	}
}

func checkChannels(t *testing.T, cfg *declcfg.DeclarativeConfig, want map[string][]string, def string) {
	t.Helper()
	if len(cfg.Channels) != len(want) {
		var names []string
		for _, c := range cfg.Channels {
			names = append(names, c.Name)
		}
		t.Fatalf("channels %v, want %d", names, len(want))
	}
	for name, w := range want {
		if got := entries(cfg, name); !reflect.DeepEqual(got, w) {
			t.Errorf("%s:\n got  %v\n want %v", name, got, w)
		}
	}
	if cfg.Packages[0].DefaultChannel != def {
		t.Errorf("default channel %s, want %s", cfg.Packages[0].DefaultChannel, def)
	}
}
