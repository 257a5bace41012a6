package metadataapi

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"

	"github.com/olmv1/olmv1/catalogd/internal/storage"
)

// StoreReader serves catalogd's on-disk content store: queries use the store's in-memory index and
// read only the matching blobs from disk, so a list never loads a whole catalog into memory.
type StoreReader struct {
	Store *storage.Store
}

var _ ContentReader = StoreReader{}

// Hashes implements ContentReader.
func (r StoreReader) Hashes() map[string]string {
	out := map[string]string{}
	for _, c := range r.Store.List() {
		out[c.Catalog] = c.Hash
	}
	return out
}

// Open implements ContentReader: the snapshot holds all.json open, so it stays readable after a
// later Put removed its directory.
func (r StoreReader) Open(catalog string) (Snapshot, bool, error) {
	for {
		c, ok := r.Store.Get(catalog)
		if !ok {
			return nil, false, nil
		}
		f, err := c.Open()
		if err == nil {
			return &storeSnapshot{content: c, file: f}, true, nil
		}
		if now, ok := r.Store.Get(catalog); ok && now == c {
			return nil, false, err
		}
		// Replaced or removed between Get and Open: take the newer content.
	}
}

// storeSnapshot is one stored content of a catalog, with its all.json open.
type storeSnapshot struct {
	content *storage.Content
	file    *os.File
}

func (s *storeSnapshot) Hash() string { return s.content.Hash }

func (s *storeSnapshot) Close() error { return s.file.Close() }

// Blobs reads the matching blobs from the open file (concurrent calls are safe: reads are ReadAt).
func (s *storeSnapshot) Blobs(f Filter, fn func(Blob) error) error {
	for _, e := range s.content.Query(f.Schema, f.Package, f.Name) {
		var content []byte
		if !f.NoContent {
			var err error
			if content, err = storage.ReadBlob(s.file, e); err != nil {
				return fmt.Errorf("catalog %q: reading %s: %w", s.content.Catalog, s.file.Name(), err)
			}
		}
		pkg := e.Package
		if pkg == "" && e.Schema == "olm.package" {
			// An olm.package blob belongs to the package it names, so package selectors find it.
			pkg = e.Name
		}
		if err := fn(Blob{Schema: e.Schema, Package: pkg, Name: e.Name, Content: content}); err != nil {
			return err
		}
	}
	return nil
}

// Follow keeps hub in step with store until ctx ends: every Put or Delete is turned into watch
// events, and a periodic resync catches any notification the store dropped.
func Follow(ctx context.Context, store *storage.Store, hub *Hub, resync time.Duration, log logr.Logger) {
	events := make(chan storage.Event, 256)
	cancel := store.Subscribe(events)
	defer cancel()
	ticker := time.NewTicker(resync)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-events:
			if err := hub.Notify(ev.Catalog); err != nil {
				log.Error(err, "updating catalog metadata", "catalog", ev.Catalog)
			}
		case <-ticker.C:
			if err := hub.Sync(); err != nil {
				log.Error(err, "resyncing catalog metadata")
			}
		}
	}
}
