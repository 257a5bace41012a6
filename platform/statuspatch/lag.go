package statuspatch

import (
	"slices"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MaxLag bounds how long Lag.Behind holds a reconcile back: past it, a read is taken as it is (a
// watch that lost the write's event is re-listed by the informer in time; a reconcile must not wait
// for it forever).
const MaxLag = 5 * time.Second

// Lag tells a reconcile that reads an object from the manager's cache before the cache has seen
// this controller's own last write to it (its status patch, a finalizer added): such a reconcile
// sees the object as it was before that write and would redo what the write recorded (an apply
// repeated, the same condition transitions and their Events twice, the same status patched again).
// The cache of one informer never goes back: once it shows another resourceVersion than those the
// writes were computed from, it has seen them.
//
// The zero value is ready.
type Lag struct {
	m sync.Map // client.ObjectKey → *lagEntry
}

type lagEntry struct {
	mu sync.Mutex
	// before are the resourceVersions of the reads this controller's writes were computed from.
	before []string
	since  time.Time
}

// Wrote records that this controller wrote obj after reading it at resourceVersion before (the
// read the write was computed from).
func (l *Lag) Wrote(obj client.Object, before string) {
	if before == "" {
		return
	}
	v, _ := l.m.LoadOrStore(client.ObjectKeyFromObject(obj), &lagEntry{})
	e := v.(*lagEntry)
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.before) == 0 {
		e.since = time.Now()
	}
	if !slices.Contains(e.before, before) {
		e.before = append(e.before, before)
	}
}

// Behind reports whether obj, as read from the cache, is one of the reads this controller's last
// writes were computed from, and the cache has not shown anything newer since, for less than
// MaxLag: the reconcile should look again shortly rather than act on it. Any other read ends the
// wait.
func (l *Lag) Behind(obj client.Object) bool {
	v, ok := l.m.Load(client.ObjectKeyFromObject(obj))
	if !ok {
		return false
	}
	e := v.(*lagEntry)
	e.mu.Lock()
	defer e.mu.Unlock()
	if slices.Contains(e.before, obj.GetResourceVersion()) && time.Since(e.since) < MaxLag {
		return true
	}
	l.m.Delete(client.ObjectKeyFromObject(obj))
	return false
}

// Forget drops what is known of the object at key (it was deleted).
func (l *Lag) Forget(key client.ObjectKey) { l.m.Delete(key) }
