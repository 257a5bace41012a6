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
// and validates it and swaps it in; Remove deletes a catalog's content and unpacked source. Calls
// for the same catalog are serialised. The leader's reconciler and every replica's Syncer share one
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

// Load fetches req.Source, parses and validates it, and stores it as req.Catalog's content. The
// store changes only on success; on any error the content served before stays served.
func (l *Loader) Load(ctx context.Context, req Request) (*Result, error) {
	unlock := l.locks.lock(req.Catalog)
	defer unlock()
	start := time.Now()
	observe := func(result string) {
		unpackDuration.WithLabelValues(result).Observe(time.Since(start).Seconds())
	}

	opts := source.Options{ImageDir: "configs", Namespace: l.Namespace}
	cur, ok := l.Store.Get(req.Catalog)
	if ok && req.Previous != nil && req.PreviousHash != "" && cur.Hash == req.PreviousHash && req.Previous.Type == req.Source.Type {
		opts.Previous = req.Previous
	}
	res, err := l.Unpacker.Unpack(ctx, SourceKey(req.Catalog), req.Source, opts)
	if err != nil {
		observe("unpack_failed")
		return nil, &LoadError{Stage: StageUnpack, Err: err}
	}
	rs := res.ResolvedSource
	if res.Unchanged && opts.Previous != nil {
		observe("unchanged")
		contentBytes.WithLabelValues(req.Catalog).Set(float64(cur.Size))
		return &Result{Resolved: rs, Content: cur, Unchanged: true}, nil
	}

	content, err := l.parseAndStore(ctx, req, res.Dir, &rs)
	if err != nil {
		var le *LoadError
		if errors.As(err, &le) {
			observe(le.Stage.metricResult())
		}
		return nil, err
	}
	observe("success")
	contentBytes.WithLabelValues(req.Catalog).Set(float64(content.Size))
	return &Result{Resolved: rs, Content: content}, nil
}

func (l *Loader) parseAndStore(ctx context.Context, req Request, dir string, rs *rukpakv1alpha1.ResolvedSource) (*storage.Content, error) {
	// The parsed catalog is garbage once stored (served content lives on disk): give the memory of
	// the parse back to the OS, so that catalogd's resident set stays small between unpacks.
	defer debug.FreeOSMemory()
	// The canonical blobs spill to the store's own temporary directory, on the storage volume (the
	// chart's /tmp is a small emptyDir); closing the parsed catalog frees that disk at once.
	tmp, err := l.Store.TempDir()
	if err != nil {
		return nil, &LoadError{Stage: StageStore, Resolved: rs, Err: err}
	}
	parsed, err := fbc.LoadWith(ctx, os.DirFS(dir), fbc.Options{TempDir: tmp})
	if err != nil {
		if fbc.IsInvalid(err) {
			return nil, &LoadError{Stage: StageInvalid, Resolved: rs, Err: err}
		}
		return nil, &LoadError{Stage: StageRead, Resolved: rs, Err: fmt.Errorf("reading the unpacked content: %w", err)}
	}
	defer parsed.Close()
	if req.WantHash != "" && parsed.Hash != req.WantHash {
		return nil, &LoadError{Stage: StageMismatch, Resolved: rs, Hash: parsed.Hash,
			Err: fmt.Errorf("%s now has content %s, not %s", rs.String(), parsed.Hash, req.WantHash)}
	}
	if req.Guard != nil {
		if err := req.Guard(); err != nil {
			return nil, err
		}
	}
	content, err := l.Store.Put(req.Catalog, parsed)
	if err != nil {
		return nil, &LoadError{Stage: StageStore, Resolved: rs, Err: fmt.Errorf("storing the content: %w", err)}
	}
	return content, nil
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
