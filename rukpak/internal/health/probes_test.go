package health

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

func widget(phase string, extra map[string]interface{}) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "example.com/v1",
		"kind":       "Widget",
		"metadata": map[string]interface{}{
			"name": "w1", "namespace": "ns", "generation": int64(2),
			"labels": map[string]interface{}{"tier": "db"},
		},
	}}
	status := map[string]interface{}{}
	if phase != "" {
		status["phase"] = phase
	}
	for k, v := range extra {
		status[k] = v
	}
	u.Object["status"] = status
	return u
}

func probe(name string, sel rukpakv1alpha1.ProbeSelector, as ...rukpakv1alpha1.ProbeAssertion) rukpakv1alpha1.ProgressionProbe {
	return rukpakv1alpha1.ProgressionProbe{Name: name, Selector: sel, Assertions: as}
}

func fieldValue(path, value string) rukpakv1alpha1.ProbeAssertion {
	return rukpakv1alpha1.ProbeAssertion{Type: rukpakv1alpha1.ProbeAssertionFieldValue,
		FieldValue: &rukpakv1alpha1.FieldValueAssertion{FieldPath: path, Value: value}}
}

func celAssert(expr string) rukpakv1alpha1.ProbeAssertion {
	return rukpakv1alpha1.ProbeAssertion{Type: rukpakv1alpha1.ProbeAssertionCEL, CEL: &rukpakv1alpha1.CELAssertion{Expression: expr}}
}

func conditionAssert(typ string, status metav1.ConditionStatus) rukpakv1alpha1.ProbeAssertion {
	return rukpakv1alpha1.ProbeAssertion{Type: rukpakv1alpha1.ProbeAssertionCondition,
		Condition: &rukpakv1alpha1.ConditionAssertion{Type: typ, Status: status}}
}

func fieldsEqual(a, b string) rukpakv1alpha1.ProbeAssertion {
	return rukpakv1alpha1.ProbeAssertion{Type: rukpakv1alpha1.ProbeAssertionFieldsEqual,
		FieldsEqual: &rukpakv1alpha1.FieldsEqualAssertion{FieldA: a, FieldB: b}}
}

var widgets = rukpakv1alpha1.ProbeSelector{Group: "example.com", Kind: "Widget"}

func compileOne(t *testing.T, p rukpakv1alpha1.ProgressionProbe) *Probe {
	t.Helper()
	probes, err := CompileProbes([]rukpakv1alpha1.ProgressionProbe{p})
	if err != nil {
		t.Fatal(err)
	}
	return probes[0]
}

