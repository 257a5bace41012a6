package olm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/olmv1/olmv1/deppy/pkg/resolve"
)

// TestDependencyCycles: catalogs whose bundles need each other in a cycle. A satisfiable cycle
// installs every member; an unsatisfiable one is explained with the requirement that fails and
// the packages of the cycle, in order.
func TestDependencyCycles(t *testing.T) {
	tests := []struct {
		name    string
		catalog *catalogBuilder
		problem Problem
		want    string   // chosen bundles; empty when no solution is expected
		summary []string // the summary must equal these sentences, in order
	}{
		{
			name:    "two packages require each other",
			catalog: catalog("main", 0).bundle("a", "1.0.0", needsPackage("b", ">=1.0.0")).bundle("b", "1.0.0", needsPackage("a", ">=1.0.0")),
			problem: Problem{Requirements: []Requirement{require("a")}},
			want:    "a=1.0.0 b=1.0.0",
		},
		{
			name: "two packages require each other's API",
			catalog: catalog("main", 0).
				bundle("a", "1.0.0", provides("a.example.com", "v1", "A"), needsGVK("b.example.com", "v1", "B")).
				bundle("b", "1.0.0", provides("b.example.com", "v1", "B"), needsGVK("a.example.com", "v1", "A")),
			problem: Problem{Requirements: []Requirement{require("a")}},
			want:    "a=1.0.0 b=1.0.0",
		},
		{
			name: "a package and an API in one cycle",
			catalog: catalog("main", 0).
				bundle("a", "1.0.0", provides("a.example.com", "v1", "A"), needsPackage("b", ">=1.0.0")).
				bundle("b", "1.0.0", olmConstraint(`{"gvk":{"group":"a.example.com","version":"v1","kind":"A"}}`)),
			problem: Problem{Requirements: []Requirement{require("b")}},
			want:    "b=1.0.0 a=1.0.0",
		},
		{
			name: "three packages in a ring, several versions each",
			catalog: catalog("main", 0).
				bundle("a", "1.0.0", needsPackage("b", ">=1.0.0")).bundle("a", "1.1.0", needsPackage("b", ">=1.1.0")).
				bundle("b", "1.0.0", needsPackage("c", ">=1.0.0")).bundle("b", "1.1.0", needsPackage("c", ">=1.0.0")).
				bundle("c", "1.0.0", needsPackage("a", ">=1.0.0")),
			problem: Problem{Requirements: []Requirement{require("a")}},
			want:    "a=1.1.0 b=1.1.0 c=1.0.0",
		},
		{
			name:    "a bundle requiring its own package",
			catalog: catalog("main", 0).bundle("a", "1.0.0", needsPackage("a", ">=1.0.0")),
			problem: Problem{Requirements: []Requirement{require("a")}},
			want:    "a=1.0.0",
		},
		{
			name:    "a bundle requiring the API it provides",
			catalog: catalog("main", 0).bundle("a", "1.0.0", provides("a.example.com", "v1", "A"), needsGVK("a.example.com", "v1", "A")),
			problem: Problem{Requirements: []Requirement{require("a")}},
			want:    "a=1.0.0",
		},
		{
			name:    "the cycle closes on a range nothing matches",
			catalog: catalog("main", 0).bundle("a", "1.0.0", needsPackage("b", ">=1.0.0")).bundle("b", "1.0.0", needsPackage("a", ">=2.0.0")),
			problem: Problem{Requirements: []Requirement{require("a")}},
			summary: []string{
				`package "b" 1.0.0 requires package "a" in range ">=2.0.0", but no version of "a" is in that range (available: 1.0.0)`,
				`packages "a" and "b" depend on each other in a cycle: "a" → "b" → "a"`,
			},
		},
		{
			name: "a three-package cycle closes on a range nothing matches",
			catalog: catalog("main", 0).
				bundle("a", "1.0.0", needsPackage("b", ">=1.0.0")).bundle("a", "1.1.0", needsPackage("b", ">=1.0.0")).
				bundle("b", "1.0.0", needsPackage("c", ">=1.0.0")).
				bundle("c", "1.0.0", needsPackage("a", ">=3.0.0")),
			problem: Problem{Requirements: []Requirement{require("a")}},
			summary: []string{
				`package "c" 1.0.0 requires package "a" in range ">=3.0.0", but no version of "a" is in that range (available: 1.1.0, 1.0.0)`,
				`packages "a", "b" and "c" depend on each other in a cycle: "a" → "b" → "c" → "a"`,
			},
		},
		{
			name:    "a bundle requiring a version of its own package that does not exist",
			catalog: catalog("main", 0).bundle("a", "1.0.0", needsPackage("a", ">=2.0.0")),
			problem: Problem{Requirements: []Requirement{require("a")}},
			summary: []string{
				`package "a" 1.0.0 requires package "a" in range ">=2.0.0", but no version of "a" is in that range (available: 1.0.0)`,
				`package "a" depends on itself`,
			},
		},
		{
			name: "the cycle needs another version of the requested package",
			catalog: catalog("main", 0).
				bundle("a", "1.0.0", needsPackage("b", ">=1.0.0")).bundle("a", "2.0.0", needsPackage("b", ">=1.0.0")).
				bundle("b", "1.0.0", needsPackage("a", ">=2.0.0")),
			problem: Problem{Requirements: []Requirement{requireRange("a", "1.0.0")}},
			summary: []string{
				`the request requires package "a" in range "1.0.0", but package "b" 1.0.0 requires package "a" in range ">=2.0.0"`,
				`packages "a" and "b" depend on each other in a cycle: "a" → "b" → "a"`,
			},
		},
		{
			name: "an API cycle needs another version of the requested package",
			catalog: catalog("main", 0).
				bundle("a", "1.0.0", needsGVK("b.example.com", "v1", "B")).
				bundle("a", "2.0.0", provides("a.example.com", "v1", "A"), needsGVK("b.example.com", "v1", "B")).
				bundle("b", "1.0.0", provides("b.example.com", "v1", "B"), needsGVK("a.example.com", "v1", "A")),
			problem: Problem{Requirements: []Requirement{requireRange("a", "1.0.0")}},
			summary: []string{
				`the request requires package "a" in range "1.0.0", but package "b" 1.0.0 requires the API a.example.com/v1 A`,
				`packages "a" and "b" depend on each other in a cycle: "a" → "b" → "a"`,
			},
		},
		{
			name: "a member of a satisfiable cycle needs something missing",
			catalog: catalog("main", 0).
				bundle("a", "1.0.0", needsPackage("b", ">=1.0.0")).
				bundle("b", "1.0.0", needsPackage("c", ">=1.0.0")).
				bundle("c", "1.0.0", needsPackage("a", ">=1.0.0"), needsPackage("d", ">=5.0.0")).
				bundle("d", "1.0.0"),
			problem: Problem{Requirements: []Requirement{require("a")}},
			// The cycle itself holds (c's requirement of a is met), so it is not named as a cause; the
			// chain that leads to the failing bundle is.
			summary: []string{
				`package "c" 1.0.0 requires package "d" in range ">=5.0.0", but no version of "d" is in that range (available: 1.0.0)`,
				`package "c" is needed through "a" → "b" → "c"`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ns := outcome(t, index(t, tt.catalog), tt.problem)
			if tt.summary == nil {
				if ns != nil {
					t.Fatalf("unexpected error: %s", ns.Details())
				}
				if got != tt.want {
					t.Fatalf("got %q, want %q", got, tt.want)
				}
				return
			}
			if ns == nil {
				t.Fatalf("got %s, want no solution", got)
			}
			t.Log(ns.Error())
			if g, w := strings.Join(ns.Summary, "\n"), strings.Join(tt.summary, "\n"); g != w {
				t.Fatalf("summary:\n%s\nwant:\n%s", g, w)
			}
			if !strings.HasPrefix(ns.Error(), "no solution: "+tt.summary[0]) {
				t.Fatalf("Error() = %q, want it to start with the first sentence of the summary", ns.Error())
			}
		})
	}
}

