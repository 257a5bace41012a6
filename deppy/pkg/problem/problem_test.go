package problem

import (
	"errors"
	"strings"
	"testing"

	"github.com/olmv1/olmv1/deppy/pkg/resolve"
)

const example = `
variables:
  - id: app
    constraints:
      - mandatory: true
      - dependency: [db-v2, db-v1]
  - id: db-v2
    constraints:
      - conflict: legacy
  - id: db-v1
  - id: legacy
    constraints:
      - mandatory: true
        message: legacy must stay installed
  - id: one-db
    constraints:
      - atMost: {max: 1, ids: [db-v1, db-v2]}
  - id: extra
    constraints:
      - or: {id: app, negateSubject: true}
      - not: true
`

func TestParseAndSolve(t *testing.T) {
	vars, err := Parse([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	sol, err := resolve.Solve(vars)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, v := range sol.Selected() {
		ids = append(ids, string(v.ID))
	}
	if got := strings.Join(ids, " "); got != "app db-v1 legacy" {
		t.Fatalf("selected %q, want app db-v1 legacy", got)
	}
}

func TestParseJSONAndExplain(t *testing.T) {
	vars, err := Parse([]byte(`{"variables":[
		{"id":"a","constraints":[{"mandatory":true},{"dependency":["b"]}]},
		{"id":"b","constraints":[{"prohibited":true,"message":"b is blocked by policy"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = resolve.Solve(vars)
	var ns *resolve.NotSatisfiableError
	if !errors.As(err, &ns) {
		t.Fatalf("got %v, want no solution", err)
	}
	reasons := strings.Join(ns.Reasons(), "\n")
	for _, want := range []string{"a is mandatory", "a requires at least one of b", "b is blocked by policy"} {
		if !strings.Contains(reasons, want) {
			t.Errorf("reasons %q lack %q", reasons, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", ``, "no variables"},
		{"unknown field", "variables:\n- id: a\n  colour: red\n", "unknown field"},
		{"missing id", "variables:\n- constraints: [{mandatory: true}]\n", "variables[0]: missing id"},
		{"two constraints in one entry", "variables:\n- id: a\n  constraints: [{mandatory: true, prohibited: true}]\n", "2 constraints in one entry"},
		{"no constraint in an entry", "variables:\n- id: a\n  constraints: [{message: hi}]\n", "no constraint"},
		{"undeclared reference", "variables:\n- id: a\n  constraints: [{dependency: [b]}]\n", `refers to unknown variable "b"`},
		{"duplicate", "variables:\n- id: a\n- id: a\n", `duplicate variable "a"`},
		{"or without id", "variables:\n- id: a\n  constraints: [{or: {negateSubject: true}}]\n", "or: missing id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestEmptyDependencyListMeansUnsatisfiable(t *testing.T) {
	vars, err := Parse([]byte("variables:\n- id: a\n  constraints: [{dependency: []}]\n- id: b\n  constraints: [{mandatory: true}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c := vars.Get("a").Constraints[0]; c.Kind != resolve.KindDependency || len(c.IDs) != 0 {
		t.Fatalf("got %+v", c)
	}
}
