// Package problem reads generic resolution problems from YAML or JSON: a list
// of variables, each with constraints, as used by `deppy solve -f`.
//
//	variables:
//	  - id: app
//	    constraints:
//	      - mandatory: true
//	      - dependency: [db-v2, db-v1]   # prefer db-v2
//	  - id: db-v2
//	    constraints:
//	      - conflict: legacy
//	  - id: db-v1
//	  - id: legacy
//	    constraints:
//	      - mandatory: true
//	        message: legacy must stay installed
//
// Constraint keys: mandatory, prohibited, not (same as prohibited),
// dependency (list; empty means unsatisfiable), conflict (id),
// atMost ({max, ids}), or ({id, negateSubject, negateOperand}). Each entry
// holds exactly one of them, plus an optional message used in explanations.
package problem

import (
	"fmt"
	"io"

	"sigs.k8s.io/yaml"

	"github.com/olmv1/olmv1/deppy/pkg/resolve"
)

// File is a problem as written in YAML or JSON.
type File struct {
	Variables []VariableSpec `json:"variables"`
}

// VariableSpec is one variable and its constraints.
type VariableSpec struct {
	ID          string           `json:"id"`
	Constraints []ConstraintSpec `json:"constraints,omitempty"`
}

// ConstraintSpec holds exactly one constraint.
type ConstraintSpec struct {
	Mandatory  bool        `json:"mandatory,omitempty"`
	Prohibited bool        `json:"prohibited,omitempty"`
	Not        bool        `json:"not,omitempty"`
	Dependency *[]string   `json:"dependency,omitempty"`
	Conflict   string      `json:"conflict,omitempty"`
	AtMost     *AtMostSpec `json:"atMost,omitempty"`
	Or         *OrSpec     `json:"or,omitempty"`
	// Message replaces the generated sentence in explanations.
	Message string `json:"message,omitempty"`
}

// AtMostSpec is "at most Max of IDs". (The key is max, not n: YAML 1.1 reads a bare n as false.)
type AtMostSpec struct {
	Max int      `json:"max"`
	IDs []string `json:"ids"`
}

// OrSpec is "subject or ID", either side possibly negated.
type OrSpec struct {
	ID            string `json:"id"`
	NegateSubject bool   `json:"negateSubject,omitempty"`
	NegateOperand bool   `json:"negateOperand,omitempty"`
}

// Read parses a problem and checks it: identifiers unique and declared,
// exactly one constraint per entry.
func Read(r io.Reader) (*resolve.Variables, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return Parse(data)
}

// Parse is Read over bytes.
func Parse(data []byte) (*resolve.Variables, error) {
	var f File
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, fmt.Errorf("invalid problem file: %w", err)
	}
	return f.Build()
}

// Build converts the file into solver variables.
func (f *File) Build() (*resolve.Variables, error) {
	if len(f.Variables) == 0 {
		return nil, fmt.Errorf("invalid problem file: no variables (want a top-level \"variables:\" list)")
	}
	vars := &resolve.Variables{}
	for i, vs := range f.Variables {
		if vs.ID == "" {
			return nil, fmt.Errorf("variables[%d]: missing id", i)
		}
		v := resolve.NewVariable(resolve.Identifier(vs.ID), nil)
		for j, cs := range vs.Constraints {
			c, err := cs.constraint()
			if err != nil {
				return nil, fmt.Errorf("variable %q: constraints[%d]: %w", vs.ID, j, err)
			}
			v.Add(c)
		}
		if err := vars.Add(v); err != nil {
			return nil, fmt.Errorf("variables[%d]: %w", i, err)
		}
	}
	if err := vars.Validate(); err != nil {
		return nil, fmt.Errorf("%w (declare every variable under \"variables:\")", err)
	}
	return vars, nil
}

func (cs ConstraintSpec) constraint() (resolve.Constraint, error) {
	var found []resolve.Constraint
	if cs.Mandatory {
		found = append(found, resolve.Mandatory())
	}
	if cs.Prohibited {
		found = append(found, resolve.Prohibited())
	}
	if cs.Not {
		found = append(found, resolve.Not())
	}
	if cs.Dependency != nil {
		found = append(found, resolve.Dependency(toIDs(*cs.Dependency)...))
	}
	if cs.Conflict != "" {
		found = append(found, resolve.Conflict(resolve.Identifier(cs.Conflict)))
	}
	if cs.AtMost != nil {
		found = append(found, resolve.AtMost(cs.AtMost.Max, toIDs(cs.AtMost.IDs)...))
	}
	if cs.Or != nil {
		if cs.Or.ID == "" {
			return resolve.Constraint{}, fmt.Errorf("or: missing id")
		}
		found = append(found, resolve.Or(resolve.Identifier(cs.Or.ID), cs.Or.NegateSubject, cs.Or.NegateOperand))
	}
	switch len(found) {
	case 0:
		return resolve.Constraint{}, fmt.Errorf("no constraint (want one of mandatory, prohibited, not, dependency, conflict, atMost, or)")
	case 1:
		return found[0].WithMessage(cs.Message), nil
	}
	return resolve.Constraint{}, fmt.Errorf("%d constraints in one entry (write each as its own list item)", len(found))
}

func toIDs(in []string) []resolve.Identifier {
	out := make([]resolve.Identifier, len(in))
	for i, s := range in {
		out[i] = resolve.Identifier(s)
	}
	return out
}