func TestProbeAssertions(t *testing.T) {
	ready := map[string]interface{}{"conditions": []interface{}{
		map[string]interface{}{"type": "Ready", "status": "False", "reason": "Provisioning", "message": "waiting for disk"},
	}}
	for _, tc := range []struct {
		name      string
		assertion rukpakv1alpha1.ProbeAssertion
		obj       *unstructured.Unstructured
		want      string // "" when the assertion holds
	}{
		{"field value holds", fieldValue(".status.phase", "Ready"), widget("Ready", nil), ""},
		{"field value differs", fieldValue(".status.phase", "Ready"), widget("Provisioning", nil), `.status.phase is "Provisioning", want "Ready"`},
		{"field value missing", fieldValue(".status.phase", "Ready"), widget("", nil), `.status.phase is not set, want "Ready"`},
		{"field value through a non-object", fieldValue(".status.phase.x", "Ready"), widget("Ready", nil), `.status.phase.x is not set`},
		{"field value of a number", fieldValue(".status.replicas", "3"), widget("", map[string]interface{}{"replicas": int64(3)}), ""},
		{"field value of a bool differs", fieldValue(".status.ok", "true"), widget("", map[string]interface{}{"ok": false}), `.status.ok is false, want true`},
		{"field value indexes a list", fieldValue(".status.conditions.0.reason", "Provisioning"), widget("", ready), ""},
		{"field value index out of range", fieldValue(".status.conditions.1.reason", "x"), widget("", ready), `.status.conditions.1.reason is not set`},
		{"null is not set", fieldValue(".status.phase", "Ready"), widget("", map[string]interface{}{"phase": nil}), `.status.phase is not set`},

		{"fields equal", fieldsEqual(".status.observedGeneration", ".metadata.generation"), widget("", map[string]interface{}{"observedGeneration": int64(2)}), ""},
		{"fields equal across number types", fieldsEqual(".status.observedGeneration", ".metadata.generation"), widget("", map[string]interface{}{"observedGeneration": float64(2)}), ""},
		{"fields differ", fieldsEqual(".status.observedGeneration", ".metadata.generation"), widget("", map[string]interface{}{"observedGeneration": int64(1)}),
			`.status.observedGeneration is 1 and .metadata.generation is 2, want them equal`},
		{"first field missing", fieldsEqual(".status.observedGeneration", ".metadata.generation"), widget("", nil),
			`.status.observedGeneration is not set, want it equal to .metadata.generation`},
		{"second field missing", fieldsEqual(".metadata.generation", ".status.observedGeneration"), widget("", nil),
			`.status.observedGeneration is not set, want it equal to .metadata.generation`},

		{"condition holds", conditionAssert("Ready", metav1.ConditionFalse), widget("", ready), ""},
		{"condition differs, with its reason and message", conditionAssert("Ready", metav1.ConditionTrue), widget("", ready),
			`condition Ready is False (Provisioning): waiting for disk, want True`},
		{"condition missing", conditionAssert("Synced", metav1.ConditionTrue), widget("", ready), `condition Synced is not set, want True`},
		{"condition without any conditions", conditionAssert("Ready", metav1.ConditionTrue), widget("", nil), `condition Ready is not set, want True`},

		{"cel holds", celAssert(`self.status.phase == "Ready"`), widget("Ready", nil), ""},
		{"cel is false", celAssert(`self.status.phase == "Ready"`), widget("Provisioning", nil), `CEL "self.status.phase == \"Ready\"" is false`},
		{"cel on a missing field", celAssert(`self.status.phase == "Ready"`), widget("", nil), `cannot be evaluated: no such key: phase`},
		{"cel guarded with has", celAssert(`has(self.status.phase) && self.status.phase == "Ready"`), widget("", nil), `is false`},
		{"cel over labels and numbers", celAssert(`self.metadata.labels.tier == "db" && self.metadata.generation >= 2`), widget("", nil), ""},
		{"cel dynamic non-bool", celAssert(`self.status.phase`), widget("Ready", nil), `is Ready, not a bool`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := compileOne(t, probe("p", widgets, tc.assertion))
			ok, why := p.Evaluate(tc.obj)
			switch {
			case tc.want == "" && !ok:
				t.Fatalf("want the assertion to hold, got %q", why)
			case tc.want != "" && ok:
				t.Fatalf("want %q, the assertion held", tc.want)
			case tc.want != "" && !strings.Contains(why, tc.want):
				t.Fatalf("got %q, want it to contain %q", why, tc.want)
			}
		})
	}
}

func TestProbeAssertionsRunInOrder(t *testing.T) {
	p := compileOne(t, probe("p", widgets, fieldValue(".status.phase", "Ready"), celAssert("self.status.replicas > 1")))
	if ok, why := p.Evaluate(widget("Ready", map[string]interface{}{"replicas": int64(1)})); ok || !strings.Contains(why, "self.status.replicas > 1") {
		t.Fatalf("want the second assertion reported, got ok=%v %q", ok, why)
	}
	if ok, why := p.Evaluate(widget("Pending", map[string]interface{}{"replicas": int64(1)})); ok || !strings.Contains(why, ".status.phase") {
		t.Fatalf("want the first assertion reported, got ok=%v %q", ok, why)
	}
}

func TestCompileProbesRejects(t *testing.T) {
	for _, tc := range []struct {
		name  string
		probe rukpakv1alpha1.ProgressionProbe
		want  string
	}{
		{"CEL syntax error", probe("bad", widgets, celAssert("self.status.phase ==")), `progression probe "bad": assertions[0]: CEL expression "self.status.phase ==" does not compile`},
		{"CEL not a bool", probe("num", widgets, celAssert("1 + 2")), `evaluates to int, want bool`},
		{"CEL unknown variable", probe("var", widgets, celAssert("object.status.x == 1")), `undeclared reference to 'object'`},
		{"bad label selector", probe("sel", rukpakv1alpha1.ProbeSelector{LabelSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}}}, fieldValue(".status.phase", "x")), `selector.labelSelector`},
		{"empty selector", probe("none", rukpakv1alpha1.ProbeSelector{}, fieldValue(".status.phase", "x")), `selector needs`},
		{"no assertions", probe("empty", widgets), `no assertions`},
		{"union member missing", probe("union", widgets, rukpakv1alpha1.ProbeAssertion{Type: rukpakv1alpha1.ProbeAssertionCEL}), `needs its field`},
		{"field path without a dot", probe("path", widgets, fieldValue("status.phase", "x")), `must start with a dot`},
		{"field path with an empty segment", probe("path", widgets, fieldValue(".status..phase", "x")), `empty segment`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := CompileProbes([]rukpakv1alpha1.ProgressionProbe{tc.probe})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestProbeSelectors(t *testing.T) {
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	cm.SetLabels(map[string]string{"tier": "web"})
	w := widget("", nil)
	for _, tc := range []struct {
		name         string
		sel          rukpakv1alpha1.ProbeSelector
		widget, conf bool
	}{
		{"group and kind", widgets, true, false},
		{"group only", rukpakv1alpha1.ProbeSelector{Group: "example.com"}, true, false},
		{"kind only, any group", rukpakv1alpha1.ProbeSelector{Kind: "ConfigMap"}, false, true},
		{"other group", rukpakv1alpha1.ProbeSelector{Group: "apps", Kind: "Widget"}, false, false},
		{"labels", rukpakv1alpha1.ProbeSelector{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "db"}}}, true, false},
		{"label expression", rukpakv1alpha1.ProbeSelector{LabelSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"db", "web"}}}}}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := compileOne(t, probe("p", tc.sel, fieldValue(".status.phase", "x")))
			if got := p.Matches(w); got != tc.widget {
				t.Errorf("Widget: got %v, want %v", got, tc.widget)
			}
			if got := p.Matches(cm); got != tc.conf {
				t.Errorf("ConfigMap: got %v, want %v", got, tc.conf)
			}
		})
	}
}

