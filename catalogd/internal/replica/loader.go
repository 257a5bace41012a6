package replica

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/olmv1/olmv1/catalogd/internal/fbc"
	"github.com/olmv1/olmv1/catalogd/internal/storage"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
)

// SourceKey is the unpacker key of a catalog's source.
func SourceKey(catalog string) string { return "catalog/" + catalog }

// Loader is the one way content enters or leaves a catalogd store: Load fetches a source, parses
// and validates it and swaps it in (Begin runs the same steps one by one); Remove deletes a
// catalog's content and unpacked source. Calls for the same catalog are serialised. The leader's reconciler and every replica's Syncer share one
// Loader per process.
type Loader struct {
	Unpacker source.Unpacker
	Store    *storage.Store
	// Namespace is where the ConfigMaps and Secrets named by sources are read from.
	Namespace string

	locks keyLocks
}

// NewLoader returns a Loader filling store from unpacker.
func NewLoader(unpacker source.Unpacker, store *storage.Store, namespace string) *Loader {
	return &Loader{Unpacker: unpacker, Store: store, Namespace: namespace}
}

// Request is one Load.
type Request struct {
	// Catalog is the Catalog's name: the key of its content in the store.
	Catalog string
	// Source is what to fetch: spec.source on the leader, PinnedSource on other replicas.
	Source rukpakv1alpha1.Source
	// Previous and PreviousHash are the resolved source and the content hash the status names. When
	// the store serves PreviousHash and Source still resolves to Previous, nothing is fetched,
	// parsed or written (Result.Unchanged).
	Previous     *rukpakv1alpha1.ResolvedSource
	PreviousHash string
	// WantHash, when set, is the only content that may be stored: content with another hash is not
	// stored (a *LoadError with Stage Mismatch).
	WantHash string
	// Guard, when set, is called with the catalog's lock held right before the store changes; an
	// error aborts the load and is returned as is.
	Guard func() error
}

// Result is a successful Load.
type Result struct {
	// Resolved pins what was fetched (image digest, git commit, HTTP ETag, ConfigMap versions).
	Resolved rukpakv1alpha1.ResolvedSource
	// Content is what the store serves now.
	Content *storage.Content
	// Unchanged is true when the source still resolved to Request.Previous and nothing was fetched.
	Unchanged bool
}

// Stage says which step of a Load failed.
type Stage string

// Stages of a failed Load.
const (
	// StageUnpack: fetching the source failed (source.Error says whether retrying helps).
	StageUnpack Stage = "Unpack"
	// StageInvalid: the content is not a valid file-based catalog (retrying cannot help).
	StageInvalid Stage = "Invalid"
	// StageRead: the unpacked content could not be read.
	StageRead Stage = "Read"
	// StageMismatch: the content's hash is not Request.WantHash; nothing was stored.
	StageMismatch Stage = "Mismatch"
	// StageStore: writing the store failed.
	StageStore Stage = "Store"
)

// metricResult is the result label of catalogd_unpack_duration_seconds for a failure at s.
func (s Stage) metricResult() string {
	switch s {
	case StageInvalid:
		return "invalid_catalog"
	case StageMismatch:
		return "content_mismatch"
	case StageStore:
		return "store_failed"
	}
	return "unpack_failed"
}

// LoadError is a failed Load.
type LoadError struct {
	Stage Stage
	// Resolved is what the source resolved to (nil when the unpack failed).
	Resolved *rukpakv1alpha1.ResolvedSource
	// Hash is the content hash of what was fetched (StageMismatch).
	Hash string
	Err  error
}

func (e *LoadError) Error() string { return e.Err.Error() }
func (e *LoadError) Unwrap() error { return e.Err }

// Load fetches req.Source, parses and validates it, and stores it as req.Catalog's content: the
// steps of a Load (Unpack, then Parse and Store unless the source is unchanged) in one call. The
// store changes only on success; on any error the content served before stays served.
func (l *Loader) Load(ctx context.Context, req Request) (*Result, error) {
	ld := l.Begin(req)
	defer ld.End()
	res, err := ld.Unpack(ctx)
	if err != nil || res.Unchanged {
		return res, err
	}
	if err := ld.Parse(ctx); err != nil {
		return nil, err
	}
	return ld.Store()
}

// Begin starts a load of req.Catalog, to run step by step: Unpack, then (unless the source is
// unchanged) Parse, then Store. It holds the catalog's lock until End, so that loads and removals
// of one catalog never overlap; call End exactly once, whatever happened.
func (l *Loader) Begin(req Request) *Load {
	return &Load{l: l, req: req, unlock: l.locks.lock(req.Catalog), start: time.Now()}
}

// Load is one load of a catalog, from Loader.Begin to End. Its steps fail with a *LoadError (Store
// with the Guard's error as is); the store changes only when Store succeeds, so after any failure
// the content served before stays served.
type Load struct {
	l      *Loader
	req    Request
	unlock func()
	start  time.Time

	dir      string                        // where Unpack put the source
	resolved rukpakv1alpha1.ResolvedSource // what it resolved to
	parsing  bool                          // Parse ran: End gives its memory back
	parsed   *fbc.Catalog                  // what Parse read, closed by End
	result   string                        // the catalogd_unpack_duration_seconds result; "": not observed
	content  *storage.Content              // what the store serves once the load succeeded
}

