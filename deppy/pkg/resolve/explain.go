package resolve

import (
	"sort"
	"strings"

	"github.com/operator-framework/deppy/pkg/deppy"
)

// Cause is one constraint that takes part in making a problem unsolvable.
type Cause struct {
	// Subject is the variable the constraint belongs to.
	Subject *Variable
	// Constraint is the constraint itself; its Detail carries domain data.
	Constraint Constraint
}

// String explains the cause in one sentence.
func (c Cause) String() string { return c.Constraint.Explain(c.Subject.ID) }

// Explainer turns the causes of an unsolvable problem into a few sentences
// a person can act on. It may return nil to leave only the list of causes.
type Explainer interface {
	Explain(causes []Cause) []string
}

// ExplainerFunc adapts a function to Explainer.
type ExplainerFunc func(causes []Cause) []string

// Explain implements Explainer.
func (f ExplainerFunc) Explain(causes []Cause) []string { return f(causes) }

// NotSatisfiableError reports that no selection satisfies every constraint.
type NotSatisfiableError struct {
	// Summary is what an Explainer made of the causes (may be empty).
	Summary []string
	// Causes is a set of constraints that cannot hold together, in problem
	// order. Mandatory constraints are included: they say what was asked for.
	Causes []Cause
}

// Reasons returns the distinct sentences of the causes. A mandatory
// constraint without a message is left out when a dependency of the same
// variable with a message of its own is among the causes: that message
// already says what was asked for.
func (e *NotSatisfiableError) Reasons() []string {
	explained := make(map[Identifier]bool)
	for _, c := range e.Causes {
		if c.Constraint.Kind == KindDependency && c.Constraint.Message != "" {
			explained[c.Subject.ID] = true
		}
	}
	seen := make(map[string]struct{}, len(e.Causes))
	var out []string
	for _, c := range e.Causes {
		if c.Constraint.Kind == KindMandatory && c.Constraint.Message == "" && explained[c.Subject.ID] {
			continue
		}
		s := c.String()
		if _, dup := seen[s]; dup {
			continue
		}
		seen[s] = struct{}{}
		out = append(out, s)
	}
	return out
}

// Error returns the summary when there is one, otherwise the reasons.
func (e *NotSatisfiableError) Error() string {
	if len(e.Summary) > 0 {
		return "no solution: " + strings.Join(e.Summary, "; ")
	}
	return "no solution: " + strings.Join(e.Reasons(), "; ")
}

// Details returns the summary followed by every reason, one per line.
func (e *NotSatisfiableError) Details() string {
	var b strings.Builder
	b.WriteString("no solution")
	for _, s := range e.Summary {
		b.WriteString("\n")
		b.WriteString(s)
	}
	b.WriteString("\nbecause:")
	for _, r := range e.Reasons() {
		b.WriteString("\n  - ")
		b.WriteString(r)
	}
	return b.String()
}

func newNotSatisfiable(vars *Variables, unsat deppy.NotSatisfiable, explainer Explainer) *NotSatisfiableError {
	order := make(map[Identifier]int, vars.Len())
	for i, v := range vars.All() {
		order[v.ID] = i
	}
	causes := make([]Cause, 0, len(unsat))
	for _, applied := range unsat {
		dv, okv := applied.Variable.(*deppyVariable)
		dc, okc := applied.Constraint.(*deppyConstraint)
		if !okv || !okc {
			continue
		}
		causes = append(causes, Cause{Subject: dv.v, Constraint: dc.c})
	}
	sort.SliceStable(causes, func(i, j int) bool {
		return order[causes[i].Subject.ID] < order[causes[j].Subject.ID]
	})
	e := &NotSatisfiableError{Causes: causes}
	if explainer != nil {
		e.Summary = explainer.Explain(causes)
	}
	return e
}