// ring builds n packages p0 … p(n-1) with m versions each, where every version v of p(i) requires
// p(i+1) (p(n-1) requires p0): in version v exactly, or, with shift, p(n-1) version v requires
// p0 in version v+1, which makes the ring unsatisfiable; with anyVersion, in any version.
func ring(n, m int, shift, anyVersion bool) *catalogBuilder {
	c := catalog("main", 0)
	for i := 0; i < n; i++ {
		for v := 0; v < m; v++ {
			want := v
			if shift && i == n-1 {
				want = v + 1
			}
			rng := fmt.Sprintf("=%d.0.0", want)
			if anyVersion {
				rng = ">=0.0.0"
			}
			c.bundle(fmt.Sprintf("p%d", i), fmt.Sprintf("%d.0.0", v), needsPackage(fmt.Sprintf("p%d", (i+1)%n), rng))
		}
	}
	return c
}

// TestLargeDependencyCycles: rings of 60 packages with 40 versions each resolve (every member,
// in the highest version) or are explained, naming the ring, well within a reconcile's budget.
// The bound is generous (about 100 times what it takes on a shared 2-core machine): it catches
// a walk that loops or explodes, not a slow machine.
func TestLargeDependencyCycles(t *testing.T) {
	const bound = 20 * time.Second
	for _, tt := range []struct {
		name              string
		shift, anyVersion bool
	}{
		{name: "aligned versions"},
		{name: "any version", anyVersion: true},
		{name: "shifted versions", shift: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			idx := index(t, ring(60, 40, tt.shift, tt.anyVersion))
			ctx, cancel := context.WithTimeout(t.Context(), bound)
			defer cancel()
			start := time.Now()
			res, err := Resolve(ctx, idx, Problem{Requirements: []Requirement{require("p0")}})
			took := time.Since(start)
			t.Logf("resolved in %v", took)
			if took > bound {
				t.Fatalf("resolution took %v, more than %v", took, bound)
			}
			if !tt.shift {
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Selections) != 60 {
					t.Fatalf("got %d selections, want the 60 members of the ring: %s", len(res.Selections), chosen(res))
				}
				for _, s := range res.Selections {
					if s.Version != "39.0.0" {
						t.Fatalf("%s: got %s, want the highest version 39.0.0", s.Package, s.Version)
					}
				}
				return
			}
			var ns *resolve.NotSatisfiableError
			if !errors.As(err, &ns) {
				t.Fatalf("got %v, want no solution", err)
			}
			want := []string{
				`package "p59" 39.0.0 requires package "p0" in range "=40.0.0", but no version of "p0" is in that range (available: 39.0.0, 38.0.0, 37.0.0, 36.0.0, 35.0.0, 34.0.0, 33.0.0, 32.0.0, 31.0.0, 30.0.0, …)`,
				`packages "p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9" and 50 more depend on each other in a cycle: "p0" → "p1" → "p2" → "p3" → "p4" → "p5" → "p6" → "p7" → "p8" → … (50 more) → "p59" → "p0"`,
			}
			if g, w := strings.Join(ns.Summary, "\n"), strings.Join(want, "\n"); g != w {
				t.Fatalf("summary:\n%s\nwant:\n%s", g, w)
			}
		})
	}
}

