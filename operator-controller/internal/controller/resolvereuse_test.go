package controller

import (
	"testing"

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
		{"spec changed", with(func(r []operators.Request) { r[1].VersionRange = ">=2" }), out, false},
		{"Operator added", append(with(func([]operators.Request) {}), operators.Request{Name: "c", Package: "c"}), out, false},
		{"Operator renamed", with(func(r []operators.Request) { r[0].Name = "c" }), out, false},
		{"never resolved", with(func([]operators.Request) {}), nil, false},
	} {
		if got := outcomesStillHold(base, tc.reqs, tc.out); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
