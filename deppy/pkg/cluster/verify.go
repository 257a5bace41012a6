package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// What is read of a catalog must be the content that the Catalog's status names before anything is
// decided with it. catalogd's CatalogMetadata API answers from the store of the replica that serves
// the request, and a replica that does not hold a catalog yet (restarted on empty storage, still
// unpacking, or behind on an update) answers an empty or older list without an error. Resolving
// with that would move Operators off bundles that still exist, and caching it by the status hash
// would keep the wrong content until the hash changes.
//
// So the Cache checks what a BlobReader read: there must be blobs, and, with a Hasher (catalogd's
// own hash function, which operator-controller supplies), their hash must be status.contentHash.
// The parsed content must have the status.counts catalogd reported. On a mismatch it parses, caches
// and resolves with nothing, returns a *ContentMismatchError, and reads the catalog again after a
// backoff: no Catalog event announces that catalogd has caught up, since its status did not change.

// Hasher computes the hash catalogd reports in a Catalog's status.contentHash for the catalog made
// of metas, whatever their order and JSON formatting. When the blobs do not form a valid catalog it
// returns an *InvalidContentError.
type Hasher interface {
	ContentHash(ctx context.Context, metas []*declcfg.Meta) (string, error)
}

// HasherFunc is a function that is a Hasher.
type HasherFunc func(ctx context.Context, metas []*declcfg.Meta) (string, error)

// ContentHash calls f.
func (f HasherFunc) ContentHash(ctx context.Context, metas []*declcfg.Meta) (string, error) {
	return f(ctx, metas)
}

// InvalidContentError says that blobs do not form a valid catalog (so they have no content hash).
type InvalidContentError struct{ Err error }

func (e *InvalidContentError) Error() string { return e.Err.Error() }
func (e *InvalidContentError) Unwrap() error { return e.Err }

// ContentMismatchError says that what was read of a catalog is not the content its status names.
// Retrying helps: catalogd serves that content once it has loaded it.
type ContentMismatchError struct {
	// Catalog is the Catalog's name.
	Catalog string
	// Want is the Catalog's status.contentHash.
	Want string
	// Read says what was read instead, e.g. "0 blobs" or "12 blobs with hash sha256:…".
	Read string
	// RetryAfter is how long until the Cache reads the catalog again; until then it answers with
	// this error without reading.
	RetryAfter time.Duration
}

func (e *ContentMismatchError) Error() string {
	// No RetryAfter here: the message goes into the Operator's Resolved condition, which must not
	// change (and be written again) on every retry.
	return fmt.Sprintf("catalog %q: read content does not match status.contentHash %s (read %s; is catalogd still loading it, e.g. a replica restarted on empty storage?); not resolving with it, retrying",
		e.Catalog, ShortHash(e.Want), e.Read)
}

// verifyBlobs checks that metas, read for cat, are the content cat's status.contentHash names.
func (c *Cache) verifyBlobs(ctx context.Context, cat *Catalog, metas []*declcfg.Meta) error {
	mismatch := func(read string) error {
		return &ContentMismatchError{Catalog: cat.Name, Want: cat.ContentHash, Read: read}
	}
	if len(metas) == 0 {
		return mismatch("0 blobs")
	}
	if c.Hasher == nil {
		return nil
	}
	hash, err := c.Hasher.ContentHash(ctx, metas)
	var invalid *InvalidContentError
	switch {
	case errors.As(err, &invalid):
		return mismatch(fmt.Sprintf("%d blobs that do not form a valid catalog: %v", len(metas), err))
	case err != nil:
		return fmt.Errorf("catalog %q: hashing the %d blobs read: %w", cat.Name, len(metas), err)
	case hash != cat.ContentHash:
		return mismatch(fmt.Sprintf("%d blobs with hash %s", len(metas), ShortHash(hash)))
	}
	return nil
}

// verifyCounts checks cfg, read for cat, against cat's status.counts when catalogd reported them.
func verifyCounts(cat *Catalog, cfg *declcfg.DeclarativeConfig) error {
	want := cat.Counts
	if want == nil {
		return nil
	}
	if int(want.Packages) == len(cfg.Packages) && int(want.Channels) == len(cfg.Channels) && int(want.Bundles) == len(cfg.Bundles) {
		return nil
	}
	return &ContentMismatchError{Catalog: cat.Name, Want: cat.ContentHash, Read: fmt.Sprintf(
		"%d packages, %d channels and %d bundles where status.counts says %d, %d and %d",
		len(cfg.Packages), len(cfg.Channels), len(cfg.Bundles), want.Packages, want.Channels, want.Bundles)}
}

// ShortHash shortens "sha256:<64 hex>" to its first 12 hex digits, as catalogd's status.shortHash.
func ShortHash(h string) string {
	const digits = 12
	if hex, ok := strings.CutPrefix(h, "sha256:"); ok && len(hex) > digits {
		return "sha256:" + hex[:digits] + "…"
	}
	return h
}

// Retries of a catalog whose content did not match: the first after minRetry, doubling up to
// maxRetry, while its status.contentHash stays the same.
const (
	minRetry = time.Second
	maxRetry = 30 * time.Second
)

// retry remembers a catalog whose read content did not match its status.contentHash.
type retry struct {
	hash     string // the status.contentHash it was read for
	attempts int
	next     time.Time
	err      *ContentMismatchError
}

// failed records one more mismatch for the catalog at now and returns the error with RetryAfter.
func (r *retry) failed(err *ContentMismatchError, now time.Time) *ContentMismatchError {
	delay := maxRetry
	if r.attempts < 5 { // 1, 2, 4, 8, 16 s, then 30 s
		delay = min(minRetry<<r.attempts, maxRetry)
	}
	r.attempts++
	r.next = now.Add(delay)
	r.err = err
	return r.pending(now)
}

// pending returns the last error with the time left until the next read.
func (r *retry) pending(now time.Time) *ContentMismatchError {
	e := *r.err
	e.RetryAfter = max(r.next.Sub(now), 100*time.Millisecond)
	return &e
}
