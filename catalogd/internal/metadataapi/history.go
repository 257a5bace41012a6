package metadataapi

import (
	"sort"

	"k8s.io/apimachinery/pkg/watch"
)

// change is what one transition did to one object. old is nil for ADDED, new is nil for DELETED.
type change struct {
	typ      watch.EventType
	old, new *entry
}

func (c change) object() string {
	if c.new != nil {
		return c.new.object
	}
	return c.old.object
}

// transition is one step of the served state: one catalog's content added, replaced or removed.
// from and to are the state resourceVersions before and after.
type transition struct {
	from, to string
	changes  []change
}

// history retains the latest transitions of this process, without content (entries only), so that a
// watch from a recent state, whichever replica issued it, continues with exactly the changes since.
// States are content-derived: a state this process went through has the resourceVersion every
// other replica gave it.
type history struct {
	// base is the state before transitions[0] (the latest state when there are none).
	base        string
	transitions []transition
	changes     int
	// At most maxTransitions transitions and, beyond the latest one, maxChanges changes are retained.
	maxTransitions, maxChanges int
}

func (h *history) add(t transition) {
	h.transitions = append(h.transitions, t)
	h.changes += len(t.changes)
	for len(h.transitions) > 1 && (len(h.transitions) > h.maxTransitions || h.changes > h.maxChanges) {
		h.base = h.transitions[0].to
		h.changes -= len(h.transitions[0].changes)
		h.transitions[0] = transition{}
		h.transitions = h.transitions[1:]
	}
}

// latest is the current state's resourceVersion.
func (h *history) latest() string {
	if n := len(h.transitions); n > 0 {
		return h.transitions[n-1].to
	}
	return h.base
}

// retains says whether state rv can be continued from.
func (h *history) retains(rv string) bool {
	_, ok := h.start(rv)
	return ok
}

// start is the index of the first transition after the latest occurrence of state rv.
func (h *history) start(rv string) (int, bool) {
	for i := len(h.transitions) - 1; i >= 0; i-- {
		if h.transitions[i].to == rv {
			return i + 1, true
		}
	}
	return 0, rv == h.base
}

// since returns the net changes from state rv to the latest state, one per object, in object name
// order: an object added and removed again is not mentioned, one changed and changed back neither.
// The result depends only on the two states' content, not on the path between them. ok is false
// when rv is not retained.
func (h *history) since(rv string) (changes []change, ok bool) {
	i, ok := h.start(rv)
	if !ok {
		return nil, false
	}
	type net struct{ before, after *entry }
	nets := map[string]*net{}
	for _, t := range h.transitions[i:] {
		for _, c := range t.changes {
			n, seen := nets[c.object()]
			if !seen {
				n = &net{before: c.old}
				nets[c.object()] = n
			}
			n.after = c.new
		}
	}
	for _, n := range nets {
		switch {
		case n.before == nil && n.after == nil:
		case n.before == nil:
			changes = append(changes, change{typ: watch.Added, new: n.after})
		case n.after == nil:
			changes = append(changes, change{typ: watch.Deleted, old: n.before})
		case n.before.hash != n.after.hash:
			changes = append(changes, change{typ: watch.Modified, old: n.before, new: n.after})
		}
	}
	sortChanges(changes)
	return changes, true
}

func sortChanges(cs []change) {
	sort.Slice(cs, func(i, j int) bool { return cs[i].object() < cs[j].object() })
}