// Unpack fetches req.Source. When the source still resolves to req.Previous and the store serves
// req.PreviousHash, nothing is fetched and the load is complete: the Result is Unchanged, with the
// served Content. Otherwise the Result says only what the source resolved to; Parse is next.
func (ld *Load) Unpack(ctx context.Context) (*Result, error) {
	req := ld.req
	opts := source.Options{ImageDir: "configs", Namespace: ld.l.Namespace}
	cur, ok := ld.l.Store.Get(req.Catalog)
	if ok && req.Previous != nil && req.PreviousHash != "" && cur.Hash == req.PreviousHash && req.Previous.Type == req.Source.Type {
		opts.Previous = req.Previous
	}
	res, err := ld.l.Unpacker.Unpack(ctx, SourceKey(req.Catalog), req.Source, opts)
	if err != nil {
		return nil, ld.fail(&LoadError{Stage: StageUnpack, Err: err})
	}
	ld.dir, ld.resolved = res.Dir, res.ResolvedSource
	if res.Unchanged && opts.Previous != nil {
		ld.result, ld.content = "unchanged", cur
		return &Result{Resolved: ld.resolved, Content: cur, Unchanged: true}, nil
	}
	return &Result{Resolved: ld.resolved}, nil
}

// Parse reads and validates what Unpack fetched, and checks that it is req.WantHash when that is
// set. The parsed catalog's blobs spill to the store's own temporary directory, on the storage
// volume (the chart's /tmp is a small emptyDir); End frees that disk and the parse's memory.
func (ld *Load) Parse(ctx context.Context) error {
	ld.parsing = true
	rs := ld.resolved
	tmp, err := ld.l.Store.TempDir()
	if err != nil {
		return ld.fail(&LoadError{Stage: StageStore, Resolved: &rs, Err: err})
	}
	parsed, err := fbc.LoadWith(ctx, os.DirFS(ld.dir), fbc.Options{TempDir: tmp})
	if err != nil {
		if fbc.IsInvalid(err) {
			return ld.fail(&LoadError{Stage: StageInvalid, Resolved: &rs, Err: err})
		}
		return ld.fail(&LoadError{Stage: StageRead, Resolved: &rs, Err: fmt.Errorf("reading the unpacked content: %w", err)})
	}
	ld.parsed = parsed
	if want := ld.req.WantHash; want != "" && parsed.Hash != want {
		return ld.fail(&LoadError{Stage: StageMismatch, Resolved: &rs, Hash: parsed.Hash,
			Err: fmt.Errorf("%s now has content %s, not %s", rs.String(), parsed.Hash, want)})
	}
	return nil
}

// Store calls req.Guard, then swaps what Parse read in as req.Catalog's content, streaming it from
// the parse's spill files; the load is complete.
func (ld *Load) Store() (*Result, error) {
	if ld.parsed == nil {
		return nil, errors.New("replica: Store called without a successful Parse")
	}
	if ld.req.Guard != nil {
		if err := ld.req.Guard(); err != nil {
			return nil, err
		}
	}
	content, err := ld.l.Store.Put(ld.req.Catalog, ld.parsed)
	if err != nil {
		rs := ld.resolved
		return nil, ld.fail(&LoadError{Stage: StageStore, Resolved: &rs, Err: fmt.Errorf("storing the content: %w", err)})
	}
	ld.result, ld.content = "success", content
	return &Result{Resolved: ld.resolved, Content: content}, nil
}

// End closes the parsed catalog and gives the memory of the parse back to the OS (served content
// lives on disk, so that catalogd's resident set stays small between unpacks), records the load in
// catalogd_unpack_duration_seconds and catalogd_content_bytes, and releases the catalog's lock.
func (ld *Load) End() {
	if ld.unlock == nil {
		return
	}
	if ld.parsed != nil {
		_ = ld.parsed.Close()
		ld.parsed = nil
	}
	if ld.parsing {
		debug.FreeOSMemory()
	}
	if ld.result != "" {
		unpackDuration.WithLabelValues(ld.result).Observe(time.Since(ld.start).Seconds())
	}
	if ld.content != nil {
		contentBytes.WithLabelValues(ld.req.Catalog).Set(float64(ld.content.Size))
	}
	ld.unlock()
	ld.unlock = nil
}

// fail notes the metric result of le and returns it.
func (ld *Load) fail(le *LoadError) *LoadError {
	ld.result = le.Stage.metricResult()
	return le
}

// Remove deletes everything stored for catalog: its served content and its unpacked source. guard,
// when set, is called with the catalog's lock held first; an error aborts and is returned as is.
func (l *Loader) Remove(ctx context.Context, catalog string, guard func() error) error {
	unlock := l.locks.lock(catalog)
	defer unlock()
	if guard != nil {
		if err := guard(); err != nil {
			return err
		}
	}
	if err := l.Store.Delete(catalog); err != nil {
		return err
	}
	contentBytes.DeleteLabelValues(catalog)
	if err := l.Unpacker.Cleanup(ctx, SourceKey(catalog)); err != nil {
		return fmt.Errorf("removing the unpacked source of catalog %q: %w", catalog, err)
	}
	return nil
}

// keyLocks is a mutex per key, dropped when nobody holds or waits for it.
type keyLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	mu      sync.Mutex
	holders int
}

func (k *keyLocks) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyLock{}
	}
	l := k.m[key]
	if l == nil {
		l = &keyLock{}
		k.m[key] = l
	}
	l.holders++
	k.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		k.mu.Lock()
		if l.holders--; l.holders == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}