// TestPlanChecksProbes: a plan with probes reads the selected objects and reports the first probe
// that waits as a *ProbeError naming the probe, the object and the observed value; objects no probe
// selects are not read.
func TestPlanChecksProbes(t *testing.T) {
	probes, err := CompileProbes([]rukpakv1alpha1.ProgressionProbe{
		probe("widget-ready", widgets, fieldValue(".status.phase", "Ready")),
	})
	if err != nil {
		t.Fatal(err)
	}
	applied := widget("", nil)
	delete(applied.Object, "status")
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	cm.SetNamespace("ns")
	cm.SetName("settings")
	plan := NewProbedPlan([]*unstructured.Unstructured{cm, applied}, probes)
	if len(plan.Probed) != 1 || plan.Probed[0].Name != "w1" {
		t.Fatalf("probed objects: %+v", plan.Probed)
	}
	if gks := plan.ProbedKinds(); len(gks) != 1 || gks[0].Kind != "Widget" {
		t.Fatalf("probed kinds: %v", gks)
	}

	live := widget("Provisioning", nil)
	reader := fake.NewClientBuilder().WithScheme(runtime.NewScheme()).WithObjects(live).Build()
	err = plan.Check(context.Background(), reader, nil)
	want := `progression probe "widget-ready" waits on Widget ns/w1: .status.phase is "Provisioning", want "Ready"`
	if err == nil || err.Error() != want || !IsProbeWaiting(err) {
		t.Fatalf("got %v, want %q as a *ProbeError", err, want)
	}

	live.Object["status"] = map[string]interface{}{"phase": "Ready"}
	if err := reader.Update(context.Background(), live); err != nil {
		t.Fatal(err)
	}
	if err := plan.Check(context.Background(), reader, nil); err != nil {
		t.Fatalf("want healthy once the phase is Ready, got %v", err)
	}

	if err := reader.Delete(context.Background(), live); err != nil {
		t.Fatal(err)
	}
	err = plan.Check(context.Background(), reader, nil)
	if !IsProbeWaiting(err) || !strings.Contains(err.Error(), "waits on Widget ns/w1: not found") {
		t.Fatalf("got %v, want the probe waiting on a missing object", err)
	}
}

// BenchmarkProbeEvaluate measures one probe with a field value and a CEL assertion on one object,
// what a health check costs per probed object besides reading it.
func BenchmarkProbeEvaluate(b *testing.B) {
	probes, err := CompileProbes([]rukpakv1alpha1.ProgressionProbe{probe("p", widgets,
		fieldValue(".status.phase", "Ready"),
		celAssert(`self.status.phase == "Ready" && self.metadata.generation >= 2`))})
	if err != nil {
		b.Fatal(err)
	}
	w := widget("Ready", nil)
	b.ReportAllocs()
	for b.Loop() {
		if ok, why := probes[0].Evaluate(w); !ok {
			b.Fatal(why)
		}
	}
}

// BenchmarkCompileProbes measures compiling one CEL assertion, done once per reconcile that applies.
func BenchmarkCompileProbes(b *testing.B) {
	specs := []rukpakv1alpha1.ProgressionProbe{probe("p", widgets, celAssert(`self.status.phase == "Ready" && self.metadata.generation >= 2`))}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := CompileProbes(specs); err != nil {
			b.Fatal(err)
		}
	}
}
