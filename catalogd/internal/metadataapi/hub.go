package metadataapi

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	metadatav1alpha1 "github.com/olmv1/olmv1/catalogd/api/metadata/v1alpha1"
)

// Blob is one FBC blob of a served catalog.
type Blob struct {
	Schema, Package, Name string
	// Content is the blob's JSON, unchanged.
	Content []byte
}

// Filter narrows blobs by exact values; an empty field matches everything.
type Filter struct {
	Schema, Package, Name string
	// NoContent leaves Blob.Content nil: the blobs are not read, only their identities (answers in
	// metadata-only forms, such as kubectl get's tables, need no more).
	NoContent bool
}

// ContentReader is the read side of catalogd's content store.
type ContentReader interface {
	// Hashes returns the content hash of every served catalog, by catalog name.
	Hashes() map[string]string
	// Open returns the served content of catalog. It stays readable until closed, even after the
	// store replaced it. ok is false when the catalog is not served.
	Open(catalog string) (s Snapshot, ok bool, err error)
}

// Snapshot is one immutable version of a catalog's content.
type Snapshot interface {
	// Hash is the content hash (the Catalog's status.contentHash).
	Hash() string
	// Blobs calls fn for every blob that matches f, always in the same order for the same content.
	Blobs(f Filter, fn func(Blob) error) error
	Close() error
}

// entry is what the hub remembers of one object: its identity and a digest of its content. Content
// itself stays in the store. Entries are never modified.
type entry struct {
	object                     string // the object's name
	catalog, schema, pkg, name string
	hash                       [sha256.Size]byte // blobDigest
	rv                         string            // objectVersion(hash)
}

func newEntry(catalog string, b Blob) *entry {
	d := blobDigest(catalog, b)
	return &entry{
		object:  ObjectName(catalog, b.Schema, b.Package, b.Name),
		catalog: catalog, schema: b.Schema, pkg: b.Package, name: b.Name,
		hash: d, rv: objectVersion(d),
	}
}

// pinned keeps a Snapshot open while the hub serves it or a request still reads it.
type pinned struct {
	snap Snapshot
	refs atomic.Int64
}

func newPinned(s Snapshot) *pinned {
	p := &pinned{snap: s}
	p.refs.Store(1) // the hub's reference
	return p
}

// acquire is called with the hub locked, while p is served (so the hub's reference is still held).
func (p *pinned) acquire() *pinned {
	p.refs.Add(1)
	return p
}

func (p *pinned) release() {
	if p.refs.Add(-1) == 0 {
		_ = p.snap.Close()
	}
}

// catalogState is the served content of one catalog. It is replaced, never modified.
type catalogState struct {
	hash    string
	pin     *pinned
	objects map[string]*entry // by object name
}

// Hub tracks every served object and its resourceVersion, retains recent transitions (history.go)
// and fans out watch events. The store's subscription calls Notify whenever a catalog's content is
// swapped in or removed; Sync catches up with anything not notified.
type Hub struct {
	reader ContentReader

	// notifyMu serialises Notify: the content of a catalog is read outside mu.
	notifyMu sync.Mutex

	mu       sync.RWMutex
	rv       string
	catalogs map[string]*catalogState
	byName   map[string]*entry
	history  history
	watchers map[*hubWatcher]struct{}
}

const (
	// historyTransitions and historyChanges bound what a Hub retains for continuing watches.
	historyTransitions = 256
	historyChanges     = 1 << 16
)

// NewHub indexes every catalog the reader serves.
func NewHub(reader ContentReader) (*Hub, error) {
	h := &Hub{
		reader: reader, catalogs: map[string]*catalogState{}, byName: map[string]*entry{}, watchers: map[*hubWatcher]struct{}{},
		history: history{maxTransitions: historyTransitions, maxChanges: historyChanges},
	}
	h.rv = stateVersion(nil)
	h.history.base = h.rv
	if err := h.Sync(); err != nil {
		return nil, err
	}
	return h, nil
}

