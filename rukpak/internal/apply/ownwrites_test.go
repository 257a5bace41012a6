package apply

import "testing"

// TestConsumeOwnWrite: the resourceVersion an apply wrote is recognised once; another one (a later
// change by someone else) is not, and the first event after the write settles it either way.
func TestConsumeOwnWrite(t *testing.T) {
	e := &Engine{}
	k := ObjectKey{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "d"}
	if e.ConsumeOwnWrite(k, "7") {
		t.Fatal("nothing was applied: no write is rukpak's")
	}
	e.own.record(k, "7")
	if !e.ConsumeOwnWrite(k, "7") {
		t.Error("the resourceVersion the apply wrote is its own write")
	}
	if e.ConsumeOwnWrite(k, "7") {
		t.Error("a write is recognised once")
	}
	e.own.record(k, "9")
	if e.ConsumeOwnWrite(k, "10") {
		t.Error("a later resourceVersion is someone else's change")
	}
	if e.ConsumeOwnWrite(k, "9") {
		t.Error("the first event after the write settles it: an older resourceVersion is not taken afterwards")
	}
	e.own.record(k, "11")
	if e.ConsumeOwnWrite(ObjectKey{Group: "apps", Kind: "Deployment", Namespace: "ns", Name: "other"}, "11") {
		t.Error("another object's write is not this one's")
	}
}
