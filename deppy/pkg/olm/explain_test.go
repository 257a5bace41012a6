package olm

import (
	"strings"
	"testing"
)

// seed is the example of the project brief: A requires B 1.2.0, B requires
// C 1.3.0, and C 1.4.0 is installed.
func seed(cRange string) *catalogBuilder {
	return catalog("main", 0).
		bundle("a", "1.0.0", needsPackage("b", "1.2.0")).
		bundle("b", "1.1.0").
		bundle("b", "1.2.0", needsPackage("c", cRange)).
		bundle("c", "1.3.0").
		bundle("c", "1.4.0")
}

func TestExplanations(t *testing.T) {
	tests := []struct {
		name    string
		catalog *catalogBuilder
		problem Problem
		// summary must contain every fragment
		summary []string
		// reasons must contain every fragment (in any reason)
		reasons []string
	}{
		{
			name:    "seed: installed package may not be downgraded",
			catalog: seed("1.3.0"),
			problem: Problem{Requirements: []Requirement{require("a")}, Installed: []InstalledBundle{installed("c", "1.4.0")}},
			summary: []string{`package "b" 1.2.0 requires package "c" in range "1.3.0", but package "c" 1.4.0 is installed and may not be downgraded`},
			reasons: []string{
				`the request requires package "a" (candidates: a.v1.0.0 from "main")`,
				`package "a" 1.0.0 requires package "b" in range "1.2.0" (candidates: b.v1.2.0 from "main")`,
				`package "c" 1.4.0 (bundle c.v1.4.0) is installed; upgrade policy Enforce allows only it`,
				`only one bundle of package "c" can be installed`,
			},
		},
		{
			name:    "seed with a range",
			catalog: seed(">=1.3.0 <1.4.0"),
			problem: Problem{Requirements: []Requirement{{Name: "my-a", Package: "a"}}, Installed: []InstalledBundle{installed("c", "1.4.0")}},
			summary: []string{`package "b" 1.2.0 requires package "c" in range ">=1.3.0 <1.4.0", but package "c" 1.4.0 is installed and may not be downgraded`},
			reasons: []string{`Operator "my-a" requires package "a"`},
		},
		{
			name:    "two requirements disagree on a shared dependency",
			catalog: catalog("main", 0).bundle("a", "1.0.0", needsPackage("c", "<2.0.0")).bundle("b", "1.0.0", needsPackage("c", ">=2.0.0")).bundle("c", "1.0.0").bundle("c", "2.0.0"),
			problem: Problem{Requirements: []Requirement{require("a"), require("b")}},
			summary: []string{`package "a" 1.0.0 requires package "c" in range "<2.0.0", but package "b" 1.0.0 requires package "c" in range ">=2.0.0"`},
		},
		{
			name:    "two packages provide the same API",
			catalog: catalog("main", 0).bundle("x", "1.0.0", provides("example.com", "v1", "Widget")).bundle("y", "1.0.0", provides("example.com", "v1", "Widget")),
			problem: Problem{Requirements: []Requirement{{Name: "op-x", Package: "x"}, {Name: "op-y", Package: "y"}}},
			summary: []string{`only one bundle may provide the API example.com/v1 Widget, but Operator "op-x" requires package "x" and Operator "op-y" requires package "y"`},
			reasons: []string{`only one bundle may provide the API example.com/v1 Widget (candidates: x.v1.0.0 from "main", y.v1.0.0 from "main")`},
		},
		{
			name:    "two requirements of one package",
			catalog: catalog("main", 0).bundle("x", "1.0.0").bundle("x", "2.0.0"),
			problem: Problem{Requirements: []Requirement{{Name: "one", Package: "x", VersionRange: "1.0.0"}, {Name: "two", Package: "x", VersionRange: "2.0.0"}}},
			summary: []string{`Operator "one" requires package "x" in range "1.0.0", but Operator "two" requires package "x" in range "2.0.0"`},
		},
		{
			name:    "installed package blocks a jump",
			catalog: catalog("main", 0).bundle("x", "1.0.0").bundle("x", "1.1.0").bundle("x", "2.0.0"),
			problem: Problem{Requirements: []Requirement{requireRange("x", ">=2.0.0")}, Installed: []InstalledBundle{installed("x", "1.0.0")}},
			summary: []string{`the request requires package "x" in range ">=2.0.0", but package "x" 1.0.0 is installed and may only be upgraded along the catalogs' upgrade edges (to 1.1.0)`},
		},
		{
			name:    "unknown package",
			catalog: catalog("main", 0).bundle("x", "1.0.0"),
			problem: Problem{Requirements: []Requirement{require("y")}},
			summary: []string{`the request requires package "y", but no catalog has package "y" (catalogs: "main")`},
		},
		{
			name:    "missing API",
			catalog: catalog("main", 0).bundle("x", "1.0.0", needsGVK("cert-manager.io", "v1", "Issuer")),
			problem: Problem{Requirements: []Requirement{require("x")}},
			summary: []string{`package "x" 1.0.0 requires the API cert-manager.io/v1 Issuer, but no bundle in the catalogs provides it`},
		},
		{
			name:    "constraint conflict",
			catalog: catalog("main", 0).bundle("red", "1.0.0", olmConstraint(`{"not":{"constraints":[{"gvk":{"group":"example.com","version":"v1","kind":"Green"}}]}}`)).bundle("green", "1.0.0", provides("example.com", "v1", "Green")),
			problem: Problem{Requirements: []Requirement{require("red"), require("green")}},
			summary: []string{`package "red" 1.0.0 cannot be installed together with any bundle matching the API example.com/v1 Green (conflicting: green.v1.0.0 from "main")`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ns := outcome(t, index(t, tt.catalog), tt.problem)
			if ns == nil {
				t.Fatalf("got %s, want no solution", got)
			}
			t.Log(ns.Details())
			summary := strings.Join(ns.Summary, "\n")
			for _, want := range tt.summary {
				if !strings.Contains(summary, want) {
					t.Errorf("summary:\n%s\ndoes not contain:\n%s", summary, want)
				}
			}
			reasons := strings.Join(ns.Reasons(), "\n")
			for _, want := range tt.reasons {
				if !strings.Contains(reasons, want) {
					t.Errorf("reasons:\n%s\ndo not contain:\n%s", reasons, want)
				}
			}
			if !strings.HasPrefix(ns.Error(), "no solution: ") {
				t.Errorf("Error() = %q, want it to start with the summary", ns.Error())
			}
		})
	}
}

func TestSeedExampleWithIgnoreDowngrades(t *testing.T) {
	idx := index(t, seed("1.3.0"))
	ib := installed("c", "1.4.0")
	ib.UpgradePolicy = Ignore
	got, ns := outcome(t, idx, Problem{Requirements: []Requirement{require("a")}, Installed: []InstalledBundle{ib}})
	if ns != nil {
		t.Fatalf("unexpected error: %s", ns.Details())
	}
	if got != "a=1.0.0 c=1.3.0 b=1.2.0" {
		t.Fatalf("got %q, want a=1.0.0 c=1.3.0 b=1.2.0", got)
	}
}
