package resolve

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// chainProblem is a mandatory variable at the head of a chain of n links whose last variable is
// prohibited: the conflict has n+1 dependency links, one mandatory and one prohibition.
func chainProblem(t *testing.T, n int) *NotSatisfiableError {
	t.Helper()
	vars := []*Variable{v("x0", Mandatory(), Dependency("x1"))}
	for i := 1; i < n; i++ {
		vars = append(vars, v(fmt.Sprint("x", i), Dependency(Identifier(fmt.Sprint("x", i+1)))))
	}
	vars = append(vars, v(fmt.Sprint("x", n), Prohibited().WithMessage("the end of the chain is blocked")))
	set, err := NewVariables(vars...)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Solve(set)
	var ns *NotSatisfiableError
	if !errors.As(err, &ns) {
		t.Fatalf("got %v, want no solution", err)
	}
	return ns
}

func TestShortlistKeepsFailuresOverLinks(t *testing.T) {
	ns := chainProblem(t, 30)
	all := ns.Reasons()
	if len(all) != 32 {
		t.Fatalf("got %d reasons, want 32: %v", len(all), all)
	}

	// The prohibition first, then what is mandatory, then the links in problem order (x0's
	// dependency comes first); what is kept keeps the order of Reasons.
	got, more := ns.Shortlist(3, nil)
	want := inOrder(all, "x0 is mandatory", "x0 requires at least one of x1", "the end of the chain is blocked")
	if strings.Join(got, "|") != strings.Join(want, "|") || more != 29 {
		t.Fatalf("Shortlist(3) = %q, %d more; want %q, 29 more", got, more, want)
	}

	got, more = ns.Shortlist(1, nil)
	if len(got) != 1 || got[0] != "the end of the chain is blocked" || more != 31 {
		t.Fatalf("Shortlist(1) = %q, %d more; want the prohibition, 31 more", got, more)
	}

	got, more = ns.Shortlist(100, nil)
	if strings.Join(got, "|") != strings.Join(all, "|") || more != 0 {
		t.Fatalf("Shortlist(100) = %d reasons, %d more; want all %d in order", len(got), more, len(all))
	}

	omit := func(r string) bool { return r == "the end of the chain is blocked" }
	got, more = ns.Shortlist(2, omit)
	want = inOrder(all, "x0 is mandatory", "x0 requires at least one of x1")
	if strings.Join(got, "|") != strings.Join(want, "|") || more != 29 {
		t.Fatalf("Shortlist(2, omit) = %q, %d more; want %q, 29 more", got, more, want)
	}
}

// inOrder returns the members of some in the order they have in all.
func inOrder(all []string, some ...string) []string {
	in := map[string]bool{}
	for _, s := range some {
		in[s] = true
	}
	var out []string
	for _, s := range all {
		if in[s] {
			out = append(out, s)
		}
	}
	return out
}
