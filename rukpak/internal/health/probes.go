package health

// Progression probes (spec.progressionProbes): readiness checks a bundle's author or user adds on
// top of the built-in rules of Evaluate. A probe selects installed objects by group/kind or by
// labels, and every selected object must pass each of its assertions: a status condition, a field
// value, two fields being equal, or a CEL expression over the object (self). CompileProbes turns
// the API types into Probes once, when the spec is read, so that a CEL expression that does not
// compile is reported before anything is applied; Probe.Evaluate is the pure rule for one live
// object.

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/cel-go/cel"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// celCostLimit bounds the work one CEL assertion may do on one object (in cel-go's cost units):
// enough for any comparison over an object's fields, not for a runaway comprehension.
const celCostLimit = 1_000_000

// Probe is a compiled progression probe.
type Probe struct {
	// Name is the probe's spec name.
	Name       string
	selector   rukpakv1alpha1.ProbeSelector
	labels     labels.Selector
	assertions []assertion
}

// assertion is one compiled check: ok, or what was observed instead of what is wanted.
type assertion interface {
	check(obj map[string]interface{}) (ok bool, why string)
}

// ProbeError is a probe that an object does not pass (yet).
type ProbeError struct {
	// Probe is the probe's name.
	Probe string
	// Object is "Kind namespace/name" (or "Kind name" for cluster-scoped objects).
	Object string
	// Why is the failing assertion with the observed value.
	Why string
}

func (e *ProbeError) Error() string {
	return fmt.Sprintf("progression probe %q waits on %s: %s", e.Probe, e.Object, e.Why)
}

// IsProbeWaiting reports whether err is (or wraps) a *ProbeError.
func IsProbeWaiting(err error) bool {
	var pe *ProbeError
	return errors.As(err, &pe)
}

// CompileProbes compiles specs; the error names the first probe that cannot be used and why.
func CompileProbes(specs []rukpakv1alpha1.ProgressionProbe) ([]*Probe, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	env, err := cel.NewEnv(cel.Variable("self", cel.DynType))
	if err != nil {
		return nil, fmt.Errorf("setting up CEL: %w", err)
	}
	out := make([]*Probe, 0, len(specs))
	for _, s := range specs {
		p, err := compileProbe(env, s)
		if err != nil {
			return nil, fmt.Errorf("progression probe %q: %w", s.Name, err)
		}
		out = append(out, p)
	}
	return out, nil
}

func compileProbe(env *cel.Env, s rukpakv1alpha1.ProgressionProbe) (*Probe, error) {
	p := &Probe{Name: s.Name, selector: s.Selector}
	if s.Selector.LabelSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(s.Selector.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("selector.labelSelector: %w", err)
		}
		p.labels = sel
	} else if s.Selector.Group == "" && s.Selector.Kind == "" {
		return nil, fmt.Errorf("selector needs group and/or kind, or labelSelector")
	}
	if len(s.Assertions) == 0 {
		return nil, fmt.Errorf("no assertions")
	}
	for i, a := range s.Assertions {
		c, err := compileAssertion(env, a)
		if err != nil {
			return nil, fmt.Errorf("assertions[%d]: %w", i, err)
		}
		p.assertions = append(p.assertions, c)
	}
	return p, nil
}

func compileAssertion(env *cel.Env, a rukpakv1alpha1.ProbeAssertion) (assertion, error) {
	switch {
	case a.Type == rukpakv1alpha1.ProbeAssertionCondition && a.Condition != nil:
		return conditionAssertion(*a.Condition), nil
	case a.Type == rukpakv1alpha1.ProbeAssertionFieldValue && a.FieldValue != nil:
		path, err := parseFieldPath(a.FieldValue.FieldPath)
		if err != nil {
			return nil, err
		}
		return fieldValueAssertion{path: path, want: a.FieldValue.Value}, nil
	case a.Type == rukpakv1alpha1.ProbeAssertionFieldsEqual && a.FieldsEqual != nil:
		pa, err := parseFieldPath(a.FieldsEqual.FieldA)
		if err != nil {
			return nil, err
		}
		pb, err := parseFieldPath(a.FieldsEqual.FieldB)
		if err != nil {
			return nil, err
		}
		return fieldsEqualAssertion{a: pa, b: pb}, nil
	case a.Type == rukpakv1alpha1.ProbeAssertionCEL && a.CEL != nil:
		return compileCEL(env, a.CEL.Expression)
	}
	return nil, fmt.Errorf("type %q needs its field of the same name (condition, fieldValue, fieldsEqual or cel)", a.Type)
}

// Matches reports whether the probe selects u.
func (p *Probe) Matches(u *unstructured.Unstructured) bool {
	if p.labels != nil {
		return p.labels.Matches(labels.Set(u.GetLabels()))
	}
	gvk := u.GroupVersionKind()
	if p.selector.Group != "" && p.selector.Group != gvk.Group {
		return false
	}
	return p.selector.Kind == "" || p.selector.Kind == gvk.Kind
}