// ResourceVersion is the resourceVersion of the current state.
func (h *Hub) ResourceVersion() string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.rv
}

// knows says whether a watch or list can start from state rv here.
func (h *Hub) knows(rv string) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return rv == h.rv || h.history.retains(rv)
}

// Sync brings the hub in step with the reader: every catalog whose served content differs from the
// hub's is read again (Notify).
func (h *Hub) Sync() error {
	served := h.reader.Hashes()
	h.mu.RLock()
	var stale []string
	for c, hash := range served {
		if s, ok := h.catalogs[c]; !ok || s.hash != hash {
			stale = append(stale, c)
		}
	}
	for c := range h.catalogs {
		if _, ok := served[c]; !ok {
			stale = append(stale, c)
		}
	}
	h.mu.RUnlock()
	sort.Strings(stale)
	var errs []error
	for _, c := range stale {
		if err := h.Notify(c); err != nil {
			errs = append(errs, fmt.Errorf("catalog %q: %w", c, err))
		}
	}
	return errors.Join(errs...)
}

// Notify re-reads catalog from the store; when its content changed it moves to the new state,
// records the transition and sends ADDED, MODIFIED and DELETED events (then a bookmark) to watchers.
// The steps: open the served content → readState (outside the lock: readers keep being served the
// previous state) → deletions → commit (under the lock).
func (h *Hub) Notify(catalog string) error {
	h.notifyMu.Lock()
	defer h.notifyMu.Unlock()
	snap, served, err := h.reader.Open(catalog)
	if err != nil {
		return err
	}
	h.mu.RLock()
	prev := h.catalogs[catalog]
	h.mu.RUnlock()
	if !served && prev == nil {
		return nil
	}
	if served && prev != nil && prev.hash == snap.Hash() {
		return snap.Close()
	}

	var next *catalogState
	var events []objectEvent
	if served {
		if next, events, err = readState(catalog, snap, prev); err != nil {
			return err
		}
	}
	events = appendDeleted(events, prev, next)
	sort.Slice(events, func(i, j int) bool { return events[i].object() < events[j].object() })
	h.commit(catalog, prev, next, events)
	if prev != nil {
		prev.pin.release()
	}
	return nil
}

// objectEvent is one watch event of a transition, with the change the history retains of it.
type objectEvent struct {
	change
	obj *metadatav1alpha1.CatalogMetadata
}

// readState reads catalog's new content snap into a state that pins it, with an ADDED or MODIFIED
// event for every object that is new or changed since prev (nil: the catalog was not served).
// Objects that did not change keep prev's entries. On failure snap is closed.
func readState(catalog string, snap Snapshot, prev *catalogState) (*catalogState, []objectEvent, error) {
	next := &catalogState{hash: snap.Hash(), pin: newPinned(snap), objects: map[string]*entry{}}
	var events []objectEvent
	err := snap.Blobs(Filter{}, func(b Blob) error {
		e := newEntry(catalog, b)
		if _, dup := next.objects[e.object]; dup {
			return nil // the same identity twice: the first one is the object
		}
		var old *entry
		if prev != nil {
			old = prev.objects[e.object]
		}
		if old != nil && old.hash == e.hash {
			next.objects[e.object] = old
			return nil
		}
		next.objects[e.object] = e
		typ := watch.Added
		if old != nil {
			typ = watch.Modified
		}
		events = append(events, objectEvent{change{typ: typ, old: old, new: e}, newObject(e, b.Content)})
		return nil
	})
	if err != nil {
		next.pin.release()
		return nil, nil, err
	}
	return next, events, nil
}

