package resolve

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func v(id string, cs ...Constraint) *Variable { return NewVariable(Identifier(id), nil, cs...) }

func selectedIDs(s *Solution) string {
	ids := make([]string, 0, len(s.Selected()))
	for _, v := range s.Selected() {
		ids = append(ids, string(v.ID))
	}
	return strings.Join(ids, " ")
}

func TestSolveConstraints(t *testing.T) {
	tests := []struct {
		name string
		vars []*Variable
		want string // selected ids; empty with wantReasons set means no solution
		// wantReasons are fragments that must appear in the reasons.
		wantReasons []string
	}{
		{name: "mandatory", vars: []*Variable{v("a", Mandatory()), v("b")}, want: "a"},
		{name: "nothing mandatory selects nothing", vars: []*Variable{v("a"), v("b", Dependency("a"))}, want: ""},
		{name: "prohibited", vars: []*Variable{v("a", Mandatory(), Prohibited())}, wantReasons: []string{"a is prohibited", "a is mandatory"}},
		{name: "not is prohibited", vars: []*Variable{v("a", Mandatory(), Not())}, wantReasons: []string{"a is prohibited"}},
		{name: "dependency prefers the first candidate", vars: []*Variable{v("a", Mandatory(), Dependency("b", "c")), v("b"), v("c")}, want: "a b"},
		{name: "dependency falls back", vars: []*Variable{v("a", Mandatory(), Dependency("b", "c")), v("b", Prohibited()), v("c")}, want: "a c"},
		{name: "dependency chains", vars: []*Variable{v("a", Mandatory(), Dependency("b")), v("b", Dependency("c")), v("c")}, want: "a b c"},
		{name: "dependency without candidates", vars: []*Variable{v("a", Mandatory(), Dependency())}, wantReasons: []string{"a has a dependency that nothing can satisfy"}},
		{name: "dependency whose candidates are all prohibited", vars: []*Variable{v("a", Mandatory(), Dependency("b")), v("b", Prohibited())},
			wantReasons: []string{"a requires at least one of b", "b is prohibited"}},
		{name: "conflict steers a choice", vars: []*Variable{v("a", Mandatory(), Dependency("b", "c")), v("b", Conflict("d")), v("c"), v("d", Mandatory())}, want: "a c d"},
		{name: "conflict", vars: []*Variable{v("a", Mandatory(), Conflict("b")), v("b", Mandatory())}, wantReasons: []string{"a conflicts with b"}},
		{name: "atMost holds", vars: []*Variable{v("a", Mandatory()), v("b"), v("one", AtMost(1, "a", "b"))}, want: "a"},
		{name: "atMost violated", vars: []*Variable{v("a", Mandatory()), v("b", Mandatory()), v("one", AtMost(1, "a", "b"))}, wantReasons: []string{"one permits at most 1 of a, b"}},
		{name: "atMost steers a choice", vars: []*Variable{v("x", Mandatory(), Dependency("a", "b")), v("a"), v("b"), v("y", Mandatory(), Dependency("b")), v("one", AtMost(1, "a", "b"))}, want: "x b y"},
		{name: "atMost bound above the count always holds", vars: []*Variable{v("a", Mandatory()), v("n", AtMost(3, "a"))}, want: "a"},
		{name: "or forces the operand", vars: []*Variable{v("a", Prohibited(), Or("b", false, false)), v("b")}, want: "b"},
		{name: "or as implication", vars: []*Variable{v("a", Mandatory(), Or("b", true, false)), v("b")}, want: "a b"},
		{name: "or as not-both", vars: []*Variable{v("a", Mandatory(), Or("b", true, true)), v("b", Mandatory())}, wantReasons: []string{"not a or not b"}},
		{name: "or with a negated operand", vars: []*Variable{v("a", Prohibited(), Or("b", false, true)), v("b", Mandatory())}, wantReasons: []string{"a or not b"}},
		{name: "custom messages explain", vars: []*Variable{v("a", Mandatory().WithMessage("the admin asked for a"), Conflict("b").WithMessage("a and b share a port")), v("b", Mandatory())},
			wantReasons: []string{"the admin asked for a", "a and b share a port"}},
		{name: "unneeded variables stay unselected", vars: []*Variable{v("a", Mandatory(), Dependency("b")), v("b"), v("c"), v("d", Dependency("c"))}, want: "a b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars, err := NewVariables(tt.vars...)
			if err != nil {
				t.Fatal(err)
			}
			sol, err := Solve(vars)
			if len(tt.wantReasons) > 0 {
				var ns *NotSatisfiableError
				if !errors.As(err, &ns) {
					t.Fatalf("got %v, want a NotSatisfiableError", err)
				}
				reasons := strings.Join(ns.Reasons(), "\n")
				for _, want := range tt.wantReasons {
					if !strings.Contains(reasons, want) {
						t.Errorf("reasons:\n%s\ndo not contain %q", reasons, want)
					}
				}
				if !strings.HasPrefix(ns.Error(), "no solution: ") || !strings.Contains(ns.Details(), "because:") {
					t.Errorf("unexpected rendering: %q / %q", ns.Error(), ns.Details())
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if got := selectedIDs(sol); got != tt.want {
				t.Fatalf("selected %q, want %q", got, tt.want)
			}
			for _, v := range sol.Selected() {
				if !sol.IsSelected(v.ID) {
					t.Errorf("IsSelected(%q) is false", v.ID)
				}
			}
		})
	}
}

func TestSolveRejectsBadInput(t *testing.T) {
	tests := []struct {
		name string
		vars []*Variable
		want string
	}{
		{name: "unknown reference", vars: []*Variable{v("a", Dependency("ghost"))}, want: `variable "a": dependency constraint refers to unknown variable "ghost"`},
		{name: "conflict arity", vars: []*Variable{v("a", Constraint{Kind: KindConflict})}, want: "conflict constraint takes exactly one identifier"},
		{name: "negative atMost", vars: []*Variable{v("a", AtMost(-1))}, want: "atMost constraint needs n >= 0"},
		{name: "unknown kind", vars: []*Variable{v("a", Constraint{Kind: "sometimes"})}, want: `unknown constraint kind "sometimes"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars, err := NewVariables(tt.vars...)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Solve(vars); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
	if _, err := NewVariables(v("a"), v("a")); err == nil || !strings.Contains(err.Error(), `duplicate variable "a"`) {
		t.Fatalf("duplicate: got %v", err)
	}
}

func TestResolverRunsPipelineAndExplainer(t *testing.T) {
	var seen []string
	p := Pipeline{
		StaticVariables("base", v("app", Mandatory(), Dependency("db-2", "db-1")), v("db-1"), v("db-2")),
		NewSource("forbid-db-2", func(_ context.Context, vars *Variables) error {
			seen = append(seen, "forbid-db-2 saw "+string(rune('0'+vars.Len())))
			vars.Get("db-2").Add(Prohibited())
			return nil
		}),
	}
	sol, err := (&Resolver{Pipeline: p}).Resolve(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got := selectedIDs(sol); got != "app db-1" {
		t.Fatalf("selected %q, want app db-1", got)
	}
	if len(seen) != 1 || seen[0] != "forbid-db-2 saw 3" {
		t.Fatalf("stage saw %v", seen)
	}

	p = append(p, StaticVariables("forbid-db-1", v("block", Mandatory(), Conflict("db-1"))))
	explainer := ExplainerFunc(func(causes []Cause) []string {
		return []string{"no database is allowed"}
	})
	_, err = (&Resolver{Pipeline: p, Explainer: explainer}).Resolve(t.Context())
	var ns *NotSatisfiableError
	if !errors.As(err, &ns) || ns.Error() != "no solution: no database is allowed" {
		t.Fatalf("got %v, want the explainer's summary", err)
	}
	if len(ns.Causes) == 0 {
		t.Fatal("no causes")
	}
}

func TestPipelineStageErrorsNameTheStage(t *testing.T) {
	p := Pipeline{StaticVariables("first", v("a")), StaticVariables("again", v("a"))}
	_, err := p.Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), `variable source "again": duplicate variable "a"`) {
		t.Fatalf("got %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := p.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: got %v", err)
	}
}

func TestPipelineIsConfigurable(t *testing.T) {
	s := func(name string) VariableSource { return StaticVariables(name) }
	p := Pipeline{s("a"), s("b"), s("c")}
	tests := []struct {
		name string
		got  func() (Pipeline, error)
		want string
	}{
		{"insert first", func() (Pipeline, error) { return p.Insert("", s("x")) }, "x a b c"},
		{"insert after", func() (Pipeline, error) { return p.Insert("b", s("x")) }, "a b x c"},
		{"insert last", func() (Pipeline, error) { return p.Insert("c", s("x")) }, "a b c x"},
		{"replace", func() (Pipeline, error) { return p.Replace("b", s("x")) }, "a x c"},
		{"without", func() (Pipeline, error) { return p.Without("a") }, "b c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.got()
			if err != nil {
				t.Fatal(err)
			}
			if names := strings.Join(got.Names(), " "); names != tt.want {
				t.Fatalf("got %q, want %q", names, tt.want)
			}
			if names := strings.Join(p.Names(), " "); names != "a b c" {
				t.Fatalf("original pipeline changed to %q", names)
			}
		})
	}
	for _, f := range []func() (Pipeline, error){
		func() (Pipeline, error) { return p.Insert("nope", s("x")) },
		func() (Pipeline, error) { return p.Replace("nope", s("x")) },
		func() (Pipeline, error) { return p.Without("nope") },
	} {
		if _, err := f(); err == nil || !strings.Contains(err.Error(), `no stage "nope"`) {
			t.Errorf("got %v, want a no-stage error", err)
		}
	}
}