// Evaluate runs the probe's assertions on the live object u, in order: ok, or why the first that
// fails does.
func (p *Probe) Evaluate(u *unstructured.Unstructured) (bool, string) {
	for _, a := range p.assertions {
		if ok, why := a.check(u.Object); !ok {
			return false, why
		}
	}
	return true, ""
}

type conditionAssertion rukpakv1alpha1.ConditionAssertion

func (c conditionAssertion) check(obj map[string]interface{}) (bool, string) {
	found := findCondition(&unstructured.Unstructured{Object: obj}, c.Type)
	switch {
	case found == nil:
		return false, fmt.Sprintf("condition %s is not set, want %s", c.Type, c.Status)
	case found.status != string(c.Status):
		got := found.status
		if found.reason != "" || found.message != "" {
			got = found.describe(got)
		}
		return false, fmt.Sprintf("condition %s is %s, want %s", c.Type, got, c.Status)
	}
	return true, ""
}

type fieldValueAssertion struct {
	path fieldPath
	want string
}

func (f fieldValueAssertion) check(obj map[string]interface{}) (bool, string) {
	v, ok := f.path.lookup(obj)
	if !ok {
		return false, fmt.Sprintf("%s is not set, want %q", f.path, f.want)
	}
	if s, isString := v.(string); isString {
		if s == f.want {
			return true, ""
		}
		return false, fmt.Sprintf("%s is %q, want %q", f.path, s, f.want)
	}
	if got := render(v); got != f.want {
		return false, fmt.Sprintf("%s is %s, want %s", f.path, got, f.want)
	}
	return true, ""
}

type fieldsEqualAssertion struct{ a, b fieldPath }

func (f fieldsEqualAssertion) check(obj map[string]interface{}) (bool, string) {
	va, okA := f.a.lookup(obj)
	vb, okB := f.b.lookup(obj)
	switch {
	case !okA:
		return false, fmt.Sprintf("%s is not set, want it equal to %s", f.a, f.b)
	case !okB:
		return false, fmt.Sprintf("%s is not set, want it equal to %s", f.b, f.a)
	}
	if ra, rb := render(va), render(vb); ra != rb {
		return false, fmt.Sprintf("%s is %s and %s is %s, want them equal", f.a, ra, f.b, rb)
	}
	return true, ""
}

// render is v as JSON (numbers decoded as int64 or float64 render the same when equal); a value
// that cannot be encoded renders with %v.
func render(v interface{}) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}

type celAssertion struct {
	expression string
	program    cel.Program
}

func compileCEL(env *cel.Env, expr string) (assertion, error) {
	ast, iss := env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Errorf("CEL expression %q does not compile: %w", expr, iss.Err())
	}
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
		return nil, fmt.Errorf("CEL expression %q evaluates to %s, want bool", expr, t)
	}
	prg, err := env.Program(ast, cel.CostLimit(celCostLimit))
	if err != nil {
		return nil, fmt.Errorf("CEL expression %q: %w", expr, err)
	}
	return celAssertion{expression: expr, program: prg}, nil
}

func (c celAssertion) check(obj map[string]interface{}) (bool, string) {
	out, _, err := c.program.Eval(map[string]interface{}{"self": obj})
	if err != nil {
		return false, fmt.Sprintf("CEL %q cannot be evaluated: %v", c.expression, err)
	}
	b, isBool := out.Value().(bool)
	switch {
	case !isBool:
		return false, fmt.Sprintf("CEL %q is %v, not a bool", c.expression, out.Value())
	case !b:
		return false, fmt.Sprintf("CEL %q is false", c.expression)
	}
	return true, ""
}

// fieldPath is a parsed dotted path such as .status.phase; a numeric segment indexes a list.
type fieldPath []string

func parseFieldPath(s string) (fieldPath, error) {
	if !strings.HasPrefix(s, ".") || len(s) < 2 {
		return nil, fmt.Errorf("field path %q must start with a dot, e.g. .status.phase", s)
	}
	segs := strings.Split(s[1:], ".")
	for _, seg := range segs {
		if seg == "" {
			return nil, fmt.Errorf("field path %q has an empty segment", s)
		}
	}
	return segs, nil
}

func (p fieldPath) String() string { return "." + strings.Join(p, ".") }

// lookup is the value at p in obj, and whether it is set (a null counts as not set).
func (p fieldPath) lookup(obj map[string]interface{}) (interface{}, bool) {
	var cur interface{} = obj
	for _, seg := range p {
		switch c := cur.(type) {
		case map[string]interface{}:
			v, ok := c[seg]
			if !ok {
				return nil, false
			}
			cur = v
		case []interface{}:
			i, err := strconv.Atoi(seg)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, cur != nil
}
