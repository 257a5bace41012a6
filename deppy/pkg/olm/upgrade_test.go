package olm

import (
	"strings"
	"testing"
)

func TestUpgradeEdges(t *testing.T) {
	// replaces chain: 1.0.0 <- 1.1.0 <- 1.2.0
	chain := catalog("main", 0).bundle("x", "1.0.0").bundle("x", "1.1.0").bundle("x", "1.2.0")
	// 1.2.0 replaces 1.1.0 and skips 1.0.0
	skipping := catalog("main", 0).bundle("x", "1.0.0").bundle("x", "1.1.0").
		bundle("x", "1.2.0", replaces("1.1.0"), skips("1.0.0"))
	// 2.0.0 replaces 1.1.0 and has skipRange >=0.5.0 <2.0.0
	ranged := catalog("main", 0).bundle("x", "1.0.0").bundle("x", "1.1.0").
		bundle("x", "2.0.0", replaces("1.1.0"), skipRange(">=0.5.0 <2.0.0"))
	// channel-specific edges: stable 1.0.0 <- 1.1.0, fast 1.0.0 <- 2.0.0
	channels := catalog("main", 0).bundle("x", "1.0.0", in("stable", "fast")).
		bundle("x", "1.1.0", in("stable")).bundle("x", "2.0.0", in("fast"))

	ignore := func(r Requirement) Requirement { r.UpgradePolicy = Ignore; return r }
	tests := []struct {
		name    string
		catalog *catalogBuilder
		problem Problem
		want    string
		wantErr string
	}{
		{
			name: "replaces chain moves one hop", catalog: chain,
			problem: Problem{Requirements: []Requirement{require("x")}, Installed: []InstalledBundle{installed("x", "1.0.0")}},
			want:    "x=1.1.0",
		},
		{
			name: "replaces chain from the middle", catalog: chain,
			problem: Problem{Requirements: []Requirement{require("x")}, Installed: []InstalledBundle{installed("x", "1.1.0")}},
			want:    "x=1.2.0",
		},
		{
			name: "head stays", catalog: chain,
			problem: Problem{Requirements: []Requirement{require("x")}, Installed: []InstalledBundle{installed("x", "1.2.0")}},
			want:    "x=1.2.0",
		},
		{
			name: "jumping past the next edge is refused", catalog: chain,
			problem: Problem{Requirements: []Requirement{requireRange("x", "1.2.0")}, Installed: []InstalledBundle{installed("x", "1.0.0")}},
			wantErr: `the request requires package "x" in range "1.2.0", but package "x" 1.0.0 is installed and may only be upgraded along the catalogs' upgrade edges (to 1.1.0)`,
		},
		{
			name: "downgrade is refused", catalog: chain,
			problem: Problem{Requirements: []Requirement{requireRange("x", "1.0.0")}, Installed: []InstalledBundle{installed("x", "1.2.0")}},
			wantErr: `the request requires package "x" in range "1.0.0", but package "x" 1.2.0 is installed and may not be downgraded`,
		},
		{
			name: "skips lead further", catalog: skipping,
			problem: Problem{Requirements: []Requirement{require("x")}, Installed: []InstalledBundle{installed("x", "1.0.0")}},
			want:    "x=1.2.0",
		},
		{
			name: "skipRange leads further", catalog: ranged,
			problem: Problem{Requirements: []Requirement{require("x")}, Installed: []InstalledBundle{installed("x", "1.0.0")}},
			want:    "x=2.0.0",
		},
		{
			name: "skipRange upgrades a version no catalog has", catalog: ranged,
			problem: Problem{Requirements: []Requirement{require("x")}, Installed: []InstalledBundle{installed("x", "0.9.0")}},
			want:    "x=2.0.0",
		},
		{
			name: "an installed version no edge leads from", catalog: chain,
			problem: Problem{Requirements: []Requirement{require("x")}, Installed: []InstalledBundle{installed("x", "0.1.0")}},
			wantErr: `package "x" 0.1.0 is installed and no upgrade edge of the catalogs leads from it`,
		},
		{
			name: "edges of the requested channel only", catalog: channels,
			problem: Problem{Requirements: []Requirement{{Package: "x", Channel: "stable"}}, Installed: []InstalledBundle{installed("x", "1.0.0")}},
			want:    "x=1.1.0",
		},
		{
			name: "edges of another channel", catalog: channels,
			problem: Problem{Requirements: []Requirement{{Package: "x", Channel: "fast"}}, Installed: []InstalledBundle{installed("x", "1.0.0")}},
			want:    "x=2.0.0",
		},
		{
			name: "with no channel the default channel's edge comes first", catalog: channels,
			problem: Problem{Requirements: []Requirement{require("x")}, Installed: []InstalledBundle{installed("x", "1.0.0")}},
			want:    "x=1.1.0",
		},
		{
			name: "with no channel another channel's edge when the range asks for it", catalog: channels,
			problem: Problem{Requirements: []Requirement{requireRange("x", ">=2.0.0")}, Installed: []InstalledBundle{installed("x", "1.0.0")}},
			want:    "x=2.0.0",
		},
		{
			name: "Ignore allows a jump", catalog: chain,
			problem: Problem{Requirements: []Requirement{ignore(requireRange("x", "1.2.0"))}, Installed: []InstalledBundle{installed("x", "1.0.0")}},
			want:    "x=1.2.0",
		},
		{
			name: "Ignore allows a downgrade", catalog: chain,
			problem: Problem{Requirements: []Requirement{ignore(requireRange("x", "1.0.0"))}, Installed: []InstalledBundle{installed("x", "1.2.0")}},
			want:    "x=1.0.0",
		},
		{
			name:    "an installed package nobody requires stays as it is",
			catalog: catalog("main", 0).bundle("x", "1.0.0").bundle("x", "1.1.0").bundle("y", "1.0.0"),
			problem: Problem{Requirements: []Requirement{require("y")}, Installed: []InstalledBundle{installed("x", "1.0.0")}},
			want:    "y=1.0.0 x=1.0.0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			idx := index(t, tt.catalog)
			got, ns := outcome(t, idx, tt.problem)
			if tt.wantErr != "" {
				if ns == nil {
					t.Fatalf("got %s, want an error containing %q", got, tt.wantErr)
				}
				if !strings.Contains(ns.Error(), tt.wantErr) {
					t.Fatalf("error:\n%s\ndoes not contain:\n%s", ns.Error(), tt.wantErr)
				}
				return
			}
			if ns != nil {
				t.Fatalf("unexpected error: %s", ns.Details())
			}
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestInstalledDependencyMovesAlongEdgesWhenNeeded(t *testing.T) {
	idx := index(t, catalog("main", 0).
		bundle("a", "1.0.0", needsPackage("c", ">=1.1.0")).
		bundle("c", "1.0.0").bundle("c", "1.1.0").bundle("c", "1.2.0"))
	res, err := Resolve(t.Context(), idx, Problem{Requirements: []Requirement{require("a")}, Installed: []InstalledBundle{installed("c", "1.0.0")}})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Package("c")
	if c == nil || c.Version != "1.1.0" || c.Reason != SelectedInstalled || c.InstalledVersion != "1.0.0" {
		t.Fatalf("c: got %+v, want 1.1.0 (the one successor of 1.0.0), kept as installed", c)
	}
}

func TestInstalledByBundleName(t *testing.T) {
	idx := index(t, catalog("main", 0).bundle("x", "1.0.0").bundle("x", "1.1.0"))
	got, ns := outcome(t, idx, Problem{Requirements: []Requirement{require("x")},
		Installed: []InstalledBundle{{Package: "x", Version: "1.0.0", BundleName: "x.v1.0.0"}}})
	if ns != nil || got != "x=1.1.0" {
		t.Fatalf("got %q, %v", got, ns)
	}
}

func TestInstalledTwiceIsAnInputError(t *testing.T) {
	idx := index(t, catalog("main", 0).bundle("x", "1.0.0"))
	_, err := Resolve(t.Context(), idx, Problem{Installed: []InstalledBundle{installed("x", "1.0.0"), installed("x", "1.0.0")}})
	if err == nil || !strings.Contains(err.Error(), `package "x" is listed as installed twice`) {
		t.Fatalf("got %v", err)
	}
}

func TestIgnoreStillReportsTheInstalledVersion(t *testing.T) {
	idx := index(t, catalog("main", 0).bundle("x", "1.0.0").bundle("x", "1.1.0").bundle("x", "1.2.0"))
	req := requireRange("x", "1.0.0")
	req.UpgradePolicy = Ignore
	res, err := Resolve(t.Context(), idx, Problem{Requirements: []Requirement{req}, Installed: []InstalledBundle{installed("x", "1.2.0")}})
	if err != nil {
		t.Fatal(err)
	}
	if x := res.Package("x"); x.Version != "1.0.0" || x.InstalledVersion != "1.2.0" || len(res.Selections) != 1 {
		t.Fatalf("got %+v", res.Selections)
	}
}
