package olm

import (
	"strings"
	"testing"
)

func TestBundleDependencies(t *testing.T) {
	tests := []struct {
		name    string
		catalog *catalogBuilder
		problem Problem
		want    string // chosen bundles, or "" when an error is expected
		wantErr string // fragment of the explanation
	}{
		{
			name: "olm.package.required picks the highest version in range",
			catalog: catalog("main", 0).
				bundle("a", "1.0.0", needsPackage("b", ">=1.0.0 <2.0.0")).
				bundle("b", "1.0.0").bundle("b", "1.5.0").bundle("b", "2.0.0"),
			problem: Problem{Requirements: []Requirement{require("a")}},
			want:    "a=1.0.0 b=1.5.0",
		},
		{
			name: "transitive dependencies",
			catalog: catalog("main", 0).
				bundle("a", "1.0.0", needsPackage("b", ">=1.0.0")).
				bundle("b", "1.0.0", needsPackage("c", ">=1.0.0")).
				bundle("c", "1.0.0"),
			problem: Problem{Requirements: []Requirement{require("a")}},
			want:    "a=1.0.0 b=1.0.0 c=1.0.0",
		},
		{
			name: "olm.package.required without a match falls back to an older bundle",
			catalog: catalog("main", 0).
				bundle("a", "1.0.0", needsPackage("b", ">=1.0.0")).
				bundle("a", "2.0.0", needsPackage("b", ">=2.0.0")).
				bundle("b", "1.0.0"),
			problem: Problem{Requirements: []Requirement{require("a")}},
			want:    "a=1.0.0 b=1.0.0",
		},
		{
			name: "olm.gvk.required selects a provider",
			catalog: catalog("main", 0).
				bundle("app", "1.0.0", needsGVK("cert-manager.io", "v1", "Certificate")).
				bundle("cert-manager", "1.12.0", provides("cert-manager.io", "v1", "Certificate")).
				bundle("cert-manager", "1.13.0", provides("cert-manager.io", "v1", "Certificate")),
			problem: Problem{Requirements: []Requirement{require("app")}},
			want:    "app=1.0.0 cert-manager=1.13.0",
		},
		{
			name: "composite package requiring the CRDs of two packages selects both",
			catalog: catalog("main", 0).
				bundle("kubevirt-hyperconverged", "1.17.0",
					provides("hco.kubevirt.io", "v1beta1", "HyperConverged"),
					needsGVK("kubevirt.io", "v1", "KubeVirt"),
					needsGVK("cdi.kubevirt.io", "v1beta1", "CDI")).
				bundle("kubevirt", "1.5.0", provides("kubevirt.io", "v1", "KubeVirt")).
				bundle("kubevirt", "1.6.0", provides("kubevirt.io", "v1", "KubeVirt")).
				bundle("cdi", "1.60.0", provides("cdi.kubevirt.io", "v1beta1", "CDI")).
				bundle("unrelated", "1.0.0", provides("example.com", "v1", "Other")),
			problem: Problem{Requirements: []Requirement{require("kubevirt-hyperconverged")}},
			want:    "kubevirt-hyperconverged=1.17.0 cdi=1.60.0 kubevirt=1.6.0",
		},
		{
			name: "a dependency already installed is reused",
			catalog: catalog("main", 0).
				bundle("app", "1.0.0", needsGVK("example.com", "v1", "Db")).
				bundle("db-a", "1.0.0", provides("example.com", "v1", "Db")).
				bundle("db-b", "9.0.0", provides("example.com", "v1", "Db")),
			problem: Problem{Requirements: []Requirement{require("app")}, Installed: []InstalledBundle{installed("db-a", "1.0.0")}},
			want:    "app=1.0.0 db-a=1.0.0",
		},
		{
			name: "olm.constraint package",
			catalog: catalog("main", 0).
				bundle("a", "1.0.0", olmConstraint(`{"package":{"packageName":"b","versionRange":"<2.0.0"}}`)).
				bundle("b", "1.0.0").bundle("b", "2.0.0"),
			problem: Problem{Requirements: []Requirement{require("a")}},
			want:    "a=1.0.0 b=1.0.0",
		},
		{
			name: "olm.constraint gvk",
			catalog: catalog("main", 0).
				bundle("a", "1.0.0", olmConstraint(`{"gvk":{"group":"example.com","version":"v1","kind":"Blue"}}`)).
				bundle("blue", "1.0.0", provides("example.com", "v1", "Blue")),
			problem: Problem{Requirements: []Requirement{require("a")}},
			want:    "a=1.0.0 blue=1.0.0",
		},
		{
			name: "olm.constraint cel over bundle properties",
			catalog: catalog("main", 0).
				bundle("a", "1.0.0", olmConstraint(`{"failureMessage":"needs a certified bundle","cel":{"rule":"properties.exists(p, p.type == \"certified\")"}}`)).
				bundle("plain", "9.0.0").
				bundle("good", "1.0.0", withProperty("certified", `true`)),
			problem: Problem{Requirements: []Requirement{require("a")}},
			want:    "a=1.0.0 good=1.0.0",
		},
		{
			name: "olm.constraint cel with semver_compare",
			catalog: catalog("main", 0).
				bundle("a", "1.0.0", olmConstraint(`{"cel":{"rule":"properties.exists(p, p.type == \"olm.package\" && p.value.packageName == \"b\" && semver_compare(p.value.version, \"1.5.0\") >= 0)"}}`)).
				bundle("b", "1.0.0").bundle("b", "1.5.0").bundle("b", "1.6.0"),
			problem: Problem{Requirements: []Requirement{requireRange("a", "1.0.0")}},
			want:    "a=1.0.0 b=1.6.0",
		},
		{
			name: "olm.constraint all needs one bundle matching every part",
			catalog: catalog("main", 0).
				bundle("red", "1.0.0", olmConstraint(`{"all":{"constraints":[{"package":{"packageName":"blue","versionRange":">=1.0.0"}},{"gvk":{"group":"blues.example.com","version":"v1","kind":"Blue"}}]}}`)).
				bundle("blue", "1.0.0", provides("blues.example.com", "v1", "Blue")).
				bundle("blue", "2.0.0", provides("blues.example.com", "v2", "Blue")),
			problem: Problem{Requirements: []Requirement{require("red")}},
			want:    "red=1.0.0 blue=1.0.0",
		},
		{
			name: "olm.constraint any",
			catalog: catalog("main", 0).
				bundle("red", "1.0.0", olmConstraint(`{"any":{"constraints":[{"gvk":{"group":"blues.example.com","version":"v1beta1","kind":"Blue"}},{"gvk":{"group":"blues.example.com","version":"v1","kind":"Blue"}}]}}`)).
				bundle("blue", "1.0.0", provides("blues.example.com", "v1", "Blue")),
			problem: Problem{Requirements: []Requirement{require("red")}},
			want:    "red=1.0.0 blue=1.0.0",
		},
		{
			name: "olm.constraint not inside all excludes matching bundles",
			catalog: catalog("main", 0).
				bundle("red", "1.0.0", olmConstraint(`{"all":{"constraints":[{"package":{"packageName":"blue","versionRange":">=1.0.0"}},{"not":{"constraints":[{"gvk":{"group":"blues.example.com","version":"v1beta1","kind":"Blue"}}]}}]}}`)).
				bundle("blue", "1.0.0", provides("blues.example.com", "v1", "Blue")).
				bundle("blue", "2.0.0", provides("blues.example.com", "v1beta1", "Blue")),
			problem: Problem{Requirements: []Requirement{require("red")}},
			want:    "red=1.0.0 blue=1.0.0",
		},
		{
			name: "top-level olm.constraint not is a conflict",
			catalog: catalog("main", 0).
				bundle("red", "1.0.0", olmConstraint(`{"failureMessage":"red and green fight","not":{"constraints":[{"package":{"packageName":"green","versionRange":">=1.0.0"}}]}}`)).
				bundle("green", "1.0.0"),
			problem: Problem{Requirements: []Requirement{require("red"), require("green")}},
			wantErr: `package "red" 1.0.0 cannot be installed together with any bundle matching package "green" in range ">=1.0.0" (olm.constraint: red and green fight) (conflicting: green.v1.0.0 from "main")`,
		},
		{
			name: "top-level olm.constraint not alone is fine",
			catalog: catalog("main", 0).
				bundle("red", "1.0.0", olmConstraint(`{"not":{"constraints":[{"package":{"packageName":"green","versionRange":">=1.0.0"}}]}}`)).
				bundle("green", "1.0.0"),
			problem: Problem{Requirements: []Requirement{require("red")}},
			want:    "red=1.0.0",
		},
		{
			name: "missing package dependency",
			catalog: catalog("main", 0).
				bundle("a", "1.0.0", needsPackage("ghost", ">=1.0.0")),
			problem: Problem{Requirements: []Requirement{require("a")}},
			wantErr: `package "a" 1.0.0 requires package "ghost" in range ">=1.0.0", but no catalog has package "ghost"`,
		},
		{
			name: "package dependency out of range",
			catalog: catalog("main", 0).
				bundle("a", "1.0.0", needsPackage("b", ">=3.0.0")).
				bundle("b", "1.0.0").bundle("b", "2.0.0"),
			problem: Problem{Requirements: []Requirement{require("a")}},
			wantErr: `package "a" 1.0.0 requires package "b" in range ">=3.0.0", but no version of "b" is in that range (available: 2.0.0, 1.0.0)`,
		},
		{
			name: "missing GVK in every bundle of the package",
			catalog: catalog("main", 0).
				bundle("a", "1.0.0", needsGVK("cert-manager.io", "v1", "Issuer")).
				bundle("a", "1.1.0", needsGVK("cert-manager.io", "v1", "Issuer")),
			problem: Problem{Requirements: []Requirement{require("a")}},
			wantErr: `package "a" (1.1.0, 1.0.0) requires the API cert-manager.io/v1 Issuer, but no bundle in the catalogs provides it`,
		},
		{
			name: "cel constraint that nothing matches shows its failure message",
			catalog: catalog("main", 0).
				bundle("a", "1.0.0", olmConstraint(`{"failureMessage":"needs a certified bundle","cel":{"rule":"properties.exists(p, p.type == \"certified\")"}}`)),
			problem: Problem{Requirements: []Requirement{require("a")}},
			wantErr: `package "a" 1.0.0 requires a bundle matching cel rule "properties.exists(p, p.type == \"certified\")" (olm.constraint: needs a certified bundle), but no bundle in the catalogs matches it`,
		},
		{
			name: "invalid cel rule",
			catalog: catalog("main", 0).
				bundle("a", "1.0.0", olmConstraint(`{"cel":{"rule":"properties.exists(p, "}}`)),
			problem: Problem{Requirements: []Requirement{require("a")}},
			wantErr: `but the constraint is invalid: cel rule`,
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

func TestDependencyReportsWhoNeedsIt(t *testing.T) {
	idx := index(t, catalog("main", 0).
		bundle("a", "1.0.0", needsPackage("c", ">=1.0.0")).
		bundle("b", "1.0.0", needsPackage("c", ">=1.0.0")).
		bundle("c", "1.0.0"))
	res, err := Resolve(t.Context(), idx, Problem{Requirements: []Requirement{require("a"), require("b")}})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Package("c")
	if c == nil || c.Reason != SelectedDependency {
		t.Fatalf("c: got %+v, want a dependency", c)
	}
	if got := strings.Join(c.RequiredBy, ","); got != "a.v1.0.0,b.v1.0.0" {
		t.Fatalf("c required by %q, want a.v1.0.0,b.v1.0.0", got)
	}
	if a := res.Package("a"); a.Reason != SelectedRequired || a.Image != "example.com/a:1.0.0" || a.BundleInfo() == nil {
		t.Fatalf("a: got %+v", a)
	}
}
