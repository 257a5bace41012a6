package conditionevents

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

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
	// A new condition not known yet is no news; its first known status is.
	unknown := []metav1.Condition{cond("Healthy", metav1.ConditionUnknown, "HealthUnknown", "nothing is installed yet")}
	if ev := p.Events(nil, unknown); len(ev) != 0 {
		t.Fatalf("a new Unknown condition: want no event, got %v", ev)
	}
	known := []metav1.Condition{cond("Healthy", metav1.ConditionTrue, "Healthy", "ready")}
	if ev := p.Events(unknown, known); len(ev) != 1 || ev[0].Message != "Healthy=True: ready" {
		t.Fatalf("Unknown → True: want its event, got %v", ev)
	}
	if ev := p.Events(known, unknown); len(ev) != 1 || ev[0].Action != "Healthy" {
		t.Fatalf("True → Unknown: want its event, got %v", ev)
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
	rec := &recorder{}
	obj := &corev1.ConfigMap{}
	Policy{}.Record(rec, obj, nil, []metav1.Condition{cond("Installed", metav1.ConditionFalse, "InstallFailed", "x")})
	want := []recorded{{obj, "Warning", "InstallFailed", "Installed", "Installed=False: x"}}
	if fmt.Sprint(rec.got) != fmt.Sprint(want) {
		t.Fatalf("recorded %v, want %v", rec.got, want)
	}
	Policy{}.Record(nil, obj, nil, []metav1.Condition{cond("Installed", metav1.ConditionFalse, "InstallFailed", "x")}) // nil recorder: no panic
}

func TestNormalAndWarning(t *testing.T) {
	rec := &recorder{}
	obj := &corev1.Secret{}
	Normal(rec, obj, "ServingCertificateRenewed", "Renew", "renewed (10% of its validity left)")
	Warning(rec, obj, "UninstallFailed", "Uninstall", strings.Repeat("x", 2*MaxMessageBytes))
	Normal(rec, nil, "Ignored", "Ignore", "no object: nothing")
	Warning(nil, obj, "Ignored", "Ignore", "no recorder: nothing")
	if len(rec.got) != 2 {
		t.Fatalf("want 2 events, got %v", rec.got)
	}
	if got, want := rec.got[0], (recorded{obj, "Normal", "ServingCertificateRenewed", "Renew", "renewed (10% of its validity left)"}); got != want {
		t.Errorf("Normal recorded %v, want %v (the message verbatim, not as a format)", got, want)
	}
	w := rec.got[1]
	if w.typ != "Warning" || w.reason != "UninstallFailed" || w.action != "Uninstall" || len(w.note) > MaxMessageBytes || !strings.HasSuffix(w.note, "…") {
		t.Errorf("Warning recorded %s %s %s with a %d-byte note, want a Warning cut to %d bytes", w.typ, w.reason, w.action, len(w.note), MaxMessageBytes)
	}
}

// recorder is a Recorder that keeps what it was given.
type recorder struct{ got []recorded }

type recorded struct {
	obj                       runtime.Object
	typ, reason, action, note string
}

func (r *recorder) Eventf(regarding, _ runtime.Object, typ, reason, action, note string, args ...any) {
	r.got = append(r.got, recorded{regarding, typ, reason, action, fmt.Sprintf(note, args...)})
}

func cond(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg}
}
