package fbcedit

import (
	"reflect"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
)

// channels is package op: alpha 0.1.0 → 0.2.0 → 0.3.0 (skips 0.2.1) → 1.0.0 and stable 0.1.0 →
// 0.2.0, with every bundle an olm.bundle blob (1.0.0's CSV has an olm.skipRange annotation).
func channels(t *testing.T) *declcfg.DeclarativeConfig {
	t.Helper()
	cfg := &declcfg.DeclarativeConfig{Packages: []declcfg.Package{{Schema: declcfg.SchemaPackage, Name: "op", DefaultChannel: "stable"}}}
	for _, v := range []string{"0.1.0", "0.2.0", "0.2.1", "0.3.0", "1.0.0"} {
		b := mk("op", v)
		if v == "1.0.0" {
			b.Properties = append(b.Properties, property.MustBuild(&property.CSVMetadata{Annotations: map[string]string{"olm.skipRange": "<1.0.0"}}))
		}
		cfg.Bundles = append(cfg.Bundles, b.Blob("registry.test/op:"+v))
	}
	cfg.Channels = []declcfg.Channel{
		{Schema: declcfg.SchemaChannel, Package: "op", Name: "alpha", Entries: []declcfg.ChannelEntry{
			{Name: "op.v0.1.0"}, {Name: "op.v0.2.0", Replaces: "op.v0.1.0"}, {Name: "op.v0.2.1"},
			{Name: "op.v0.3.0", Replaces: "op.v0.2.0", Skips: []string{"op.v0.2.1"}}, {Name: "op.v1.0.0", Replaces: "op.v0.3.0"},
		}},
		{Schema: declcfg.SchemaChannel, Package: "op", Name: "stable", Entries: []declcfg.ChannelEntry{
			{Name: "op.v0.1.0"}, {Name: "op.v0.2.0", Replaces: "op.v0.1.0"},
		}},
	}
	return cfg
}

func TestPromoteReplacesTheHead(t *testing.T) {
	cfg := channels(t)
	res, err := Promote(cfg, "op", "0.3.0", PromoteOptions{Channel: "stable"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Bundle != "op.v0.3.0" || res.Channel.Replaces != "op.v0.2.0" || res.Channel.Created || res.AlreadyInChannel {
		t.Fatalf("%+v", res)
	}
	// The bundle name works as well as the version; --skip-range sets the entry's skipRange.
	if _, err := Promote(cfg, "op", "op.v1.0.0", PromoteOptions{Channel: "stable", SkipRange: ">=0.2.0 <1.0.0"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"v0.1.0", "v0.2.0 replaces v0.1.0", "v0.3.0 replaces v0.2.0", "v1.0.0 replaces v0.3.0 skipRange >=0.2.0 <1.0.0"}
	if got := entries(cfg, "stable"); !reflect.DeepEqual(got, want) {
		t.Fatalf("stable = %v", got)
	}
	if len(cfg.Bundles) != 5 {
		t.Fatalf("promote added a bundle blob: %d", len(cfg.Bundles))
	}
}

func TestPromoteCreatesAChannelAndDefaultsToTheCSVSkipRange(t *testing.T) {
	cfg := channels(t)
	res, err := Promote(cfg, "op", "v1.0.0", PromoteOptions{Channel: "fast"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Channel.Created || res.Channel.Replaces != "" || res.Channel.SkipRange != "<1.0.0" {
		t.Fatalf("%+v", res.Channel)
	}
	if got := entries(cfg, "fast"); !reflect.DeepEqual(got, []string{"v1.0.0 skipRange <1.0.0"}) {
		t.Fatalf("fast = %v", got)
	}
}

func TestPromoteRefusesABundleOlderThanTheHead(t *testing.T) {
	cfg := channels(t)
	if _, err := Promote(cfg, "op", "0.3.0", PromoteOptions{Channel: "stable"}); err != nil {
		t.Fatal(err)
	}
	before := entries(cfg, "stable")
	_, err := Promote(cfg, "op", "0.2.1", PromoteOptions{Channel: "stable"})
	if err == nil || !strings.Contains(err.Error(), "op.v0.2.1 (version 0.2.1)") || !strings.Contains(err.Error(), "op.v0.3.0 (version 0.3.0)") {
		t.Fatalf("err = %v", err)
	}
	if !reflect.DeepEqual(entries(cfg, "stable"), before) {
		t.Fatalf("a refused promote changed the channel")
	}
}

func TestPromoteOfABundleAlreadyInTheChannelIsANoOp(t *testing.T) {
	cfg := channels(t)
	before := entries(cfg, "alpha")
	res, err := Promote(cfg, "op", "0.2.0", PromoteOptions{Channel: "alpha"})
	if err != nil || !res.AlreadyInChannel {
		t.Fatalf("res %+v, err %v", res, err)
	}
	if !reflect.DeepEqual(entries(cfg, "alpha"), before) {
		t.Fatalf("alpha changed: %v", entries(cfg, "alpha"))
	}
}

func TestPromoteErrors(t *testing.T) {
	for _, tc := range []struct {
		pkg, ref string
		opts     PromoteOptions
		want     string
	}{
		{"op", "9.9.9", PromoteOptions{Channel: "stable"}, "package op has no bundle 9.9.9 (give a version or a bundle name; its bundles: op.v0.1.0, op.v0.2.0"},
		{"nope", "1.0.0", PromoteOptions{Channel: "stable"}, "package nope has no bundle in the catalog"},
		{"op", "1.0.0", PromoteOptions{}, "pass --to CHANNEL"},
		{"op", "1.0.0", PromoteOptions{Channel: "stable", SkipRange: "not a range"}, `skip range "not a range"`},
	} {
		if _, err := Promote(channels(t), tc.pkg, tc.ref, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %s %+v: err = %v, want %q", tc.pkg, tc.ref, tc.opts, err, tc.want)
		}
	}
}
