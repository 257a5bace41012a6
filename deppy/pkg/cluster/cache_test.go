package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type fakeReader struct {
	content map[string]string
	reads   map[string]int
}

func (f *fakeReader) ReadCatalog(_ context.Context, name string) (*declcfg.DeclarativeConfig, error) {
	f.reads[name]++
	fbc, ok := f.content[name]
	if !ok {
		return nil, fmt.Errorf("catalog %q not found", name)
	}
	return declcfg.LoadReader(strings.NewReader(fbc))
}

// fakeBlobReader serves the blobs of fbc, one per line, as a catalogd replica would.
type fakeBlobReader struct {
	fakeReader
}

func (f *fakeBlobReader) ReadBlobs(_ context.Context, name string) ([]*declcfg.Meta, error) {
	f.reads[name]++
	return metasOf(f.content[name]), nil
}

func metasOf(fbc string) []*declcfg.Meta {
	var out []*declcfg.Meta
	for _, line := range strings.Split(strings.TrimSpace(fbc), "\n") {
		if line == "" {
			continue
		}
		var m struct{ Schema, Package, Name string }
		_ = json.Unmarshal([]byte(line), &m)
		out = append(out, &declcfg.Meta{Schema: m.Schema, Package: m.Package, Name: m.Name, Blob: []byte(line)})
	}
	return out
}

// standInHash stands in for catalogd's hash (which this module cannot import): the sha256 of the
// sorted canonical JSON blobs of a catalog that parses; *InvalidContentError otherwise.
var standInHash = HasherFunc(func(_ context.Context, metas []*declcfg.Meta) (string, error) {
	cfg, err := declcfg.LoadSlice(metas)
	if err == nil {
		_, err = declcfg.ConvertToModel(*cfg)
	}
	if err != nil {
		return "", &InvalidContentError{Err: err}
	}
	var canon []string
	for _, m := range metas {
		var v any
		if err := json.Unmarshal(m.Blob, &v); err != nil {
			return "", &InvalidContentError{Err: err}
		}
		b, _ := json.Marshal(v)
		canon = append(canon, string(b))
	}
	sort.Strings(canon)
	sum := sha256.Sum256([]byte(strings.Join(canon, "\n")))
	return "sha256:" + hex.EncodeToString(sum[:]), nil
})

