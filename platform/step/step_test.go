package step

import (
	"errors"
	"fmt"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestTerminalMatchesControllerRuntime(t *testing.T) {
	cause := errors.New("bundle has no manifests/")
	term := fmt.Errorf("rendering: %w", Terminal("Unpacked", "InvalidBundle", cause))
	if !errors.Is(term, reconcile.TerminalError(nil)) || !IsTerminal(term) {
		t.Fatalf("a terminal step error must match controller-runtime's terminal error")
	}
	if !errors.Is(term, cause) {
		t.Fatalf("the cause must stay in the chain")
	}
	if got := Terminal("Unpacked", "InvalidBundle", cause).Error(); got != cause.Error() {
		t.Fatalf("Error() = %q, want the cause's text %q (it is the condition message)", got, cause.Error())
	}
	retry := Failed("Unpacked", "UnpackFailed", cause)
	if errors.Is(retry, reconcile.TerminalError(nil)) || IsTerminal(retry) {
		t.Fatalf("a retryable step error must not be terminal")
	}
	if IsTerminal(nil) {
		t.Fatalf("nil is not terminal")
	}
	if !IsTerminal(reconcile.TerminalError(cause)) {
		t.Fatalf("controller-runtime's own terminal error is terminal")
	}
	se, ok := As(term)
	if !ok || se.Condition != "Unpacked" || se.Reason != "InvalidBundle" {
		t.Fatalf("As = %+v, %v", se, ok)
	}
}

func TestResult(t *testing.T) {
	cause := errors.New("boom")
	poll := ctrl.Result{RequeueAfter: 5 * time.Minute}
	for _, tc := range []struct {
		name    string
		err     error
		ok      ctrl.Result
		want    ctrl.Result
		wantErr bool
	}{
		{"success returns ok", nil, poll, poll, false},
		{"retry-after requeues without error", Failed("Unpacked", "UnpackFailed", cause).After(3 * time.Second), poll, ctrl.Result{RequeueAfter: 3 * time.Second}, false},
		{"zero After keeps backoff", Failed("Unpacked", "UnpackFailed", cause).After(0), poll, ctrl.Result{}, true},
		{"retryable backs off", Failed("Unpacked", "UnpackFailed", cause), poll, ctrl.Result{}, true},
		{"plain error backs off", cause, ctrl.Result{}, ctrl.Result{}, true},
		{"terminal while polling waits for the poll", Terminal("Unpacked", "InvalidCatalog", cause), poll, poll, false},
		{"terminal without polling is returned", Terminal("Installed", "PreflightFailed", cause), ctrl.Result{}, ctrl.Result{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Result(tc.err, tc.ok)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Fatalf("Result = %+v, %v; want %+v, error %v", got, err, tc.want, tc.wantErr)
			}
			if err != nil && !errors.Is(err, cause) {
				t.Fatalf("the returned error lost its cause: %v", err)
			}
		})
	}
}
