package fbcedit

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/olmv1/olmv1/platform/sharedtestdata"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

func TestDeprecateScopes(t *testing.T) {
	cfg := channels(t)
	for _, tc := range []struct {
		opts   DeprecateOptions
		ref    declcfg.PackageScopedReference
		action string
	}{
		{DeprecateOptions{Bundle: "0.2.1", Message: "0.2.1 loses data; use 0.3.0"}, declcfg.PackageScopedReference{Schema: "olm.bundle", Name: "op.v0.2.1"}, "added"},
		{DeprecateOptions{Channel: "alpha", Message: "alpha is frozen"}, declcfg.PackageScopedReference{Schema: "olm.channel", Name: "alpha"}, "added"},
		{DeprecateOptions{Message: "op is end of life"}, declcfg.PackageScopedReference{Schema: "olm.package"}, "added"},
		{DeprecateOptions{Channel: "alpha", Message: "alpha is frozen; use stable"}, declcfg.PackageScopedReference{Schema: "olm.channel", Name: "alpha"}, "updated"},
		{DeprecateOptions{Bundle: "op.v0.2.1", Message: "0.2.1 loses data; use 0.3.0"}, declcfg.PackageScopedReference{Schema: "olm.bundle", Name: "op.v0.2.1"}, "unchanged"},
	} {
		res, err := Deprecate(cfg, "op", tc.opts)
		if err != nil {
			t.Fatalf("%+v: %v", tc.opts, err)
		}
		if res.Reference != tc.ref || res.Action != tc.action {
			t.Errorf("%+v: %+v", tc.opts, res)
		}
	}
	want := []declcfg.Deprecation{{Schema: "olm.deprecations", Package: "op", Entries: []declcfg.DeprecationEntry{
		{Reference: declcfg.PackageScopedReference{Schema: "olm.bundle", Name: "op.v0.2.1"}, Message: "0.2.1 loses data; use 0.3.0"},
		{Reference: declcfg.PackageScopedReference{Schema: "olm.channel", Name: "alpha"}, Message: "alpha is frozen; use stable"},
		{Reference: declcfg.PackageScopedReference{Schema: "olm.package"}, Message: "op is end of life"},
	}}}
	if !reflect.DeepEqual(cfg.Deprecations, want) {
		t.Fatalf("deprecations = %+v", cfg.Deprecations)
	}
}

// TestDeprecationsReadLikeTheExample: the blob Deprecate writes has the shape of the real
// deprecations example of $OLMV1_TESTDATA (package, channel and bundle scope).
func TestDeprecationsReadLikeTheExample(t *testing.T) {
	root, _ := sharedtestdata.Root()
	dir := filepath.Join(root, "fbc", "deprecations-example", "redhat-operator-index", "4.15", "example-mypackage")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no deprecations example at %s (set OLMV1_TESTDATA): %v", dir, err)
	}
	example, err := declcfg.LoadFile(os.DirFS(dir), "deprecations.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := channels(t)
	for _, e := range example.Deprecations[0].Entries {
		opts := DeprecateOptions{Message: e.Message}
		switch e.Reference.Schema {
		case declcfg.SchemaChannel:
			opts.Channel = "alpha"
		case declcfg.SchemaBundle:
			opts.Bundle = "0.1.0"
		}
		if _, err := Deprecate(cfg, "op", opts); err != nil {
			t.Fatal(err)
		}
	}
	got, want := cfg.Deprecations[0].Entries, example.Deprecations[0].Entries
	for i := range want {
		if got[i].Reference.Schema != want[i].Reference.Schema || got[i].Message != want[i].Message || (got[i].Reference.Name == "") != (want[i].Reference.Name == "") {
			t.Errorf("entry %d: %+v, the example's %+v", i, got[i], want[i])
		}
	}
}

func TestDeprecateRefuses(t *testing.T) {
	for _, tc := range []struct {
		pkg  string
		opts DeprecateOptions
		want string
	}{
		{"op", DeprecateOptions{Channel: "beta", Message: "m"}, "package op has no channel beta (its channels: alpha, stable)"},
		{"op", DeprecateOptions{Bundle: "2.0.0", Message: "m"}, "package op has no bundle 2.0.0"},
		{"op", DeprecateOptions{Channel: "alpha", Bundle: "0.1.0", Message: "m"}, "not both"},
		{"op", DeprecateOptions{Channel: "alpha", Message: "  "}, "needs a message"},
		{"nope", DeprecateOptions{Message: "m"}, "package nope is not in the catalog"},
	} {
		cfg := channels(t)
		if _, err := Deprecate(cfg, tc.pkg, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.opts, err, tc.want)
		}
		if len(cfg.Deprecations) != 0 {
			t.Errorf("%+v: a refused deprecation wrote %+v", tc.opts, cfg.Deprecations)
		}
	}
}
