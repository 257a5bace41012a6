package resolve

import (
	"context"
	"fmt"
)

// VariableSource is one stage of a Pipeline. It receives the variables the
// earlier stages produced and may add variables, refine them (add or rewrite
// constraints) or drop them (Variables.Remove keeps the rest consistent).
type VariableSource interface {
	// Name identifies the stage, e.g. in errors and in Pipeline.Insert.
	Name() string
	// Update changes vars in place.
	Update(ctx context.Context, vars *Variables) error
}

// NewSource wraps a function as a named VariableSource.
func NewSource(name string, update func(ctx context.Context, vars *Variables) error) VariableSource {
	return sourceFunc{name: name, update: update}
}

type sourceFunc struct {
	name   string
	update func(ctx context.Context, vars *Variables) error
}

func (s sourceFunc) Name() string { return s.name }

func (s sourceFunc) Update(ctx context.Context, vars *Variables) error { return s.update(ctx, vars) }

// StaticVariables is a source that adds fixed variables, e.g. read from a file.
func StaticVariables(name string, vs ...*Variable) VariableSource {
	return NewSource(name, func(_ context.Context, vars *Variables) error {
		return vars.Add(vs...)
	})
}

// Pipeline is an ordered list of variable sources. It is plain data: build
// one from a library's default (e.g. olm.Pipeline) and reshape it with
// Insert, Replace and Without.
type Pipeline []VariableSource

// Run runs every stage in order, starting from an empty set, and returns the
// variables of the last stage.
func (p Pipeline) Run(ctx context.Context) (*Variables, error) {
	vars := &Variables{}
	for _, s := range p {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := s.Update(ctx, vars); err != nil {
			return nil, fmt.Errorf("variable source %q: %w", s.Name(), err)
		}
	}
	return vars, nil
}

// Names lists the stage names in order.
func (p Pipeline) Names() []string {
	names := make([]string, len(p))
	for i, s := range p {
		names[i] = s.Name()
	}
	return names
}

// Insert returns a new pipeline with src placed right after the stage named
// after; an empty after puts src first. It fails when no stage has that name.
func (p Pipeline) Insert(after string, src VariableSource) (Pipeline, error) {
	at := 0
	if after != "" {
		i := p.find(after)
		if i < 0 {
			return nil, fmt.Errorf("no stage %q in pipeline %v", after, p.Names())
		}
		at = i + 1
	}
	out := make(Pipeline, 0, len(p)+1)
	out = append(out, p[:at]...)
	out = append(out, src)
	return append(out, p[at:]...), nil
}

// Replace returns a new pipeline with the stage named name replaced by src.
func (p Pipeline) Replace(name string, src VariableSource) (Pipeline, error) {
	i := p.find(name)
	if i < 0 {
		return nil, fmt.Errorf("no stage %q in pipeline %v", name, p.Names())
	}
	out := append(Pipeline(nil), p...)
	out[i] = src
	return out, nil
}

// Without returns a new pipeline without the stage named name.
func (p Pipeline) Without(name string) (Pipeline, error) {
	i := p.find(name)
	if i < 0 {
		return nil, fmt.Errorf("no stage %q in pipeline %v", name, p.Names())
	}
	out := append(Pipeline(nil), p[:i]...)
	return append(out, p[i+1:]...), nil
}

func (p Pipeline) find(name string) int {
	for i, s := range p {
		if s.Name() == name {
			return i
		}
	}
	return -1
}
