package resolve

import (
	"context"
	"errors"
	"fmt"

	"github.com/operator-framework/deppy/pkg/deppy"
	"github.com/operator-framework/deppy/pkg/deppy/constraint"
	"github.com/operator-framework/deppy/pkg/deppy/solver"
)

// Solution is the outcome of a successful Solve.
type Solution struct {
	// Variables is the problem that was solved.
	Variables *Variables
	selected  []*Variable
	set       map[Identifier]struct{}
}

// Selected returns the selected variables in problem order.
func (s *Solution) Selected() []*Variable { return s.selected }

// IsSelected reports whether the variable with the given identifier is selected.
func (s *Solution) IsSelected(id Identifier) bool {
	_, ok := s.set[id]
	return ok
}

// Solve finds a solution of vars. Preferences are expressed by order: the
// mandatory variables are decided in problem order, and each dependency
// prefers its earlier candidates. Among solutions honouring those choices the
// solver picks one that selects as few other variables as possible.
//
// When there is none, the error is a *NotSatisfiableError listing the
// constraints that conflict.
func Solve(vars *Variables) (*Solution, error) {
	return solve(vars, nil)
}

func solve(vars *Variables, explainer Explainer) (*Solution, error) {
	if err := vars.Validate(); err != nil {
		return nil, err
	}
	input := toDeppy(vars)
	s, err := solver.New()
	if err != nil {
		return nil, err
	}
	selected, err := s.Solve(input)
	if err != nil {
		var unsat deppy.NotSatisfiable
		if errors.As(err, &unsat) {
			return nil, newNotSatisfiable(vars, unsat, explainer)
		}
		return nil, fmt.Errorf("solver: %w", err)
	}
	sol := &Solution{Variables: vars, selected: make([]*Variable, 0, len(selected)), set: make(map[Identifier]struct{}, len(selected))}
	for _, dv := range selected {
		v := dv.(*deppyVariable).v
		sol.selected = append(sol.selected, v)
		sol.set[v.ID] = struct{}{}
	}
	return sol, nil
}

// Resolver runs a pipeline of variable sources and solves the result.
type Resolver struct {
	// Pipeline produces the variables.
	Pipeline Pipeline
	// Explainer, when set, writes the summary of a NotSatisfiableError.
	Explainer Explainer
}

// Resolve runs the pipeline and solves.
func (r *Resolver) Resolve(ctx context.Context) (*Solution, error) {
	vars, err := r.Pipeline.Run(ctx)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return solve(vars, r.Explainer)
}

// deppyVariable adapts a Variable to the upstream solver.
type deppyVariable struct {
	v  *Variable
	cs []deppy.Constraint
}

func (d *deppyVariable) Identifier() deppy.Identifier { return deppy.Identifier(d.v.ID) }

func (d *deppyVariable) Constraints() []deppy.Constraint { return d.cs }

// deppyConstraint is an upstream constraint that remembers the Constraint it
// was built from, so that conflicts can be explained in our own words.
type deppyConstraint struct {
	deppy.Constraint
	c Constraint
}

func (d *deppyConstraint) String(subject deppy.Identifier) string {
	return d.c.Explain(Identifier(subject))
}

func toDeppy(vars *Variables) []deppy.Variable {
	out := make([]deppy.Variable, 0, vars.Len())
	for _, v := range vars.All() {
		dv := &deppyVariable{v: v, cs: make([]deppy.Constraint, 0, len(v.Constraints))}
		for _, c := range v.Constraints {
			if inner := upstream(c); inner != nil {
				dv.cs = append(dv.cs, &deppyConstraint{Constraint: inner, c: c})
			}
		}
		out = append(out, dv)
	}
	return out
}

// upstream builds the solver's constraint; nil means it always holds.
func upstream(c Constraint) deppy.Constraint {
	switch c.Kind {
	case KindMandatory:
		return constraint.Mandatory()
	case KindProhibited:
		return constraint.Prohibited()
	case KindDependency:
		return constraint.Dependency(toDeppyIDs(c.IDs)...)
	case KindConflict:
		return constraint.Conflict(deppy.Identifier(c.IDs[0]))
	case KindAtMost:
		if len(c.IDs) <= c.N {
			return nil
		}
		return constraint.AtMost(c.N, toDeppyIDs(c.IDs)...)
	case KindOr:
		return constraint.Or(deppy.Identifier(c.IDs[0]), c.NegateSubject, c.NegateOperand)
	}
	return nil // rejected earlier by Validate
}

func toDeppyIDs(ids []Identifier) []deppy.Identifier {
	out := make([]deppy.Identifier, len(ids))
	for i, id := range ids {
		out[i] = deppy.Identifier(id)
	}
	return out
}
