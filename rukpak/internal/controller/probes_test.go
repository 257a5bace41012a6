package controller

import (
	"context"
	"errors"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/olmv1/olmv1/platform/step"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/apply"
	"github.com/olmv1/olmv1/rukpak/internal/health"
)

func celProbe(name, expr string) rukpakv1alpha1.ProgressionProbe {
	return rukpakv1alpha1.ProgressionProbe{Name: name, Selector: rukpakv1alpha1.ProbeSelector{Kind: "Widget"},
		Assertions: []rukpakv1alpha1.ProbeAssertion{{Type: rukpakv1alpha1.ProbeAssertionCEL, CEL: &rukpakv1alpha1.CELAssertion{Expression: expr}}}}
}

// A probe that does not compile is a terminal Installed failure with reason InvalidProgressionProbe.
func TestCompileProbesStep(t *testing.T) {
	r := &BundleDeploymentReconciler{}
	bd := &rukpakv1alpha1.BundleDeployment{}
	bd.Spec.ProgressionProbes = []rukpakv1alpha1.ProgressionProbe{celProbe("ready", `self.status.phase == "Ready"`)}
	st := &state{}
	if err := r.compileProbes(context.Background(), bd, st); err != nil || len(st.probes) != 1 || !st.probesCompiled {
		t.Fatalf("a valid probe: err %v, probes %d", err, len(st.probes))
	}
	bd.Spec.ProgressionProbes = []rukpakv1alpha1.ProgressionProbe{celProbe("broken", `self.status.phase ==`)}
	err := r.compileProbes(context.Background(), bd, &state{})
	se, ok := step.As(err)
	if !ok || !se.Terminal || se.Condition != rukpakv1alpha1.TypeInstalled || se.Reason != rukpakv1alpha1.ReasonInvalidProgressionProbe ||
		!strings.Contains(err.Error(), `spec.progressionProbes: progression probe "broken": assertions[0]: CEL expression`) {
		t.Fatalf("got %#v (%v)", se, err)
	}
}

// A probe that waits is Healthy=False with reason ProgressionProbeWaiting and the probe's message;
// any other problem keeps reason Unhealthy.
func TestSetStatusProbeWaiting(t *testing.T) {
	r := &BundleDeploymentReconciler{Engine: &apply.Engine{Storage: storage.Init(driver.NewMemory())}}
	waiting := &health.ProbeError{Probe: "widget-ready", Object: "Widget ns/w1", Why: `.status.phase is "Provisioning", want "Ready"`}
	for _, tc := range []struct {
		healthy error
		reason  string
	}{
		{waiting, rukpakv1alpha1.ReasonProgressionProbeWaiting},
		{&apply.PhaseWaitError{Phase: apply.PhaseWorkloads, Next: apply.PhaseWebhooks, Probe: waiting}, rukpakv1alpha1.ReasonProgressionProbeWaiting},
		{errors.New("Deployment ns/web is not ready: not Available"), rukpakv1alpha1.ReasonUnhealthy},
	} {
		bd := &rukpakv1alpha1.BundleDeployment{}
		bd.Name = "bd"
		r.setStatus(bd, &state{applied: &apply.Result{Revision: 1}, healthy: tc.healthy}, nil)
		c := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeHealthy)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tc.reason || c.Message != tc.healthy.Error() {
			t.Errorf("%v: Healthy %+v, want False/%s", tc.healthy, c, tc.reason)
		}
	}
}

// Status updates of a kind that a progression probe selects pass the applied-object predicate, as
// those of the built-in status kinds do; other kinds' status updates do not.
func TestAppliedChangedPassesProbedKinds(t *testing.T) {
	w := &Watches{}
	probes, err := health.CompileProbes([]rukpakv1alpha1.ProgressionProbe{celProbe("ready", "true")})
	if err != nil {
		t.Fatal(err)
	}
	widget := &unstructured.Unstructured{}
	widget.SetAPIVersion("example.com/v1")
	widget.SetKind("Widget")
	widget.SetGeneration(1)
	gadget := widget.DeepCopy()
	gadget.SetKind("Gadget")
	w.WatchStatus(health.NewProbedPlan([]*unstructured.Unstructured{widget, gadget}, probes).ProbedKinds())
	pred := appliedChanged{status: w.statusDecidesHealth}
	if !pred.Update(event.UpdateEvent{ObjectOld: widget, ObjectNew: widget.DeepCopy()}) || !pred.Create(event.CreateEvent{Object: widget}) {
		t.Error("status updates and creations of a probed kind must pass")
	}
	if pred.Update(event.UpdateEvent{ObjectOld: gadget, ObjectNew: gadget.DeepCopy()}) {
		t.Error("a status update of a kind no probe selects must not pass")
	}
	if !w.statusDecidesHealth(schema.GroupKind{Group: "apps", Kind: "Deployment"}) {
		t.Error("the built-in status kinds still pass")
	}
}
