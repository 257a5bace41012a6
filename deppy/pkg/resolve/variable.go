package resolve

import (
	"fmt"
)

// Identifier names a Variable uniquely within one problem.
type Identifier string

// Variable is one yes/no decision of the problem: "is this selected?".
type Variable struct {
	// ID names the variable; it must be unique within a problem.
	ID Identifier `json:"id"`
	// Constraints restrict when the variable may or must be selected.
	Constraints []Constraint `json:"constraints,omitempty"`
	// Entity is what the variable stands for (a bundle, a required package …).
	// The solver ignores it; variable sources and explainers use it.
	Entity any `json:"-"`
}

// NewVariable returns a variable with the given identifier, entity and constraints.
func NewVariable(id Identifier, entity any, constraints ...Constraint) *Variable {
	return &Variable{ID: id, Entity: entity, Constraints: constraints}
}

// Add appends constraints to the variable.
func (v *Variable) Add(constraints ...Constraint) {
	v.Constraints = append(v.Constraints, constraints...)
}

// Variables is an ordered set of variables indexed by identifier. Order
// matters to the solver: among the mandatory variables, earlier ones are
// decided first, and the output lists selected variables in this order.
// The zero value is an empty set ready to use.
type Variables struct {
	order []*Variable
	index map[Identifier]int
}

// NewVariables returns a set holding vs, or an error naming a duplicate identifier.
func NewVariables(vs ...*Variable) (*Variables, error) {
	s := &Variables{}
	if err := s.Add(vs...); err != nil {
		return nil, err
	}
	return s, nil
}

// Add appends variables to the set. Adding an identifier that is already
// present is an error (use Get to refine an existing variable).
func (s *Variables) Add(vs ...*Variable) error {
	if s.index == nil {
		s.index = make(map[Identifier]int, len(vs))
	}
	for _, v := range vs {
		if v == nil {
			return fmt.Errorf("nil variable")
		}
		if v.ID == "" {
			return fmt.Errorf("variable with an empty identifier")
		}
		if _, dup := s.index[v.ID]; dup {
			return fmt.Errorf("duplicate variable %q", v.ID)
		}
		s.index[v.ID] = len(s.order)
		s.order = append(s.order, v)
	}
	return nil
}

// Get returns the variable with the given identifier, or nil.
func (s *Variables) Get(id Identifier) *Variable {
	if i, ok := s.index[id]; ok {
		return s.order[i]
	}
	return nil
}

// Has reports whether the set holds a variable with the given identifier.
func (s *Variables) Has(id Identifier) bool {
	_, ok := s.index[id]
	return ok
}

// Len returns the number of variables.
func (s *Variables) Len() int { return len(s.order) }

// All returns the variables in order. The slice is shared: do not modify it
// (modifying the variables themselves is fine).
func (s *Variables) All() []*Variable { return s.order }

// Remove drops the variables with the given identifiers and returns how many
// were present. Dropping a variable means it can never be selected, so the
// constraints of the remaining variables are rewritten accordingly: it is
// removed from dependency and atMost lists, conflicts with it are dropped
// (they always hold), and an or-constraint on it becomes mandatory or
// prohibited, or is dropped when it always holds.
func (s *Variables) Remove(ids ...Identifier) int {
	gone := make(map[Identifier]struct{}, len(ids))
	for _, id := range ids {
		if s.Has(id) {
			gone[id] = struct{}{}
		}
	}
	if len(gone) == 0 {
		return 0
	}
	kept := s.order[:0]
	for _, v := range s.order {
		if _, drop := gone[v.ID]; !drop {
			kept = append(kept, v)
		}
	}
	for i := len(kept); i < len(s.order); i++ {
		s.order[i] = nil
	}
	s.order = kept
	s.index = make(map[Identifier]int, len(kept))
	for i, v := range kept {
		s.index[v.ID] = i
		v.Constraints = withoutReferences(v.Constraints, gone)
	}
	return len(gone)
}

// withoutReferences rewrites constraints as if the variables in gone were false.
func withoutReferences(cs []Constraint, gone map[Identifier]struct{}) []Constraint {
	out := make([]Constraint, 0, len(cs))
	for _, c := range cs {
		switch c.Kind {
		case KindDependency, KindAtMost:
			c.IDs = withoutIDs(c.IDs, gone)
		case KindConflict:
			if _, g := gone[c.IDs[0]]; g {
				continue // the conflicting variable can no longer be selected
			}
		case KindOr:
			if _, g := gone[c.IDs[0]]; g {
				if c.NegateOperand {
					continue // "subject or not <false>" always holds
				}
				if c.NegateSubject {
					c = Prohibited().WithMessage(c.Message).WithDetail(c.Detail)
				} else {
					c = Mandatory().WithMessage(c.Message).WithDetail(c.Detail)
				}
			}
		}
		out = append(out, c)
	}
	return out
}

func withoutIDs(ids []Identifier, gone map[Identifier]struct{}) []Identifier {
	out := make([]Identifier, 0, len(ids))
	for _, id := range ids {
		if _, g := gone[id]; !g {
			out = append(out, id)
		}
	}
	return out
}

// Validate checks that every identifier a constraint refers to is present
// and that every constraint is well formed.
func (s *Variables) Validate() error {
	for _, v := range s.order {
		for _, c := range v.Constraints {
			if err := c.validate(); err != nil {
				return fmt.Errorf("variable %q: %w", v.ID, err)
			}
			for _, id := range c.IDs {
				if !s.Has(id) {
					return fmt.Errorf("variable %q: %s constraint refers to unknown variable %q", v.ID, c.Kind, id)
				}
			}
		}
	}
	return nil
}