// TestCycleGraphWalks checks the graph code behind cycle explanations on graphs with several
// cycles, self loops and long chains: every walk ends, and finds what it should.
func TestCycleGraphWalks(t *testing.T) {
	build := func(edges ...[2]string) *packageGraph {
		g := &packageGraph{index: map[string]int{}, seen: map[[2]int]bool{}}
		for _, e := range edges {
			g.edge(e[0], e[1])
		}
		return g
	}
	render := func(g *packageGraph) string {
		var parts []string
		for _, comp := range g.cyclicComponents() {
			parts = append(parts, g.renderPath(g.shortestCycle(comp)))
		}
		return strings.Join(parts, " | ")
	}
	long := make([][2]string, 0, 5000)
	for i := 0; i < 5000; i++ {
		long = append(long, [2]string{fmt.Sprint("n", i), fmt.Sprint("n", (i+1)%5000)})
	}
	tests := []struct {
		name  string
		edges [][2]string
		want  string
	}{
		{name: "no cycle", edges: [][2]string{{"a", "b"}, {"b", "c"}, {"a", "c"}}, want: ""},
		{name: "self loop", edges: [][2]string{{"a", "a"}, {"a", "b"}}, want: `"a" → "a"`},
		{name: "two cycles apart", edges: [][2]string{{"a", "b"}, {"b", "a"}, {"c", "d"}, {"d", "c"}, {"b", "c"}}, want: `"a" → "b" → "a" | "c" → "d" → "c"`},
		{name: "two cycles through one package: the shortest is shown", edges: [][2]string{{"a", "b"}, {"b", "c"}, {"c", "a"}, {"a", "d"}, {"d", "a"}}, want: `"a" → "d" → "a"`},
		{name: "a chain into a cycle", edges: [][2]string{{"x", "y"}, {"y", "a"}, {"a", "b"}, {"b", "a"}}, want: `"a" → "b" → "a"`},
		{name: "a ring of 5000 packages", edges: long, want: `"n0" → "n1" → "n2" → "n3" → "n4" → "n5" → "n6" → "n7" → "n8" → … (4990 more) → "n4999" → "n0"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := render(build(tt.edges...)); got != tt.want {
				t.Fatalf("got %s\nwant %s", got, tt.want)
			}
		})
	}

	// dependencyChains walks bundles; a cycle among them must not keep it going.
	a := &Bundle{Package: "a", Name: "a.v1"}
	b := &Bundle{Package: "b", Name: "b.v1"}
	c := &Bundle{Package: "c", Name: "c.v1"}
	chains := dependencyChains([]*Reason{
		{Kind: ReasonRequired, Candidates: []*Bundle{a}},
		{Kind: ReasonPackageDependency, From: a, Candidates: []*Bundle{b}},
		{Kind: ReasonPackageDependency, From: b, Candidates: []*Bundle{c}},
		{Kind: ReasonPackageDependency, From: c, Candidates: []*Bundle{a, b}},
	})
	if got := fmt.Sprint(chains[a], chains[b], chains[c]); got != "[] [a b] [a b c]" {
		t.Fatalf("chains: got %s, want [] [a b] [a b c]", got)
	}
}
