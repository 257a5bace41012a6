package metadataapi

import (
	"crypto/sha256"
	metadatav1alpha1 "github.com/olmv1/olmv1/catalogd/api/metadata/v1alpha1"
	"sort"
	"strconv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
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
}

// ContentReader is the read side of catalogd's content store.
type ContentReader interface {
	// Catalogs returns the names of the catalogs whose content is served.
	Catalogs() []string
	// Blobs calls fn for every blob of catalog that matches f, always in the same order for the same
	// content. A catalog that is not served has no blobs.
	Blobs(catalog string, f Filter, fn func(Blob) error) error
}

// entry is what the hub remembers of one object: its identity, a hash of its content and the
// resource version at which it last changed. Content itself stays in the store.
type entry struct {
	catalog, schema, pkg, name string
	hash                       [sha256.Size]byte
	rv                         uint64
}

type catalogState struct {
	rv      uint64
	objects map[string]*entry // by object name
}

// Hub tracks resource versions of every served blob and fans out watch events. The store calls
// Notify whenever a catalog's content is swapped in or removed.
type Hub struct {
	reader ContentReader

	mu       sync.RWMutex
	rv       uint64
	catalogs map[string]*catalogState
	byName   map[string]*entry
	watchers map[*hubWatcher]struct{}
}

// NewHub indexes every catalog the reader serves.
func NewHub(reader ContentReader) (*Hub, error) {
	h := &Hub{reader: reader, catalogs: map[string]*catalogState{}, byName: map[string]*entry{}, watchers: map[*hubWatcher]struct{}{}}
	for _, c := range reader.Catalogs() {
		if err := h.Notify(c); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// ResourceVersion is the current version of the whole API.
func (h *Hub) ResourceVersion() uint64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.rv
}

// Notify re-reads catalog from the store, assigns a new resource version to what changed and sends
// ADDED, MODIFIED and DELETED events to the watchers.
func (h *Hub) Notify(catalog string) error {
	type change struct {
		typ watch.EventType
		obj *metadatav1alpha1.CatalogMetadata
	}
	next := map[string]*entry{}
	var changes []change

	h.mu.Lock()
	defer h.mu.Unlock()
	prev := h.catalogs[catalog]
	rv := h.rv + 1
	err := h.reader.Blobs(catalog, Filter{}, func(b Blob) error {
		name := ObjectName(catalog, b.Schema, b.Package, b.Name)
		e := &entry{catalog: catalog, schema: b.Schema, pkg: b.Package, name: b.Name, hash: sha256.Sum256(b.Content), rv: rv}
		typ := watch.Added
		if prev != nil {
			if old, ok := prev.objects[name]; ok {
				if old.hash == e.hash {
					e.rv = old.rv
					next[name] = e
					return nil
				}
				typ = watch.Modified
			}
		}
		next[name] = e
		changes = append(changes, change{typ, newObject(name, e, b.Content)})
		return nil
	})
	if err != nil {
		return err
	}
	if prev != nil {
		for name, old := range prev.objects {
			if _, ok := next[name]; !ok {
				gone := *old
				gone.rv = rv
				changes = append(changes, change{watch.Deleted, newObject(name, &gone, nil)})
			}
		}
	}
	if len(changes) == 0 {
		return nil
	}
	h.rv = rv
	if prev != nil {
		for name := range prev.objects {
			delete(h.byName, name)
		}
	}
	if len(next) == 0 {
		delete(h.catalogs, catalog)
	} else {
		h.catalogs[catalog] = &catalogState{rv: rv, objects: next}
		for name, e := range next {
			h.byName[name] = e
		}
	}
	sort.SliceStable(changes, func(i, j int) bool { return changes[i].obj.Name < changes[j].obj.Name })
	for w := range h.watchers {
		for _, c := range changes {
			w.send(watch.Event{Type: c.typ, Object: c.obj})
		}
	}
	return nil
}

func (h *Hub) lookup(name string) (*entry, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	e, ok := h.byName[name]
	return e, ok
}

func (h *Hub) catalogRV(catalog string) uint64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if s, ok := h.catalogs[catalog]; ok {
		return s.rv
	}
	return 0
}

func (h *Hub) objectRV(name string) uint64 {
	if e, ok := h.lookup(name); ok {
		return e.rv
	}
	return 0
}

func newObject(name string, e *entry, content []byte) *metadatav1alpha1.CatalogMetadata {
	obj := &metadatav1alpha1.CatalogMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: metadatav1alpha1.SchemeGroupVersion.String(), Kind: "CatalogMetadata"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			ResourceVersion: strconv.FormatUint(e.rv, 10),
			Labels:          objectLabels(e.catalog, e.schema, e.pkg, e.name),
		},
		Spec: metadatav1alpha1.CatalogMetadataSpec{Catalog: e.catalog, Schema: e.schema, Package: e.pkg, Name: e.name},
	}
	if content != nil {
		obj.Spec.Content = runtime.RawExtension{Raw: content}
	}
	return obj
}

// hubWatcher is one open watch. Events that do not match its predicate are dropped; a watcher that
// falls too far behind is closed so that its client lists again.
type hubWatcher struct {
	hub     *Hub
	match   func(*metadatav1alpha1.CatalogMetadata) bool
	ch      chan watch.Event
	once    sync.Once
	stopped bool
}

const watchBuffer = 4096

func (h *Hub) watch(match func(*metadatav1alpha1.CatalogMetadata) bool, initial []*metadatav1alpha1.CatalogMetadata) *hubWatcher {
	w := &hubWatcher{hub: h, match: match, ch: make(chan watch.Event, watchBuffer+len(initial))}
	for _, obj := range initial {
		w.ch <- watch.Event{Type: watch.Added, Object: obj}
	}
	h.watchers[w] = struct{}{}
	return w
}

// send is called with the hub locked.
func (w *hubWatcher) send(ev watch.Event) {
	if w.stopped || !w.match(ev.Object.(*metadatav1alpha1.CatalogMetadata)) {
		return
	}
	select {
	case w.ch <- ev:
	default:
		// The client is not keeping up: end the watch; it will list and watch again.
		w.stopped = true
		delete(w.hub.watchers, w)
		close(w.ch)
	}
}

// Stop implements watch.Interface.
func (w *hubWatcher) Stop() {
	w.once.Do(func() {
		w.hub.mu.Lock()
		defer w.hub.mu.Unlock()
		if !w.stopped {
			w.stopped = true
			delete(w.hub.watchers, w)
			close(w.ch)
		}
	})
}

// ResultChan implements watch.Interface.
func (w *hubWatcher) ResultChan() <-chan watch.Event { return w.ch }

// knownCatalogs returns the union of served (from the store) and the catalogs the hub still holds, so
// that a resync also retires catalogs whose removal was not notified.
func (h *Hub) knownCatalogs(served []string) []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	seen := map[string]bool{}
	out := append([]string(nil), served...)
	for _, c := range served {
		seen[c] = true
	}
	for c := range h.catalogs {
		if !seen[c] {
			out = append(out, c)
		}
	}
	return out
}
