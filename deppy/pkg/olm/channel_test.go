package olm

import (
	"strings"
	"testing"
)

// channelCatalog is the shape that made deppy resolve and operator-controller disagree: the default
// channel's head (stable 1.4.0) is lower than another channel's highest version, both a release
// (candidate 2.0.0) and a pre-release (nightly 2.1.0-nightly.20260101).
func channelCatalog() *catalogBuilder {
	return catalog("main", 0).
		bundle("op", "1.3.0", in("stable", "candidate")). // the first channel is the default
		bundle("op", "1.4.0", in("stable", "candidate")).
		bundle("op", "2.0.0", in("candidate")).
		bundle("op", "2.1.0-nightly.20260101", in("nightly")).
		bundle("app", "1.0.0", needsPackage("op", ">=1.0.0")).
		bundle("gvkapp", "1.0.0", needsGVK("example.com", "v1", "Op")).
		bundle("prov", "1.0.0", in("stable"), provides("example.com", "v1", "Op")).
		bundle("prov", "3.0.0", in("fast"), provides("example.com", "v1", "Op")).
		// every bundle of the default channel deprecated: another channel wins
		bundle("dep", "1.0.0", in("stable"), deprecated("1.0.0 has a CVE")).
		bundle("dep", "0.9.0", in("next"))
}

func TestDefaultChannelFirst(t *testing.T) {
	idx := index(t, channelCatalog())
	tests := []struct {
		name string
		reqs []Requirement
		want string
	}{
		{name: "no channel: the default channel's head, not a higher version elsewhere", reqs: []Requirement{require("op")}, want: "op=1.4.0"},
		{name: "an explicit channel is used", reqs: []Requirement{{Package: "op", Channel: "candidate"}}, want: "op=2.0.0"},
		{name: "an explicit pre-release channel is used", reqs: []Requirement{{Package: "op", Channel: "nightly"}}, want: "op=2.1.0-nightly.20260101"},
		{name: "an explicit channel shared with the default one: its highest version", reqs: []Requirement{{Package: "op", Channel: "candidate", VersionRange: "<3"}}, want: "op=2.0.0"},
		{name: "no channel and a range only another channel satisfies", reqs: []Requirement{requireRange("op", ">=2.0.0")}, want: "op=2.0.0"},
		{name: "no channel and a range within the default channel", reqs: []Requirement{requireRange("op", "<1.4.0")}, want: "op=1.3.0"},
		{name: "a package dependency prefers the default channel too", reqs: []Requirement{require("app")}, want: "app=1.0.0 op=1.4.0"},
		{name: "a GVK dependency prefers the provider's default channel", reqs: []Requirement{require("gvkapp")}, want: "gvkapp=1.0.0 prov=1.0.0"},
		{name: "deprecated bundles still come last", reqs: []Requirement{require("dep")}, want: "dep=0.9.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ns := outcome(t, idx, Problem{Requirements: tt.reqs})
			if ns != nil {
				t.Fatalf("unexpected error: %s", ns.Details())
			}
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestDefaultChannelIsPerCatalog: each catalog's own defaultChannel marks its bundles, so catalogs
// that disagree each contribute their default channel's bundles to the preferred group.
func TestDefaultChannelIsPerCatalog(t *testing.T) {
	a := catalog("a", 0).bundle("op", "1.0.0", in("stable")).bundle("op", "5.0.0", in("fast"))
	b := catalog("b", 0).bundle("op", "2.0.0", in("fast")).bundle("op", "6.0.0", in("edge"))
	idx := index(t, a, b)
	for _, bd := range idx.Bundles("op") {
		want := map[string]bool{"a/1.0.0": true, "b/2.0.0": true}[bd.Catalog+"/"+bd.VersionString]
		if bd.InDefaultChannel() != want {
			t.Errorf("%s from %q: InDefaultChannel() = %v, want %v", bd.Name, bd.Catalog, bd.InDefaultChannel(), want)
		}
	}
	res, err := Resolve(t.Context(), idx, Problem{Requirements: []Requirement{require("op")}})
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Selections[0]; s.Version != "2.0.0" || s.Catalog != "b" {
		t.Fatalf("got %s from %q, want 2.0.0 from \"b\" (the highest default-channel bundle)", s.Version, s.Catalog)
	}
	res, err = Resolve(t.Context(), idx, Problem{Requirements: []Requirement{{Package: "op", Catalogs: []string{"a"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Selections[0]; s.Version != "1.0.0" || s.Catalog != "a" {
		t.Fatalf("from catalog a only: got %s from %q, want 1.0.0 from \"a\"", s.Version, s.Catalog)
	}
}

// TestCandidatesListDefaultChannelFirst: the order is visible in explanations, which list candidates
// in preference order.
func TestCandidatesListDefaultChannelFirst(t *testing.T) {
	idx := index(t, channelCatalog())
	_, ns := outcome(t, idx, Problem{Requirements: []Requirement{require("op")}, Installed: []InstalledBundle{installed("op", "9.0.0")}})
	if ns == nil {
		t.Fatal("want no solution: 9.0.0 is installed and no edge leads from it")
	}
	want := "op.v1.4.0 from \"main\", op.v1.3.0 from \"main\", op.v2.1.0-nightly.20260101 from \"main\", op.v2.0.0 from \"main\""
	if !strings.Contains(ns.Details(), want) {
		t.Fatalf("explanation does not list the candidates default channel first (%s):\n%s", want, ns.Details())
	}
}
