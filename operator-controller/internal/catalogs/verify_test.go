package catalogs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/catalogd/pkg/fbcvalidate"
	"github.com/olmv1/olmv1/deppy/pkg/cluster"
)

// catalogdHash is the status.contentHash catalogd reports for a catalog unpacked from fbc.
func catalogdHash(t *testing.T, fbc string) string {
	t.Helper()
	res, err := fbcvalidate.Validate(context.Background(), fstest.MapFS{"catalog.json": {Data: []byte(fbc)}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Hash
}

func metasOf(t *testing.T, fbc string) []*declcfg.Meta {
	t.Helper()
	var out []*declcfg.Meta
	for _, b := range blobsOf(t, "c", fbc) {
		out = append(out, &declcfg.Meta{Schema: b.Spec.Schema, Package: b.Spec.Package, Name: b.Spec.Name, Blob: b.Spec.Content.Raw})
	}
	return out
}

func TestContentHashIsCatalogds(t *testing.T) {
	// catalogd unpacks YAML files; the metadata API serves compact JSON blobs in its own order, and
	// the API server's JSON encoder escapes <, > and &. The hash must not see any of that.
	yaml := fstest.MapFS{
		"a/index.yaml": {Data: []byte(`schema: olm.package
name: a
defaultChannel: stable
description: "<b>A</b> & co"
---
schema: olm.channel
package: a
name: stable
entries:
  - name: a.v1.0.0
---
schema: olm.bundle
package: a
name: a.v1.0.0
image: r/a:1.0.0
properties:
  - type: olm.package
    value: {version: 1.0.0, packageName: a}
`)},
		"b/index.json": {Data: []byte(pkgFBC("b", "2.0.0"))},
	}
	want, err := fbcvalidate.Validate(context.Background(), yaml)
	if err != nil {
		t.Fatal(err)
	}
	served := []*declcfg.Meta{
		{Schema: "olm.bundle", Package: "a", Name: "a.v1.0.0", Blob: []byte(`{"image":"r/a:1.0.0","name":"a.v1.0.0","package":"a","properties":[{"type":"olm.package","value":{"packageName":"a","version":"1.0.0"}}],"schema":"olm.bundle"}`)},
		{Schema: "olm.package", Package: "a", Name: "a", Blob: []byte(`{"defaultChannel":"stable","description":"\u003cb\u003eA\u003c/b\u003e \u0026 co","name":"a","schema":"olm.package"}`)},
	}
	served = append(served, metasOf(t, pkgFBC("b", "2.0.0"))...)
	served = append(served, &declcfg.Meta{Schema: "olm.channel", Package: "a", Name: "stable", Blob: []byte(`{"entries":[{"name":"a.v1.0.0"}],"name":"stable","package":"a","schema":"olm.channel"}`)})
	got, err := ContentHash(context.Background(), served)
	if err != nil || got != want.Hash {
		t.Fatalf("hash of the served blobs %s (%v), catalogd's %s", got, err, want.Hash)
	}

	if _, err := ContentHash(context.Background(), served[:1]); !fbcvalidate.IsInvalid(err) {
		t.Fatalf("a bundle without its package: want an invalid-catalog error, got %v", err)
	}
}

// TestCacheRejectsContentThatIsNotTheStatusHash reads through MetadataReader from a fake
// CatalogMetadata API that answers what a catalogd replica answers while it loads a catalog, with
// catalogd's own hash (deppy/pkg/cluster tests the cache's bookkeeping with a stand-in hash).
func TestCacheRejectsContentThatIsNotTheStatusHash(t *testing.T) {
	ctx := context.Background()
	full := pkgFBC("a", "1.0.0") + pkgFBC("b", "1.0.0")
	hash := catalogdHash(t, full)
	api := &fakeMetadataAPI{}
	clock := time.Unix(1000, 0)
	c := &Cache{Reader: &MetadataReader{Client: api}, now: func() time.Time { return clock }}
	cats := []catalogdv1alpha1.Catalog{catalog("main", hash, true, 0)}

	mismatch := func(what string, wantRead string) *ContentMismatchError {
		t.Helper()
		idx, _, err := c.Index(ctx, cats)
		var m *ContentMismatchError
		if !errors.As(err, &m) || idx != nil {
			t.Fatalf("%s: want a ContentMismatchError and no index, got %v (index %v)", what, err, idx)
		}
		if m.Catalog != "main" || m.Want != cats[0].Status.ContentHash || !strings.Contains(m.Read, wantRead) || m.RetryAfter <= 0 {
			t.Fatalf("%s: %+v", what, m)
		}
		for _, s := range []string{`catalog "main"`, "read content does not match status.contentHash " + cluster.ShortHash(cats[0].Status.ContentHash), "catalogd still loading it", "retrying"} {
			if !strings.Contains(m.Error(), s) {
				t.Errorf("%s: message %q lacks %q", what, m.Error(), s)
			}
		}
		return m
	}
	lists := func() int { return len(api.calls) }

	// A replica restarted on empty storage lists nothing, without an error.
	m := mismatch("empty store", "0 blobs")
	if m.RetryAfter != time.Second {
		t.Errorf("first retry after %v, want 1s", m.RetryAfter)
	}
	// Until the retry time, reconciles get the same answer without a read; then it reads again.
	clock = clock.Add(400 * time.Millisecond)
	before := lists()
	if m := mismatch("within the backoff", "0 blobs"); m.RetryAfter != 600*time.Millisecond || lists() != before {
		t.Errorf("within the backoff: retry after %v, %d list calls", m.RetryAfter, lists()-before)
	}

	// Half loaded: one package of two (a valid catalog, with another hash) ...
	api.blobs = blobsOf(t, "main", pkgFBC("a", "1.0.0"))
	clock = clock.Add(time.Second)
	m = mismatch("one package of two", "3 blobs with hash sha256:")
	if m.RetryAfter != 2*time.Second || lists() == before {
		t.Errorf("second retry after %v (want 2s), read again: %v", m.RetryAfter, lists() != before)
	}
	if strings.Contains(m.Read, cluster.ShortHash(hash)) {
		t.Errorf("the hash read must not be the status hash: %s", m.Read)
	}
	// ... or a package without its bundle (not a valid catalog at all).
	api.blobs = blobsOf(t, "main", full)[:2]
	clock = clock.Add(2 * time.Second)
	mismatch("a channel without its bundle", "2 blobs that do not form a valid catalog")
	if c.Reads() != 0 {
		t.Fatalf("nothing may be cached: %d reads", c.Reads())
	}

	// A new status hash is read at once, whatever the backoff.
	api.blobs = blobsOf(t, "main", full)
	cats[0].Status.ContentHash = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
	m = mismatch("another status hash", "6 blobs with hash "+cluster.ShortHash(hash))
	if m.RetryAfter != time.Second {
		t.Errorf("a new status hash starts the backoff again: %v", m.RetryAfter)
	}

	// The content the status names: cached, and not read again.
	cats[0].Status.ContentHash = hash
	idx, names, err := c.Index(ctx, cats)
	if err != nil || len(names) != 1 || len(idx.Bundles("a")) != 1 || len(idx.Bundles("b")) != 1 {
		t.Fatalf("matching content: %v, names %v", err, names)
	}
	before = lists()
	cats[0].Spec.Priority = 3 // a new index, the same cached content
	if _, _, err := c.Index(ctx, cats); err != nil || lists() != before || c.Reads() != 1 {
		t.Fatalf("cached content read again: %v, %d list calls, %d reads", err, lists()-before, c.Reads())
	}

	// An update catalogd has not loaded yet: the old content is still served under the new hash.
	updated := full + pkgFBC("c", "1.0.0")
	cats[0].Status.ContentHash = catalogdHash(t, updated)
	mismatch("an update not loaded yet", "6 blobs with hash "+cluster.ShortHash(hash))
	api.blobs = blobsOf(t, "main", updated)
	clock = clock.Add(time.Second)
	idx, _, err = c.Index(ctx, cats)
	if err != nil || len(idx.Bundles("c")) != 1 {
		t.Fatalf("after the update was loaded: %v", err)
	}
}

// A reader that cannot give the blobs (test fixtures) is checked against status.counts.
func TestCacheChecksPlainReadersAgainstCounts(t *testing.T) {
	ctx := context.Background()
	r := &fakeReader{content: map[string]string{"main": ""}, reads: map[string]int{}}
	c := &Cache{Reader: r}
	cat := catalog("main", "h1", true, 0)
	cat.Status.Counts = &catalogdv1alpha1.CatalogCounts{Packages: 1, Channels: 1, Bundles: 1}
	_, _, err := c.Index(ctx, []catalogdv1alpha1.Catalog{cat})
	var m *ContentMismatchError
	if !errors.As(err, &m) || !strings.Contains(err.Error(), "0 packages, 0 channels and 0 bundles where status.counts says 1, 1 and 1") {
		t.Fatalf("want a mismatch naming the counts, got %v", err)
	}
	if c.Reads() != 0 {
		t.Fatal("mismatching content was cached")
	}
	r.content["main"] = pkgFBC("a", "1.0.0")
	c.now = func() time.Time { return time.Now().Add(time.Minute) }
	if idx, _, err := c.Index(ctx, []catalogdv1alpha1.Catalog{cat}); err != nil || len(idx.Bundles("a")) != 1 {
		t.Fatalf("matching counts: %v", err)
	}
}

// BenchmarkVerifyCommunityCatalog compares what the check adds (ContentHash, with a cold and a warm
// cache of validated packages) with what reading a catalog cost before (parsing the blobs), on
// community-v4.20 (OLMV1_TESTDATA, default /work/shared/testdata).
func BenchmarkVerifyCommunityCatalog(b *testing.B) {
	root := os.Getenv("OLMV1_TESTDATA")
	if root == "" {
		root = filepath.Join("..", "..", "..", "..", "shared", "testdata")
	}
	dir := filepath.Join(root, "catalogs", "community-v4.20")
	if _, err := os.Stat(dir); err != nil {
		b.Skipf("real test data %s is absent (set OLMV1_TESTDATA): %v", dir, err)
	}
	var metas []*declcfg.Meta
	if err := declcfg.WalkMetasFS(context.Background(), os.DirFS(dir), func(_ string, m *declcfg.Meta, err error) error {
		if err == nil {
			metas = append(metas, m)
		}
		return err
	}, declcfg.WithConcurrency(1)); err != nil { // one goroutine: the callback appends without a lock
		b.Fatal(err)
	}
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := parseBlobs("community", metas); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("hash", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ContentHash(context.Background(), metas); err != nil {
				b.Fatal(err)
			}
		}
	})
}