func hashOf(t *testing.T, fbc string) string {
	t.Helper()
	h, err := standInHash(context.Background(), metasOf(fbc))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func pkgFBC(pkg, version string) string {
	return fmt.Sprintf(`{"schema":"olm.package","name":%[1]q,"defaultChannel":"stable"}
{"schema":"olm.channel","package":%[1]q,"name":"stable","entries":[{"name":"%[1]s.v%[2]s"}]}
{"schema":"olm.bundle","package":%[1]q,"name":"%[1]s.v%[2]s","image":"r/%[1]s:%[2]s","properties":[{"type":"olm.package","value":{"packageName":%[1]q,"version":%[2]q}}]}
`, pkg, version)
}

func catalog(name, hash string, isServing bool, priority int32) Catalog {
	c := Catalog{Name: name, Priority: priority, ContentHash: hash}
	status := metav1.ConditionFalse
	if isServing {
		status = metav1.ConditionTrue
	}
	c.Conditions = []metav1.Condition{{Type: ConditionServing, Status: status, Reason: "Test"}}
	return c
}

func TestCacheReadsOnlyChangedCatalogs(t *testing.T) {
	ctx := context.Background()
	r := &fakeReader{content: map[string]string{"one": pkgFBC("a", "1.0.0"), "two": pkgFBC("b", "1.0.0"), "off": pkgFBC("c", "1.0.0")}, reads: map[string]int{}}
	c := &Cache{Reader: r}

	cats := []Catalog{catalog("two", "h2", true, 0), catalog("one", "h1", true, 5), catalog("off", "h3", false, 0)}
	idx, names, err := c.Index(ctx, cats)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(names, ",") != "one,two" || len(idx.Bundles("a")) != 1 || len(idx.Bundles("c")) != 0 {
		t.Fatalf("names %v, packages %v", names, idx.Packages())
	}
	if idx.Bundles("a")[0].CatalogPriority != 5 {
		t.Errorf("priority %d, want 5", idx.Bundles("a")[0].CatalogPriority)
	}

	again, _, err := c.Index(ctx, cats)
	if err != nil || again != idx || c.Reads() != 2 {
		t.Fatalf("unchanged catalogs: same index %v, reads %d, err %v", again == idx, c.Reads(), err)
	}

	r.content["one"] = pkgFBC("a", "2.0.0")
	cats[1].ContentHash = "h1b"
	cats[0].Priority = 7
	idx, _, err = c.Index(ctx, cats)
	if err != nil {
		t.Fatal(err)
	}
	if r.reads["one"] != 2 || r.reads["two"] != 1 || r.reads["off"] != 0 {
		t.Errorf("reads %v", r.reads)
	}
	if idx.Bundles("a")[0].VersionString != "2.0.0" || idx.Bundles("b")[0].CatalogPriority != 7 {
		t.Errorf("index not updated: a %s, b priority %d", idx.Bundles("a")[0].VersionString, idx.Bundles("b")[0].CatalogPriority)
	}

	idx, names, err = c.Index(ctx, cats[:1])
	if err != nil || strings.Join(names, ",") != "two" || len(idx.Bundles("a")) != 0 {
		t.Fatalf("after deletion: names %v, err %v", names, err)
	}
	if _, _, err := c.Index(ctx, []Catalog{catalog("missing", "x", true, 0)}); err == nil {
		t.Fatal("want an error for an unreadable catalog")
	}
}

// TestCacheRejectsContentThatIsNotTheStatusHash: empty, half-loaded, invalid and stale reads are
// neither cached nor indexed; the catalog is read again after a backoff, at once for a new status
// hash; the retry is forgotten once the content matches.
func TestCacheRejectsContentThatIsNotTheStatusHash(t *testing.T) {
	ctx := context.Background()
	full := pkgFBC("a", "1.0.0") + pkgFBC("b", "1.0.0")
	hash := hashOf(t, full)
	r := &fakeBlobReader{fakeReader{content: map[string]string{}, reads: map[string]int{}}}
	clock := time.Unix(1000, 0)
	c := &Cache{Reader: r, Hasher: standInHash, Now: func() time.Time { return clock }}
	cats := []Catalog{catalog("main", hash, true, 0)}

	mismatch := func(what, wantRead string) *ContentMismatchError {
		t.Helper()
		idx, _, err := c.Index(ctx, cats)
		var m *ContentMismatchError
		if !errors.As(err, &m) || idx != nil {
			t.Fatalf("%s: want a ContentMismatchError and no index, got %v (index %v)", what, err, idx)
		}
		if m.Catalog != "main" || m.Want != cats[0].ContentHash || !strings.Contains(m.Read, wantRead) || m.RetryAfter <= 0 {
			t.Fatalf("%s: %+v", what, m)
		}
		for _, s := range []string{`catalog "main"`, "read content does not match status.contentHash " + ShortHash(cats[0].ContentHash), "catalogd still loading it", "retrying"} {
			if !strings.Contains(m.Error(), s) {
				t.Errorf("%s: message %q lacks %q", what, m.Error(), s)
			}
		}
		return m
	}

	m := mismatch("empty store", "0 blobs")
	if m.RetryAfter != time.Second {
		t.Errorf("first retry after %v, want 1s", m.RetryAfter)
	}
	clock = clock.Add(400 * time.Millisecond)
	before := r.reads["main"]
	if m := mismatch("within the backoff", "0 blobs"); m.RetryAfter != 600*time.Millisecond || r.reads["main"] != before {
		t.Errorf("within the backoff: retry after %v, %d reads", m.RetryAfter, r.reads["main"]-before)
	}

	r.content["main"] = pkgFBC("a", "1.0.0")
	clock = clock.Add(time.Second)
	if m := mismatch("one package of two", "3 blobs with hash sha256:"); m.RetryAfter != 2*time.Second || r.reads["main"] == before {
		t.Errorf("second retry after %v (want 2s), read again: %v", m.RetryAfter, r.reads["main"] != before)
	}
	r.content["main"] = strings.Join(strings.Split(full, "\n")[:2], "\n") // a channel without its bundle
	clock = clock.Add(2 * time.Second)
	mismatch("not a valid catalog", "2 blobs that do not form a valid catalog")
	if c.Reads() != 0 || len(c.catalogs) != 0 {
		t.Fatalf("nothing may be cached: %d reads, %d catalogs", c.Reads(), len(c.catalogs))
	}

	r.content["main"] = full
	cats[0].ContentHash = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
	if m := mismatch("another status hash", "6 blobs with hash "+ShortHash(hash)); m.RetryAfter != time.Second {
		t.Errorf("a new status hash starts the backoff again: %v", m.RetryAfter)
	}

	cats[0].ContentHash = hash
	idx, names, err := c.Index(ctx, cats)
	if err != nil || len(names) != 1 || len(idx.Bundles("a")) != 1 || len(idx.Bundles("b")) != 1 || len(c.retries) != 0 {
		t.Fatalf("matching content: %v, names %v, retries %v", err, names, c.retries)
	}
	before = r.reads["main"]
	cats[0].Priority = 3
	if _, _, err := c.Index(ctx, cats); err != nil || r.reads["main"] != before || c.Reads() != 1 {
		t.Fatalf("cached content read again: %v, %d reads, %d kept", err, r.reads["main"]-before, c.Reads())
	}

	// An update catalogd has not loaded yet: the old content is still served under the new hash.
	updated := full + pkgFBC("c", "1.0.0")
	cats[0].ContentHash = hashOf(t, updated)
	mismatch("an update not loaded yet", "6 blobs with hash "+ShortHash(hash))
	r.content["main"] = updated
	clock = clock.Add(time.Second)
	idx, _, err = c.Index(ctx, cats)
	if err != nil || len(idx.Bundles("c")) != 1 || len(c.retries) != 0 {
		t.Fatalf("after the update was loaded: %v, retries %v", err, c.retries)
	}
}

func TestRetriesBackOffToThirtySeconds(t *testing.T) {
	r := &retry{}
	now := time.Unix(0, 0)
	var got []time.Duration
	for range 8 {
		got = append(got, r.failed(&ContentMismatchError{}, now).RetryAfter)
	}
	want := []time.Duration{1, 2, 4, 8, 16, 30, 30, 30}
	for i := range want {
		if got[i] != want[i]*time.Second {
			t.Fatalf("retry delays %v", got)
		}
	}
}

// Without a Hasher (deppy resolve --kubeconfig) blobs are checked for presence and the parsed
// content against status.counts; a plain ContentReader against status.counts only.
func TestCacheChecksCountsWithoutAHasher(t *testing.T) {
	ctx := context.Background()
	counts := &Counts{Packages: 1, Channels: 1, Bundles: 1}

	blobs := &fakeBlobReader{fakeReader{content: map[string]string{"main": ""}, reads: map[string]int{}}}
	c := &Cache{Reader: blobs}
	cat := catalog("main", "h1", true, 0)
	cat.Counts = counts
	if _, _, err := c.Index(ctx, []Catalog{cat}); !strings.Contains(fmt.Sprint(err), "read 0 blobs") {
		t.Fatalf("no blobs: %v", err)
	}
	blobs.content["main"] = pkgFBC("a", "1.0.0") + pkgFBC("b", "1.0.0")
	c = &Cache{Reader: blobs}
	if _, _, err := c.Index(ctx, []Catalog{cat}); !strings.Contains(fmt.Sprint(err), "2 packages, 2 channels and 2 bundles where status.counts says 1, 1 and 1") {
		t.Fatalf("more than the counts: %v", err)
	}
	blobs.content["main"] = pkgFBC("a", "1.0.0")
	c = &Cache{Reader: blobs}
	if idx, _, err := c.Index(ctx, []Catalog{cat}); err != nil || len(idx.Bundles("a")) != 1 {
		t.Fatalf("matching counts: %v", err)
	}

	plain := &fakeReader{content: map[string]string{"main": ""}, reads: map[string]int{}}
	clock := time.Unix(0, 0)
	c = &Cache{Reader: plain, Now: func() time.Time { return clock }}
	_, _, err := c.Index(ctx, []Catalog{cat})
	var m *ContentMismatchError
	if !errors.As(err, &m) || !strings.Contains(err.Error(), "0 packages, 0 channels and 0 bundles where status.counts says 1, 1 and 1") {
		t.Fatalf("want a mismatch naming the counts, got %v", err)
	}
	plain.content["main"] = pkgFBC("a", "1.0.0")
	clock = clock.Add(time.Minute)
	if idx, _, err := c.Index(ctx, []Catalog{cat}); err != nil || len(idx.Bundles("a")) != 1 {
		t.Fatalf("matching counts: %v", err)
	}
}

// A hash function that fails for another reason than invalid content is an error, not a mismatch.
func TestCacheHashErrorIsNotAMismatch(t *testing.T) {
	r := &fakeBlobReader{fakeReader{content: map[string]string{"main": pkgFBC("a", "1.0.0")}, reads: map[string]int{}}}
	c := &Cache{Reader: r, Hasher: HasherFunc(func(context.Context, []*declcfg.Meta) (string, error) {
		return "", errors.New("out of memory")
	})}
	_, _, err := c.Index(context.Background(), []Catalog{catalog("main", "h", true, 0)})
	var m *ContentMismatchError
	if err == nil || errors.As(err, &m) || !strings.Contains(err.Error(), `catalog "main": hashing the 3 blobs read: out of memory`) {
		t.Fatalf("got %v", err)
	}
}
