package step

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
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

func cond(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg}
}

func TestEventsOnTransitions(t *testing.T) {
	p := Policy{NotFailures: []string{"Paused"}, Progressing: []string{"Pending"}, Warnings: []string{"ServingPreviousContent"}}
	before := []metav1.Condition{
		cond("Unpacked", metav1.ConditionTrue, "UnpackSucceeded", "generation 1: unpacked"),
		cond("Installed", metav1.ConditionFalse, "InstallFailed", "first error"),
		cond("Healthy", metav1.ConditionTrue, "Healthy", "all good"),
		cond("Paused", metav1.ConditionFalse, "NotPaused", ""),
	}
	after := []metav1.Condition{
		cond("Unpacked", metav1.ConditionTrue, "UnpackSucceeded", "generation 2: unpacked"), // True, message only: no event
		cond("Installed", metav1.ConditionFalse, "InstallFailed", "second error"),           // failing, new message: Warning
		cond("Healthy", metav1.ConditionTrue, "Healthy", "all good"),                        // unchanged
		cond("Paused", metav1.ConditionTrue, "Paused", "since then"),                        // transition: Normal
		cond("Serving", metav1.ConditionFalse, "Pending", "unpacking generation 2"),         // new, progressing: Normal
		cond("Resolved", metav1.ConditionTrue, "ServingPreviousContent", "old"),             // warning reason on True
	}
	got := p.Events(before, after)
	want := []Event{
		{Type: "Warning", Reason: "InstallFailed", Action: "Installed", Message: "Installed=False: second error"},
		{Type: "Normal", Reason: "Paused", Action: "Paused", Message: "Paused=True: since then"},
		{Type: "Normal", Reason: "Pending", Action: "Serving", Message: "Serving=False: unpacking generation 2"},
		{Type: "Warning", Reason: "ServingPreviousContent", Action: "Resolved", Message: "Resolved=True: old"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Events =\n%v\nwant\n%v", got, want)
	}
	fresh := p.Events(nil, []metav1.Condition{cond("Paused", metav1.ConditionFalse, "NotPaused", ""), cond("Installed", metav1.ConditionFalse, "Pending", "soon")})
	if len(fresh) != 1 || fresh[0].Action != "Installed" {
		t.Fatalf("a new object: want only the Installed event, got %v", fresh)
	}
	if again := p.Events(after, after); len(again) != 0 {
		t.Fatalf("no change must give no event, got %v", again)
	}
}

func TestEventMessagesAreBounded(t *testing.T) {
	long := strings.Repeat("é", 2000)
	ev := Policy{}.Events(nil, []metav1.Condition{cond("Installed", metav1.ConditionFalse, "InstallFailed", long)})
	if len(ev) != 1 || len(ev[0].Message) > MaxMessageBytes || !strings.HasSuffix(ev[0].Message, "…") {
		t.Fatalf("message not bounded: %d bytes", len(ev[0].Message))
	}
	if !strings.HasPrefix(ev[0].Message, "Installed=False: é") {
		t.Fatalf("message lost its prefix: %q", ev[0].Message[:40])
	}
}

func TestRecord(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	Policy{}.Record(rec, nil, nil, []metav1.Condition{cond("Installed", metav1.ConditionFalse, "InstallFailed", "x")})
	if got := <-rec.Events; got != "Warning InstallFailed Installed=False: x" {
		t.Fatalf("recorded %q", got)
	}
	Policy{}.Record(nil, nil, nil, []metav1.Condition{cond("Installed", metav1.ConditionFalse, "InstallFailed", "x")}) // nil recorder: no panic
}
