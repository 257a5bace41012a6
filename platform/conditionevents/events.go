// Package conditionevents is the events policy the three controllers share, and the only code that
// calls an event recorder:
//
//   - one Event per condition transition (a new condition that is not Unknown, a changed status or
//     reason, or a changed message while the condition fails), Warning for failures and Normal otherwise (Policy.Events,
//     Policy.Record);
//   - one Event for what happened outside the conditions (a finalizer step, a revision installed or
//     rolled back, a certificate renewed, a dependency created): Normal and Warning.
//
// Events are events.k8s.io/v1 (Recorder, from the manager's GetEventRecorder): the reason, an
// action (a condition's type, or the verb of what happened) and a note bounded to MaxMessageBytes.
// The check test TestNoEventCallsOutsideThePolicy keeps every other package of catalogd, rukpak,
// operator-controller and platform from calling a recorder itself.
package conditionevents

import (
	"fmt"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// Recorder is the one event-recorder API of the controllers: events.k8s.io/v1, as
// controller-runtime's manager.GetEventRecorder(name) returns it (name = the reporting controller).
// Controllers hold one and hand it to Policy.Record, Normal and Warning; they never call it.
type Recorder = events.EventRecorder

// Event is one Event to record on the object whose conditions changed (Policy.Events), or on which
// something happened (Normal, Warning).
type Event struct {
	// Type is Normal or Warning.
	Type string
	// Reason is the condition's reason (or what happened).
	Reason string
	// Action is the condition's type (or the verb of what happened): the events.k8s.io action.
	Action string
	// Message is "<Type>=<Status>: <message>" (or the details of what happened), at most
	// MaxMessageBytes long.
	Message string
}

// MaxMessageBytes bounds an Event's message (events.k8s.io refuses a note over 1 KiB).
const MaxMessageBytes = 1024

// Policy says which condition states are not failures.
type Policy struct {
	// NotFailures are condition types whose False status is no failure (Paused, Deprecated, ...):
	// their transitions are always Normal.
	NotFailures []string
	// Progressing are reasons that mean "not there yet" rather than failed (Pending, Unpacking):
	// a False condition with one of them is Normal.
	Progressing []string
	// Warnings are reasons that are Warnings even on a True condition (serving previous content).
	Warnings []string
}

// Events is the policy of all three controllers: one Event per condition transition between before
// and after. A transition is a new condition (but for a False one of the NotFailures types: a new
// object that is not paused is no news; nor is a new Unknown one, e.g. Installed before anything was
// installed: the first status it knows is its first Event), or a changed status or reason; a changed message is one too
// while the condition is failing, so that a different error is seen. Events are Warning when
// the condition fails (False, not progressing, type not in NotFailures) and Normal otherwise, in the
// order of after.
func (p Policy) Events(before, after []metav1.Condition) []Event {
	var out []Event
	for _, cur := range after {
		var old *metav1.Condition
		for i := range before {
			if before[i].Type == cur.Type {
				old = &before[i]
			}
		}
		warning := p.failing(cur)
		if old != nil && old.Status == cur.Status && old.Reason == cur.Reason && (!warning || old.Message == cur.Message) {
			continue
		}
		if old == nil && cur.Status == metav1.ConditionFalse && contains(p.NotFailures, cur.Type) {
			continue // a new object that is not paused (not deprecated, ...) is no news
		}
		if old == nil && cur.Status == metav1.ConditionUnknown {
			continue // nor is a new condition that is not known yet: its first known status is the news
		}
		typ := corev1.EventTypeNormal
		if warning {
			typ = corev1.EventTypeWarning
		}
		out = append(out, Event{Type: typ, Reason: cur.Reason, Action: cur.Type,
			Message: truncate(fmt.Sprintf("%s=%s: %s", cur.Type, cur.Status, cur.Message), MaxMessageBytes)})
	}
	return out
}

func (p Policy) failing(c metav1.Condition) bool {
	if contains(p.Warnings, c.Reason) {
		return true
	}
	if c.Status != metav1.ConditionFalse || contains(p.NotFailures, c.Type) || contains(p.Progressing, c.Reason) {
		return false
	}
	return true
}

// Record records the Events of before → after on obj (nil recorder: nothing).
func (p Policy) Record(rec Recorder, obj runtime.Object, before, after []metav1.Condition) {
	for _, e := range p.Events(before, after) {
		emit(rec, obj, e)
	}
}

// Normal records one Normal Event on obj for something that happened and is no condition
// transition (a condition's change is Policy.Record's): reason says what happened
// ("ContentDeleted", "Installed"), action is its verb ("Delete", "Install"; events.k8s.io requires
// one) and message the details, cut to MaxMessageBytes. Nil recorder or object: nothing.
func Normal(rec Recorder, obj runtime.Object, reason, action, message string) {
	emit(rec, obj, Event{Type: corev1.EventTypeNormal, Reason: reason, Action: action, Message: message})
}

// Warning is Normal for something that went wrong and that no condition reports (an uninstall
// that failed while the object is being deleted, a revision rolled back, a corrupt CA Secret).
func Warning(rec Recorder, obj runtime.Object, reason, action, message string) {
	emit(rec, obj, Event{Type: corev1.EventTypeWarning, Reason: reason, Action: action, Message: message})
}

// emit is the one recorder call: e's message goes out as the note verbatim (never as a format).
func emit(rec Recorder, obj runtime.Object, e Event) {
	if rec == nil || obj == nil {
		return
	}
	rec.Eventf(obj, nil, e.Type, e.Reason, e.Action, "%s", truncate(e.Message, MaxMessageBytes))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// truncate cuts s to at most n bytes on a rune boundary, ending in "…" when cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	cut := n - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}
