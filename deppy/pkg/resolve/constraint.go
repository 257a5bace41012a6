package resolve

import (
	"fmt"
	"strings"
)

// Kind names a type of constraint.
type Kind string

// The constraint kinds understood by the solver.
const (
	// KindMandatory: the subject must be selected.
	KindMandatory Kind = "mandatory"
	// KindProhibited: the subject must not be selected.
	KindProhibited Kind = "prohibited"
	// KindDependency: if the subject is selected, at least one of IDs must be;
	// earlier IDs are preferred.
	KindDependency Kind = "dependency"
	// KindConflict: the subject and IDs[0] are not both selected.
	KindConflict Kind = "conflict"
	// KindAtMost: at most N of IDs are selected (the subject is only a carrier).
	KindAtMost Kind = "atMost"
	// KindOr: (subject, or not subject when NegateSubject) or (IDs[0], or not
	// IDs[0] when NegateOperand).
	KindOr Kind = "or"
)

// Constraint restricts when its subject variable may be selected. Build one
// with Mandatory, Prohibited, Not, Dependency, Conflict, AtMost or Or, then
// optionally attach a message and a detail for explanations.
type Constraint struct {
	Kind Kind `json:"kind"`
	// IDs are the other variables the constraint refers to.
	IDs []Identifier `json:"ids,omitempty"`
	// N is the bound of an atMost constraint.
	N int `json:"n,omitempty"`
	// NegateSubject and NegateOperand shape an or constraint.
	NegateSubject bool `json:"negateSubject,omitempty"`
	NegateOperand bool `json:"negateOperand,omitempty"`
	// Message, when set, is the sentence used to explain this constraint when
	// it takes part in a conflict; otherwise a generic sentence is generated.
	Message string `json:"message,omitempty"`
	// Detail is structured data for an Explainer; the solver ignores it.
	Detail any `json:"-"`
}

// Mandatory returns a constraint that the subject must be selected.
func Mandatory() Constraint { return Constraint{Kind: KindMandatory} }

// Prohibited returns a constraint that the subject must not be selected.
func Prohibited() Constraint { return Constraint{Kind: KindProhibited} }

// Not is another name for Prohibited: the subject is not selected.
func Not() Constraint { return Prohibited() }

// Dependency returns a constraint that, when the subject is selected, at least
// one of ids is selected too. Earlier ids are preferred. With no ids the
// subject can never be selected.
func Dependency(ids ...Identifier) Constraint {
	return Constraint{Kind: KindDependency, IDs: ids}
}

// Conflict returns a constraint that the subject and id are not both selected.
func Conflict(id Identifier) Constraint {
	return Constraint{Kind: KindConflict, IDs: []Identifier{id}}
}

// AtMost returns a constraint that at most n of ids are selected.
func AtMost(n int, ids ...Identifier) Constraint {
	return Constraint{Kind: KindAtMost, N: n, IDs: ids}
}

// Or returns the clause "subject OR id", where either side may be negated:
// Or(b, true, false) reads "if subject then b", Or(b, true, true) "not both".
func Or(id Identifier, negateSubject, negateOperand bool) Constraint {
	return Constraint{Kind: KindOr, IDs: []Identifier{id}, NegateSubject: negateSubject, NegateOperand: negateOperand}
}

// WithMessage returns a copy of c that explains itself with msg.
func (c Constraint) WithMessage(msg string) Constraint {
	c.Message = msg
	return c
}

// WithDetail returns a copy of c carrying structured data for explainers.
func (c Constraint) WithDetail(detail any) Constraint {
	c.Detail = detail
	return c
}

// Explain returns the sentence that describes c applied to subject.
func (c Constraint) Explain(subject Identifier) string {
	if c.Message != "" {
		return c.Message
	}
	switch c.Kind {
	case KindMandatory:
		return fmt.Sprintf("%s is mandatory", subject)
	case KindProhibited:
		return fmt.Sprintf("%s is prohibited", subject)
	case KindDependency:
		if len(c.IDs) == 0 {
			return fmt.Sprintf("%s has a dependency that nothing can satisfy", subject)
		}
		return fmt.Sprintf("%s requires at least one of %s", subject, joinIDs(c.IDs))
	case KindConflict:
		return fmt.Sprintf("%s conflicts with %s", subject, c.IDs[0])
	case KindAtMost:
		return fmt.Sprintf("%s permits at most %d of %s", subject, c.N, joinIDs(c.IDs))
	case KindOr:
		left, right := string(subject), string(c.IDs[0])
		if c.NegateSubject {
			left = "not " + left
		}
		if c.NegateOperand {
			right = "not " + right
		}
		return fmt.Sprintf("%s or %s", left, right)
	}
	return fmt.Sprintf("%s has an unknown constraint %q", subject, c.Kind)
}

func (c Constraint) validate() error {
	switch c.Kind {
	case KindMandatory, KindProhibited:
		if len(c.IDs) != 0 {
			return fmt.Errorf("%s constraint takes no identifiers", c.Kind)
		}
	case KindDependency:
	case KindConflict, KindOr:
		if len(c.IDs) != 1 {
			return fmt.Errorf("%s constraint takes exactly one identifier, got %d", c.Kind, len(c.IDs))
		}
	case KindAtMost:
		if c.N < 0 {
			return fmt.Errorf("atMost constraint needs n >= 0, got %d", c.N)
		}
	default:
		return fmt.Errorf("unknown constraint kind %q (want mandatory, prohibited, dependency, conflict, atMost or or)", c.Kind)
	}
	return nil
}

func joinIDs(ids []Identifier) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return strings.Join(s, ", ")
}
