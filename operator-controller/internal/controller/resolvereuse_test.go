package controller

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
	operators "github.com/olmv1/olmv1/deppy/pkg/operators"
)

func TestOutcomesStillHold(t *testing.T) {
	base := []operators.Request{{Name: "a", Package: "a"}, {Name: "b", Package: "b", Installed: &operators.Installed{BundleName: "b.v1", Version: "1"}}}
	out := map[string]operators.Outcome{"a": {Bundle: &operators.Bundle{Name: "a.v2"}}, "b": {Bundle: &operators.Bundle{Name: "b.v1"}}}
	with := func(edit func([]operators.Request)) []operators.Request {
		reqs := []operators.Request{{Name: "a", Package: "a"}, {Name: "b", Package: "b", Installed: &operators.Installed{BundleName: "b.v1", Version: "1"}}}
		edit(reqs)
		return reqs
	}
	for _, tc := range []struct {
		name string
		reqs []operators.Request
		out  map[string]operators.Outcome
		want bool
	}{
		{"same requests", with(func([]operators.Request) {}), out, true},
		{"the chosen bundle installed", with(func(r []operators.Request) { r[0].Installed = &operators.Installed{BundleName: "a.v2", Version: "2"} }), out, true},
		{"another bundle installed", with(func(r []operators.Request) { r[0].Installed = &operators.Installed{BundleName: "a.v1", Version: "1"} }), out, false},
		{"installed when resolution failed", with(func(r []operators.Request) { r[0].Installed = &operators.Installed{BundleName: "a.v2"} }),
			map[string]operators.Outcome{"a": {Message: "no bundle"}, "b": out["b"]}, false},
		{"uninstalled since", with(func(r []operators.Request) { r[1].Installed = nil }), out, false},
		{"installed version changed, same bundle", with(func(r []operators.Request) {
			r[1].Installed = &operators.Installed{BundleName: "b.v1", Version: "1.0.1"}
		}), out, false},
		{"spec changed", with(func(r []operators.Request) { r[1].VersionRange = ">=2" }), out, false},
		{"Operator added", append(with(func([]operators.Request) {}), operators.Request{Name: "c", Package: "c"}), out, false},
		{"Operator renamed", with(func(r []operators.Request) { r[0].Name = "c" }), out, false},
		{"never resolved", with(func([]operators.Request) {}), nil, false},
	} {
		if got := outcomesStillHold(nil, base, tc.reqs, tc.out); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// upgradeFBC offers, for each package, bundles 1.0.0 and 1.1.0 in channel stable; chain also has
// 1.2.0 (replaces 1.1.0), ranged has 1.2.0 (channel fast) whose skipRange covers 1.1.0, and skips has
// 1.2.0 (channel fast) that skips 1.1.0: upgrading to 1.1.0 opens a next upgrade for those three, not for plain and second.
func upgradeFBC(t *testing.T) *olm.Index {
	t.Helper()
	var b strings.Builder
	bundle := func(pkg, v string) {
		fmt.Fprintf(&b, `{"schema":"olm.bundle","package":%q,"name":"%s.v%s","image":"registry.test/%s:%s","properties":[{"type":"olm.package","value":{"packageName":%q,"version":%q}}]}`+"\n",
			pkg, pkg, v, pkg, v, pkg, v)
	}
	for pkg, third := range map[string]string{
		"plain":  "",
		"second": "",
		"chain":  `,{"name":"chain.v1.2.0","replaces":"chain.v1.1.0"}`,
		// In a channel of their own: the model refuses a second head or a stranded 1.0.0.
		"ranged": "]}\n" + `{"schema":"olm.channel","package":"ranged","name":"fast","entries":[{"name":"ranged.v1.2.0","skipRange":">=1.1.0 <1.2.0"}`,
		"skips":  "]}\n" + `{"schema":"olm.channel","package":"skips","name":"fast","entries":[{"name":"skips.v1.2.0","skips":["skips.v1.1.0"]}`,
	} {
		fmt.Fprintf(&b, `{"schema":"olm.package","name":%q,"defaultChannel":"stable"}`+"\n", pkg)
		fmt.Fprintf(&b, `{"schema":"olm.channel","package":%q,"name":"stable","entries":[{"name":"%s.v1.0.0"},{"name":"%s.v1.1.0","replaces":"%s.v1.0.0"}%s]}`+"\n",
			pkg, pkg, pkg, pkg, third)
		bundle(pkg, "1.0.0")
		bundle(pkg, "1.1.0")
		if third != "" {
			bundle(pkg, "1.2.0")
		}
	}
	cfg, err := declcfg.LoadReader(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := olm.NewCatalog("main", 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := olm.NewIndex(cat)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// TestOutcomesStillHoldUpgrade: after a catalog update, Operators that move to the bundle their
// outcome chose keep the outcomes when resolving again would choose the same (checked against a real
// resolution), and resolve again when the new bundle opens a next upgrade or when the policy is not
// Enforce and automatic.
func TestOutcomesStillHoldUpgrade(t *testing.T) {
	idx := upgradeFBC(t)
	ctx := context.Background()
	v1 := func(pkg string) *operators.Installed {
		return &operators.Installed{BundleName: pkg + ".v1.0.0", Version: "1.0.0"}
	}
	req := func(pkg string, edit func(*operators.Request)) operators.Request {
		r := operators.Request{Name: pkg, Package: pkg, Installed: v1(pkg)}
		if edit != nil {
			edit(&r)
		}
		return r
	}
	bothChannels := func(r *operators.Request) { r.Channels = []string{"stable", "fast"} }
	for _, tc := range []struct {
		name string
		req  operators.Request
		want bool
	}{
		{"no next upgrade", req("plain", nil), true},
		{"no next upgrade, Enforce spelt out", req("plain", func(r *operators.Request) { r.ConstraintPolicy = "enforce" }), true},
		{"replaces the new bundle", req("chain", nil), false},
		{"skipRange covers the new bundle", req("ranged", bothChannels), false},
		{"skips the new bundle", req("skips", bothChannels), false},
		{"policy Ignore", req("plain", func(r *operators.Request) { r.ConstraintPolicy = olm.Ignore }), false},
	} {
		// A second Operator, whose BundleDeployment has not moved yet.
		base := []operators.Request{tc.req, req("second", nil)}
		out := operators.Resolve(ctx, idx, base)
		chosen := out[tc.req.Name].Bundle
		if chosen == nil || chosen.Version != "1.1.0" {
			t.Fatalf("%s: resolved %+v, want 1.1.0", tc.name, out[tc.req.Name])
		}
		reqs := append([]operators.Request(nil), base...)
		reqs[0].Installed = &operators.Installed{BundleName: chosen.Name, Version: chosen.Version}
		got := outcomesStillHold(idx, base, reqs, out)
		if got != tc.want {
			t.Errorf("%s: outcomesStillHold = %v, want %v", tc.name, got, tc.want)
		}
		again := operators.Resolve(ctx, idx, reqs)
		same := maps.EqualFunc(out, again, func(a, b operators.Outcome) bool {
			return a.Bundle != nil && b.Bundle != nil && a.Bundle.Name == b.Bundle.Name
		})
		if got && !same {
			t.Errorf("%s: outcomes kept, but resolving again chose %s, not %s", tc.name, again[tc.req.Name].Bundle.Name, chosen.Name)
		}
		if tc.req.ConstraintPolicy == "" && !tc.want && same {
			t.Errorf("%s: resolving again chose the same: the case tests nothing", tc.name)
		}
	}
}