// appendDeleted appends a DELETED event for every object of prev that next (nil: the catalog is no
// longer served) does not have.
func appendDeleted(events []objectEvent, prev, next *catalogState) []objectEvent {
	if prev == nil {
		return events
	}
	for name, old := range prev.objects {
		if next == nil || next.objects[name] == nil {
			events = append(events, objectEvent{change{typ: watch.Deleted, old: old}, newObject(old, nil)})
		}
	}
	return events
}

// commit swaps catalog's state prev for next (either may be nil), moves to the new state version,
// records the transition in the history and sends events, then a bookmark, to every watcher.
func (h *Hub) commit(catalog string, prev, next *catalogState, events []objectEvent) {
	changes := make([]change, len(events))
	for i, ev := range events {
		changes[i] = ev.change
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	if prev != nil {
		for name := range prev.objects {
			delete(h.byName, name)
		}
		delete(h.catalogs, catalog)
	}
	if next != nil {
		h.catalogs[catalog] = next
		for name, e := range next.objects {
			h.byName[name] = e
		}
	}
	hashes := make(map[string]string, len(h.catalogs))
	for c, s := range h.catalogs {
		hashes[c] = s.hash
	}
	from := h.rv
	h.rv = stateVersion(hashes)
	h.history.add(transition{from: from, to: h.rv, changes: changes})
	mark := bookmark(h.rv, false)
	for w := range h.watchers {
		for _, ev := range events {
			w.send(watch.Event{Type: ev.typ, Object: ev.obj})
		}
		w.send(mark)
	}
}

// lookup returns an object's entry and its catalog's content, pinned: the caller releases it.
func (h *Hub) lookup(name string) (*entry, *pinned, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	e, ok := h.byName[name]
	if !ok {
		return nil, nil, false
	}
	return e, h.catalogs[e.catalog].pin.acquire(), true
}

// view is a consistent state for one list: the served catalogs in name order, pinned.
type view struct {
	rv       string
	catalogs []string
	states   map[string]*catalogState
}

// view pins the current state; only, when set, restricts it to that catalog.
func (h *Hub) view(only string) *view {
	h.mu.RLock()
	defer h.mu.RUnlock()
	v := &view{rv: h.rv, states: map[string]*catalogState{}}
	for c, s := range h.catalogs {
		if only != "" && c != only {
			continue
		}
		s.pin.acquire()
		v.catalogs = append(v.catalogs, c)
		v.states[c] = s
	}
	sort.Strings(v.catalogs)
	return v
}

func (v *view) release() {
	for _, s := range v.states {
		s.pin.release()
	}
	v.states = nil
}

// restVersion is the stateVersion of catalog from and every later catalog of the view.
func (v *view) restVersion(from string) string {
	hashes := map[string]string{}
	for _, c := range v.catalogs {
		if c >= from {
			hashes[c] = v.states[c].hash
		}
	}
	return stateVersion(hashes)
}

func newObject(e *entry, content []byte) *metadatav1alpha1.CatalogMetadata {
	obj := &metadatav1alpha1.CatalogMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: metadatav1alpha1.SchemeGroupVersion.String(), Kind: "CatalogMetadata"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            e.object,
			ResourceVersion: e.rv,
			Labels:          objectLabels(e.catalog, e.schema, e.pkg, e.name),
		},
		Spec: metadatav1alpha1.CatalogMetadataSpec{Catalog: e.catalog, Schema: e.schema, Package: e.pkg, Name: e.name},
	}
	if content != nil {
		obj.Spec.Content = runtime.RawExtension{Raw: content}
	}
	return obj
}

// bookmark tells a watcher that it has seen every change up to state rv; initialEnd marks the end of
// the initial events of a watch-list request (sendInitialEvents).
func bookmark(rv string, initialEnd bool) watch.Event {
	obj := &metadatav1alpha1.CatalogMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: metadatav1alpha1.SchemeGroupVersion.String(), Kind: "CatalogMetadata"},
		ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv},
	}
	if initialEnd {
		obj.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	}
	return watch.Event{Type: watch.Bookmark, Object: obj}
}
