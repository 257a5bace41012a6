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
	rs := e.reasons()
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.text
	}
	return out
}

// Shortlist returns at most n of the reasons for which omit is false (omit may be nil), in
// problem order, and how many others there are. When there are more than n, the reasons that
// fail by themselves (a prohibition, a conflict, an atMost, an or, a dependency nothing
// satisfies) are kept first, then what is mandatory, then the links of a dependency chain ("x
// requires at least one of y"): in a long chain or cycle the links are many and the failure is
// one. Use it where an explanation must stay short, e.g. a status condition.
func (e *NotSatisfiableError) Shortlist(n int, omit func(string) bool) (reasons []string, more int) {
	var all []reason
	for _, r := range e.reasons() {
		if omit == nil || !omit(r.text) {
			all = append(all, r)
		}
	}
	if n < 0 {
		n = 0
	}
	if len(all) <= n {
		for _, r := range all {
			reasons = append(reasons, r.text)
		}
		return reasons, 0
	}
	keep := make([]bool, len(all))
	kept := 0
	for _, tier := range []reasonTier{tierFailure, tierMandatory, tierLink} {
		for i, r := range all {
			if kept < n && r.tier == tier {
				keep[i] = true
				kept++
			}
		}
	}
	for i, r := range all {
		if keep[i] {
			reasons = append(reasons, r.text)
		}
	}
	return reasons, len(all) - kept
}

// reason is one sentence of Reasons and what part it plays.
type reason struct {
	text string
	tier reasonTier
}

// reasonTier orders reasons for Shortlist.
type reasonTier int

const (
	// tierFailure: a constraint that fails by itself (prohibited, conflict, atMost, or, a
	// dependency without candidates).
	tierFailure reasonTier = iota
	// tierMandatory: what was asked for.
	tierMandatory
	// tierLink: a dependency with candidates, a step of a chain.
	tierLink
)

func tierOf(c Constraint) reasonTier {
	switch {
	case c.Kind == KindMandatory:
		return tierMandatory
	case c.Kind == KindDependency && len(c.IDs) > 0:
		return tierLink
	}
	return tierFailure
}

func (e *NotSatisfiableError) reasons() []reason {
	explained := make(map[Identifier]bool)
	for _, c := range e.Causes {
		if c.Constraint.Kind == KindDependency && c.Constraint.Message != "" {
			explained[c.Subject.ID] = true
		}
	}
	seen := make(map[string]struct{}, len(e.Causes))
	var out []reason
	for _, c := range e.Causes {
		if c.Constraint.Kind == KindMandatory && c.Constraint.Message == "" && explained[c.Subject.ID] {
			continue
		}
		s := c.String()
		if _, dup := seen[s]; dup {
			continue
		}
		seen[s] = struct{}{}
		out = append(out, reason{text: s, tier: tierOf(c.Constraint)})
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
