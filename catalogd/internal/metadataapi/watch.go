package metadataapi

import (
	"errors"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/watch"

	metadatav1alpha1 "github.com/olmv1/olmv1/catalogd/api/metadata/v1alpha1"
)

// errNotRetained: the requested state is neither the current one nor in the retained history.
var errNotRetained = errors.New("resourceVersion not retained")

// watchBuffer is how many events a watcher may fall behind before its watch is ended.
const watchBuffer = 4096

// hubWatcher is one open watch. Events that do not match its predicate are dropped. Events are
// queued and sent by the watcher's own goroutine, so the hub never waits for a client.
//
// A watcher that falls more than watchBuffer events behind is ended (its queue dropped, its result
// channel closed), as kube-apiserver's watch cache does: what the client received is a prefix of the
// stream, so it continues from the resourceVersion of the last event it got. After a bookmark that
// is a state this replica retains, and the watch continues exactly; after an object event it is an
// object's resourceVersion, which is 410 Gone, and the client lists again.
type hubWatcher struct {
	hub       *Hub
	match     func(*metadatav1alpha1.CatalogMetadata) bool
	bookmarks bool

	mu    sync.Mutex
	queue []watch.Event
	limit int
	ended bool

	wake     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
	result   chan watch.Event
}

func newWatcher(h *Hub, match func(*metadatav1alpha1.CatalogMetadata) bool, bookmarks bool) *hubWatcher {
	return &hubWatcher{
		hub: h, match: match, bookmarks: bookmarks, limit: watchBuffer,
		wake: make(chan struct{}, 1), done: make(chan struct{}), result: make(chan watch.Event, 64),
	}
}

// send queues ev; it is called with the hub locked.
func (w *hubWatcher) send(ev watch.Event) {
	if ev.Type == watch.Bookmark {
		if !w.bookmarks {
			return
		}
	} else if !w.match(ev.Object.(*metadatav1alpha1.CatalogMetadata)) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return
	}
	if len(w.queue) >= w.limit {
		// The client is not keeping up: end the watch; it continues from what it received.
		w.queue, w.ended = nil, true
		delete(w.hub.watchers, w)
	} else {
		w.queue = append(w.queue, ev)
	}
	w.signal()
}

func (w *hubWatcher) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// start sends first, then whatever was queued since the watcher was registered.
func (w *hubWatcher) start(first []watch.Event) {
	w.mu.Lock()
	if !w.ended {
		w.queue = append(first, w.queue...)
		w.limit += len(first)
	}
	w.mu.Unlock()
	go w.run()
}

func (w *hubWatcher) run() {
	defer close(w.result)
	for {
		w.mu.Lock()
		batch, ended := w.queue, w.ended
		w.queue = nil
		w.mu.Unlock()
		for _, ev := range batch {
			select {
			case w.result <- ev:
			case <-w.done:
				return
			}
		}
		if ended {
			return
		}
		if len(batch) == 0 {
			select {
			case <-w.wake:
			case <-w.done:
				return
			}
		}
	}
}

// Stop implements watch.Interface.
func (w *hubWatcher) Stop() {
	w.stopOnce.Do(func() {
		w.hub.mu.Lock()
		delete(w.hub.watchers, w)
		w.hub.mu.Unlock()
		w.mu.Lock()
		w.ended = true
		w.mu.Unlock()
		close(w.done)
	})
}

// ResultChan implements watch.Interface.
func (w *hubWatcher) ResultChan() <-chan watch.Event { return w.result }

// startWatch opens a watch over the objects sel matches. from is "" to start at the current state,
// or the resourceVersion of a state to continue from: the watch first sends the net changes since
// that state (errNotRetained when this process neither serves nor retains it). initial sends every
// matching object as ADDED first instead. With bookmarks, a bookmark of the state the watch
// started at follows those first events (if any were due) (marked as the end of the initial events when initial), and
// one follows every later change.
func (h *Hub) startWatch(sel selection, from string, initial, bookmarks bool) (*hubWatcher, error) {
	w := newWatcher(h, sel.matches, bookmarks)
	var first []change
	pins := map[string]*pinned{}

	h.mu.Lock()
	var since []change
	if from != "" && from != h.rv {
		var ok bool
		if since, ok = h.history.since(from); !ok {
			h.mu.Unlock()
			return nil, errNotRetained
		}
	}
	if initial {
		for c, s := range h.catalogs {
			if sel.catalog != "" && c != sel.catalog {
				continue
			}
			for _, e := range s.objects {
				first = append(first, change{typ: watch.Added, new: e})
			}
		}
	} else {
		first = since
	}
	kept := first[:0]
	for _, c := range first {
		e := c.new
		if e == nil {
			e = c.old
		}
		if !sel.matches(newObject(e, nil)) {
			continue
		}
		kept = append(kept, c)
		if c.new != nil && pins[e.catalog] == nil {
			pins[e.catalog] = h.catalogs[e.catalog].pin.acquire()
		}
	}
	first = kept
	at := h.rv
	h.watchers[w] = struct{}{}
	h.mu.Unlock()

	events, err := firstEvents(first, pins, sel.filter)
	for _, p := range pins {
		p.release()
	}
	if err != nil {
		w.Stop()
		return nil, err
	}
	if bookmarks && (initial || (from != "" && from != at)) {
		events = append(events, bookmark(at, initial))
	}
	w.start(events)
	return w, nil
}

// firstEvents turns changes into events, reading the content of the ADDED and MODIFIED objects from
// their catalogs' pinned content (one query per catalog).
func firstEvents(changes []change, pins map[string]*pinned, f Filter) ([]watch.Event, error) {
	sortChanges(changes)
	content := map[string][]byte{}
	want := map[string]bool{}
	for _, c := range changes {
		if c.new != nil {
			want[c.new.object] = true
		}
	}
	catalogs := make([]string, 0, len(pins))
	for c := range pins {
		catalogs = append(catalogs, c)
	}
	sort.Strings(catalogs)
	for _, c := range catalogs {
		if err := pins[c].snap.Blobs(f, func(b Blob) error {
			if name := ObjectName(c, b.Schema, b.Package, b.Name); want[name] && content[name] == nil {
				content[name] = b.Content
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	events := make([]watch.Event, 0, len(changes))
	for _, c := range changes {
		if c.new == nil {
			events = append(events, watch.Event{Type: c.typ, Object: newObject(c.old, nil)})
			continue
		}
		events = append(events, watch.Event{Type: c.typ, Object: newObject(c.new, content[c.new.object])})
	}
	return events, nil
}
