package catalogs

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing/fstest"
	"time"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/catalogd/pkg/fbcvalidate"
)

// What operator-controller reads of a catalog must be the content that the Catalog's
// status.contentHash names before anything is decided with it. catalogd's CatalogMetadata API
// answers from the store of the replica that serves the request, and a replica that does not hold a
// catalog yet (restarted on empty storage, still unpacking, or behind on an update) answers an empty
// or older list without an error. Resolving with that would move Operators off bundles that still
// exist, and caching it by the status hash would keep the wrong content until the hash changes.
//
// So the Cache hashes the blobs a BlobReader read with catalogd's own code (catalogd/pkg/fbcvalidate:
// the same parsing, canonical form and sha256 that produce status.contentHash) and compares. On a
// mismatch it parses, caches and resolves with nothing, returns a *ContentMismatchError, and reads the
// catalog again after a backoff: no Catalog event announces that catalogd has caught up, since its
// status did not change. A reader that cannot give the blobs (a plain ContentReader, e.g. a test
// fixture) is checked only against status.counts.

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
		e.Catalog, shortHash(e.Want), e.Read)
}

// ContentHash returns the content hash catalogd computes for a catalog made of blobs, as it reports
// it in status.contentHash ("sha256:<hex>"): the same parsing, validation and canonical form
// (catalogd/pkg/fbcvalidate), so the order of the blobs and their JSON formatting do not matter.
// Blobs that do not form a valid catalog have no hash: the error says why (fbcvalidate.IsInvalid).
func ContentHash(ctx context.Context, metas []*declcfg.Meta) (string, error) {
	// fbcvalidate reads a file tree. Spread the blobs over several JSON files: catalogd's parser
	// works on the files in parallel, one file at a time each.
	const blobsPerFile = 256
	files := fstest.MapFS{}
	for start := 0; start < len(metas); start += blobsPerFile {
		var buf bytes.Buffer
		for _, m := range metas[start:min(start+blobsPerFile, len(metas))] {
			buf.Write(m.Blob)
			buf.WriteByte('\n')
		}
		files[fmt.Sprintf("blobs-%06d.json", start/blobsPerFile)] = &fstest.MapFile{Data: buf.Bytes(), Mode: 0o444}
	}
	res, err := fbcvalidate.Validate(ctx, files)
	if err != nil {
		return "", err
	}
	return res.Hash, nil
}

// verifyBlobs checks that metas, read for cat, are the content cat's status.contentHash names.
func verifyBlobs(ctx context.Context, cat *catalogdv1alpha1.Catalog, metas []*declcfg.Meta) error {
	mismatch := func(read string) error {
		return &ContentMismatchError{Catalog: cat.Name, Want: cat.Status.ContentHash, Read: read}
	}
	if len(metas) == 0 {
		return mismatch("0 blobs")
	}
	hash, err := ContentHash(ctx, metas)
	switch {
	case fbcvalidate.IsInvalid(err):
		return mismatch(fmt.Sprintf("%d blobs that do not form a valid catalog: %v", len(metas), err))
	case err != nil:
		return fmt.Errorf("catalog %q: hashing the %d blobs read: %w", cat.Name, len(metas), err)
	case hash != cat.Status.ContentHash:
		return mismatch(fmt.Sprintf("%d blobs with hash %s", len(metas), shortHash(hash)))
	}
	return nil
}

// verifyCounts checks cfg, read for cat, against cat's status.counts when catalogd reported them.
func verifyCounts(cat *catalogdv1alpha1.Catalog, cfg *declcfg.DeclarativeConfig) error {
	want := cat.Status.Counts
	if want == nil {
		return nil
	}
	if int(want.Packages) == len(cfg.Packages) && int(want.Channels) == len(cfg.Channels) && int(want.Bundles) == len(cfg.Bundles) {
		return nil
	}
	return &ContentMismatchError{Catalog: cat.Name, Want: cat.Status.ContentHash, Read: fmt.Sprintf(
		"%d packages, %d channels and %d bundles where status.counts says %d, %d and %d",
		len(cfg.Packages), len(cfg.Channels), len(cfg.Bundles), want.Packages, want.Channels, want.Bundles)}
}

// shortHash shortens "sha256:<64 hex>" to its first 12 hex digits, as catalogd's status.shortHash.
func shortHash(h string) string {
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
