package controller

import (
	"errors"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/olmv1/olmv1/platform/step"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/apply"
)

// What Reconcile returns after its steps: a terminal step neither requeues nor returns an error, a
// step with RetryAfter looks again then, other errors back off; a success re-checks at the progress
// deadline, while unhealthy, or at the poll interval.
func TestResult(t *testing.T) {
	cause := errors.New("boom")
	poll := &rukpakv1alpha1.BundleDeployment{Spec: rukpakv1alpha1.BundleDeploymentSpec{Source: rukpakv1alpha1.Source{
		Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: "r.test/b:v1", PollInterval: &metav1.Duration{Duration: 5 * time.Minute}}}}}
	for _, tc := range []struct {
		name    string
		err     error
		st      state
		want    ctrl.Result
		wantErr bool
	}{
		{"terminal, polled source", step.Terminal(rukpakv1alpha1.TypeUnpacked, rukpakv1alpha1.ReasonInvalidBundle, cause), state{}, ctrl.Result{RequeueAfter: 5 * time.Minute}, false},
		{"terminal, wrapped, polled source", fmt.Errorf("x: %w", step.Terminal(rukpakv1alpha1.TypeInstalled, apply.ReasonPreflightFailed, cause)), state{}, ctrl.Result{RequeueAfter: 5 * time.Minute}, false},
		{"retry after", step.Failed(rukpakv1alpha1.TypeInstalled, rukpakv1alpha1.ReasonObjectConflict, cause).After(unhealthyRecheck), state{}, ctrl.Result{RequeueAfter: unhealthyRecheck}, false},
		{"backoff", step.Failed(rukpakv1alpha1.TypeUnpacked, rukpakv1alpha1.ReasonUnpackFailed, cause), state{healthy: cause}, ctrl.Result{}, true},
		{"plain error", cause, state{}, ctrl.Result{}, true},
		{"unhealthy", nil, state{healthy: cause}, ctrl.Result{RequeueAfter: unhealthyRecheck}, false},
		{"deadline first", nil, state{healthy: cause, progress: &progress{recheck: 3 * time.Second}}, ctrl.Result{RequeueAfter: 3 * time.Second}, false},
		{"deadline later", nil, state{healthy: cause, progress: &progress{recheck: time.Hour}}, ctrl.Result{RequeueAfter: unhealthyRecheck}, false},
		{"healthy", nil, state{}, ctrl.Result{RequeueAfter: 5 * time.Minute}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := (&BundleDeploymentReconciler{}).result(t.Context(), poll, &tc.st, tc.err)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("result = %+v, %v; want %+v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
	// Without polling, a terminal step error is controller-runtime's terminal error: not retried.
	still := &rukpakv1alpha1.BundleDeployment{Spec: rukpakv1alpha1.BundleDeploymentSpec{Source: rukpakv1alpha1.Source{
		Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: "r.test/b:v1"}}}}
	got, err := (&BundleDeploymentReconciler{}).result(t.Context(), still, &state{}, step.Terminal(rukpakv1alpha1.TypeUnpacked, rukpakv1alpha1.ReasonInvalidBundle, cause))
	if got != (ctrl.Result{}) || !errors.Is(err, reconcile.TerminalError(nil)) || !errors.Is(err, cause) {
		t.Errorf("terminal without polling: %+v, %v; want controller-runtime's terminal error", got, err)
	}
}

// Events: one per condition transition (Normal unless the condition fails), the Installed=True
// transition telling a first install; the explicit Installed Event for a revision installed over
// an installed one (Installed stays True); nothing when nothing changed.
func TestEmitEvents(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg}
	}
	orig := &rukpakv1alpha1.BundleDeployment{}
	orig.Status.Conditions = []metav1.Condition{
		cond(rukpakv1alpha1.TypePaused, metav1.ConditionTrue, rukpakv1alpha1.ReasonPaused, "paused"),
		cond(rukpakv1alpha1.TypeUnpacked, metav1.ConditionTrue, rukpakv1alpha1.ReasonUnpackSucceeded, "unpacked v1"),
		cond(rukpakv1alpha1.TypeInstalled, metav1.ConditionFalse, rukpakv1alpha1.ReasonInstallPending, "nothing yet"),
	}
	bd := orig.DeepCopy()
	bd.Status.Conditions = []metav1.Condition{
		cond(rukpakv1alpha1.TypePaused, metav1.ConditionFalse, rukpakv1alpha1.ReasonNotPaused, "not paused"),
		cond(rukpakv1alpha1.TypeUnpacked, metav1.ConditionTrue, rukpakv1alpha1.ReasonUnpackSucceeded, "unpacked v2"),
		cond(rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded, "revision 1 is installed"),
		cond(rukpakv1alpha1.TypeHealthy, metav1.ConditionFalse, rukpakv1alpha1.ReasonUnhealthy, "deployment x: 0/1 ready"),
	}
	rec := events.NewFakeRecorder(10)
	r := &BundleDeploymentReconciler{Recorder: rec}
	r.emitEvents(orig, bd, &state{applied: &apply.Result{Revision: 1, Changed: true}, hash: "sha256:1"})
	want := []string{
		"Normal NotPaused Paused=False: not paused",
		"Normal InstallationSucceeded Installed=True: revision 1 is installed",
		"Warning Unhealthy Healthy=False: deployment x: 0/1 ready",
	}
	for _, w := range want {
		select {
		case got := <-rec.Events:
			if got != w {
				t.Errorf("event %q, want %q", got, w)
			}
		default:
			t.Errorf("missing event %q", w)
		}
	}
	r.emitEvents(bd, bd, &state{})
	if len(rec.Events) != 0 {
		t.Errorf("no change, yet %d more events: %q", len(rec.Events), <-rec.Events)
	}
	upgraded := bd.DeepCopy()
	upgraded.Status.Conditions[2] = cond(rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded, "revision 2 is installed")
	r.emitEvents(bd, upgraded, &state{applied: &apply.Result{Revision: 2, Changed: true}, hash: "sha256:2"})
	if got, want := len(rec.Events), 1; got != want {
		t.Fatalf("an upgrade recorded %d events, want %d", got, want)
	}
	if got, want := <-rec.Events, "Normal Installed installed revision 2 (sha256:2)"; got != want {
		t.Errorf("upgrade: event %q, want %q", got, want)
	}
}
