package metadataapi

import (
	"context"
	"sort"
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

// Catalogs implements ContentReader.
func (r StoreReader) Catalogs() []string {
	var out []string
	for _, c := range r.Store.List() {
		out = append(out, c.Catalog)
	}
	sort.Strings(out)
	return out
}

// Blobs implements ContentReader.
func (r StoreReader) Blobs(catalog string, f Filter, fn func(Blob) error) error {
	c, ok := r.Store.Get(catalog)
	if !ok {
		return nil
	}
	entries := c.Query(f.Schema, f.Package, f.Name)
	if len(entries) == 0 {
		return nil
	}
	file, err := c.Open()
	if err != nil {
		return err
	}
	defer file.Close()
	for _, e := range entries {
		content, err := storage.ReadBlob(file, e)
		if err != nil {
			return err
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
			for _, c := range hub.knownCatalogs(StoreReader{Store: store}.Catalogs()) {
				if err := hub.Notify(c); err != nil {
					log.Error(err, "resyncing catalog metadata", "catalog", c)
				}
			}
		}
	}
}
