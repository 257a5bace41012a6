package olm

import (
	"strings"
	"testing"
)

func TestRequiredPackageCandidates(t *testing.T) {
	main := catalog("main", 0).
		bundle("a", "1.0.0", in("stable", "fast")).
		bundle("a", "1.1.0", in("stable", "fast")).
		bundle("a", "1.2.0", in("stable")).
		bundle("a", "2.0.0", in("fast")).
		bundle("old", "1.0.0").
		bundle("old", "2.0.0", deprecated("use 1.x")).
		bundle("both", "1.0.0")
	other := catalog("other", 10).
		bundle("both", "1.0.0").
		bundle("elsewhere", "1.0.0")

	tests := []struct {
		name      string
		req       Requirement
		want      string // "pkg=version" or an explanation fragment after "error:"
		wantCat   string
		wantError string
	}{
		{name: "default channel first, not the highest version of any channel", req: require("a"), want: "a=1.2.0"},
		{name: "another channel when the range excludes the default channel", req: requireRange("a", ">=2.0.0"), want: "a=2.0.0"},
		{name: "exact version pins", req: requireRange("a", "1.1.0"), want: "a=1.1.0"},
		{name: "range", req: requireRange("a", ">=1.0.0 <2.0.0"), want: "a=1.2.0"},
		{name: "tilde range", req: requireRange("a", "~1.1"), want: "a=1.1.0"},
		{name: "channel restricts", req: Requirement{Package: "a", Channel: "stable"}, want: "a=1.2.0"},
		{name: "channel and range", req: Requirement{Package: "a", Channel: "fast", VersionRange: "<2"}, want: "a=1.1.0"},
		{name: "deprecated bundles last", req: require("old"), want: "old=1.0.0"},
		{name: "deprecated bundle when pinned", req: requireRange("old", "2.0.0"), want: "old=2.0.0"},
		{name: "catalog priority breaks version ties", req: require("both"), want: "both=1.0.0", wantCat: "other"},
		{name: "catalog restriction", req: Requirement{Package: "both", Catalogs: []string{"main"}}, want: "both=1.0.0", wantCat: "main"},
		{name: "unknown package", req: require("nope"), wantError: `no catalog has package "nope" (catalogs: "main", "other")`},
		{name: "package not in the allowed catalogs", req: Requirement{Package: "elsewhere", Catalogs: []string{"main"}}, wantError: `package "elsewhere" is not in catalogs "main" (it is in "other")`},
		{name: "unknown channel", req: Requirement{Package: "a", Channel: "beta"}, wantError: `package "a" has no channel "beta" (channels: fast, stable)`},
		{name: "no version in range", req: requireRange("a", ">=3.0.0"), wantError: `no version of package "a" is in range ">=3.0.0" (available: 2.0.0, 1.2.0, 1.1.0, 1.0.0)`},
		{name: "no version in range in channel", req: Requirement{Package: "a", Channel: "stable", VersionRange: "2.0.0"}, wantError: `no version of package "a" in channel "stable" is in range "2.0.0" (available: 1.2.0, 1.1.0, 1.0.0)`},
	}
	idx := index(t, main, other)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ns := outcome(t, idx, Problem{Requirements: []Requirement{tt.req}})
			if tt.wantError != "" {
				if ns == nil {
					t.Fatalf("got %s, want an error containing %q", got, tt.wantError)
				}
				if !strings.Contains(ns.Error(), tt.wantError) {
					t.Fatalf("error %q does not contain %q", ns.Error(), tt.wantError)
				}
				return
			}
			if ns != nil {
				t.Fatalf("unexpected error: %s", ns.Details())
			}
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			if tt.wantCat != "" {
				res, _ := Resolve(t.Context(), idx, Problem{Requirements: []Requirement{tt.req}})
				if c := res.Selections[0].Catalog; c != tt.wantCat {
					t.Fatalf("catalog %q, want %q", c, tt.wantCat)
				}
			}
		})
	}
}

func TestInvalidRequirementIsAnInputError(t *testing.T) {
	idx := index(t, catalog("main", 0).bundle("a", "1.0.0"))
	_, err := Resolve(t.Context(), idx, Problem{Requirements: []Requirement{requireRange("a", "not-a-range")}})
	if err == nil || !strings.Contains(err.Error(), `invalid version range "not-a-range"`) {
		t.Fatalf("got %v, want an invalid version range error", err)
	}
}

func TestParseRequirement(t *testing.T) {
	tests := []struct {
		in      string
		want    Requirement
		wantErr string
	}{
		{in: "etcd", want: Requirement{Package: "etcd"}},
		{in: "etcd@1.2.3", want: Requirement{Package: "etcd", VersionRange: "1.2.3"}},
		{in: "etcd@>=1.2 <2#alpha", want: Requirement{Package: "etcd", VersionRange: ">=1.2 <2", Channel: "alpha"}},
		{in: "etcd#alpha", want: Requirement{Package: "etcd", Channel: "alpha"}},
		{in: "@1.0.0", wantErr: "missing package name"},
		{in: "etcd@", wantErr: "empty version range"},
		{in: "etcd#", wantErr: "empty channel"},
		{in: "etcd@bogus!", wantErr: "invalid version range"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseRequirement(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Package != tt.want.Package || got.VersionRange != tt.want.VersionRange || got.Channel != tt.want.Channel {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseInstalledAndPolicy(t *testing.T) {
	ib, err := ParseInstalled("etcd@0.9.4=etcdoperator.v0.9.4")
	if err != nil || ib.Package != "etcd" || ib.Version != "0.9.4" || ib.BundleName != "etcdoperator.v0.9.4" {
		t.Fatalf("got %+v, %v", ib, err)
	}
	for _, bad := range []string{"etcd", "etcd@", "@1.0.0", "etcd@x.y"} {
		if _, err := ParseInstalled(bad); err == nil {
			t.Errorf("ParseInstalled(%q): want an error", bad)
		}
	}
	for in, want := range map[string]UpgradePolicy{"": Enforce, "enforce": Enforce, "Ignore": Ignore} {
		if got, err := ParseUpgradePolicy(in); err != nil || got != want {
			t.Errorf("ParseUpgradePolicy(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseUpgradePolicy("Sometimes"); err == nil {
		t.Error("ParseUpgradePolicy(Sometimes): want an error")
	}
}
