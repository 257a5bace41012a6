package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/catalogd/internal/storage"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/source/unpackertest"
)

// fooFiles is a valid catalog of package foo whose only bundle is version.
func fooFiles(version string) map[string]string {
	return map[string]string{
		"foo/catalog.json": fmt.Sprintf(`{"schema":"olm.package","name":"foo","defaultChannel":"stable"}
{"schema":"olm.channel","package":"foo","name":"stable","entries":[{"name":"foo.v%[1]s"}]}
{"schema":"olm.bundle","package":"foo","name":"foo.v%[1]s","image":"example.com/foo:v%[1]s","properties":[{"type":"olm.package","value":{"packageName":"foo","version":"%[1]s"}}]}
`, version),
	}
}

func image(ref string) rukpakv1alpha1.Source {
	return rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: ref}}
}

func newTestLoader(t *testing.T) (*Loader, *unpackertest.Unpacker) {
	t.Helper()
	store, err := storage.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	imgs := unpackertest.New(t)
	return NewLoader(imgs, store, "olmv1-system"), imgs
}

func mustLoad(t *testing.T, l *Loader, req Request) *Result {
	t.Helper()
	res, err := l.Load(t.Context(), req)
	if err != nil {
		t.Fatalf("Load(%+v): %v", req, err)
	}
	return res
}

func TestLoadStoresThenReportsUnchanged(t *testing.T) {
	l, imgs := newTestLoader(t)
	digest := imgs.Push("reg/foo:latest", fooFiles("1.0.0"))
	first := mustLoad(t, l, Request{Catalog: "foo", Source: image("reg/foo:latest")})
	if first.Unchanged || first.Resolved.Image.Ref != digest {
		t.Fatalf("first load: unchanged %v, resolved %+v, want %s", first.Unchanged, first.Resolved, digest)
	}
	if cur, ok := l.Store.Get("foo"); !ok || cur.Hash != first.Content.Hash {
		t.Fatalf("store serves %v (%v), want %s", cur, ok, first.Content.Hash)
	}

	again := mustLoad(t, l, Request{Catalog: "foo", Source: image("reg/foo:latest"), Previous: &first.Resolved, PreviousHash: first.Content.Hash})
	if !again.Unchanged || again.Content.Hash != first.Content.Hash || imgs.Fetches() != 1 {
		t.Errorf("same digest again: unchanged %v, hash %s, fetches %d; want unchanged, %s, 1", again.Unchanged, again.Content.Hash, imgs.Fetches(), first.Content.Hash)
	}

	// Previous is only trusted when the store serves PreviousHash.
	other := mustLoad(t, l, Request{Catalog: "foo", Source: image("reg/foo:latest"), Previous: &first.Resolved, PreviousHash: "sha256:other"})
	if other.Unchanged || imgs.Fetches() != 2 {
		t.Errorf("a status hash the store does not serve: unchanged %v, fetches %d; want a fetch", other.Unchanged, imgs.Fetches())
	}
}

func TestLoadStoresOnlyTheWantedHash(t *testing.T) {
	l, imgs := newTestLoader(t)
	imgs.Push("reg/foo:latest", fooFiles("1.0.0"))
	v1 := mustLoad(t, l, Request{Catalog: "foo", Source: image("reg/foo:latest")})
	imgs.Push("reg/foo:latest", fooFiles("2.0.0"))

	_, err := l.Load(t.Context(), Request{Catalog: "foo", Source: image("reg/foo:latest"), WantHash: "sha256:0000"})
	var le *LoadError
	if !errors.As(err, &le) || le.Stage != StageMismatch || le.Hash == "" || le.Hash == v1.Content.Hash {
		t.Fatalf("want a Mismatch error naming the fetched hash, got %v (%+v)", err, le)
	}
	if !strings.Contains(err.Error(), "sha256:0000") || !strings.Contains(err.Error(), le.Hash) {
		t.Errorf("message %q should name both hashes", err)
	}
	if cur, _ := l.Store.Get("foo"); cur.Hash != v1.Content.Hash {
		t.Errorf("a mismatching load changed the store: %s, want %s", cur.Hash, v1.Content.Hash)
	}

	v2 := mustLoad(t, l, Request{Catalog: "foo", Source: image("reg/foo:latest"), WantHash: le.Hash})
	if v2.Content.Hash != le.Hash {
		t.Errorf("stored %s, want %s", v2.Content.Hash, le.Hash)
	}
}

func TestLoadGuardRunsBeforeTheStoreChanges(t *testing.T) {
	l, imgs := newTestLoader(t)
	imgs.Push("reg/foo:v1", fooFiles("1.0.0"))
	v1 := mustLoad(t, l, Request{Catalog: "foo", Source: image("reg/foo:v1")})
	imgs.Push("reg/foo:v2", fooFiles("2.0.0"))
	stop := errors.New("leading now")
	_, err := l.Load(t.Context(), Request{Catalog: "foo", Source: image("reg/foo:v2"), Guard: func() error { return stop }})
	if !errors.Is(err, stop) {
		t.Fatalf("want the guard's error as is, got %v", err)
	}
	if cur, _ := l.Store.Get("foo"); cur.Hash != v1.Content.Hash {
		t.Errorf("the store changed despite the guard")
	}
	if err := l.Remove(t.Context(), "foo", func() error { return stop }); !errors.Is(err, stop) {
		t.Errorf("Remove: want the guard's error, got %v", err)
	}
	if _, ok := l.Store.Get("foo"); !ok {
		t.Errorf("Remove deleted the content despite the guard")
	}
}

func TestLoadFailuresKeepTheServedContent(t *testing.T) {
	l, imgs := newTestLoader(t)
	imgs.Push("reg/foo:v1", fooFiles("1.0.0"))
	v1 := mustLoad(t, l, Request{Catalog: "foo", Source: image("reg/foo:v1")})
	bad := fooFiles("2.0.0")
	bad["foo/catalog.json"] = strings.Replace(bad["foo/catalog.json"], `"entries":[{"name":"foo.v2.0.0"}]`, `"entries":[{"name":"foo.v9"}]`, 1)
	imgs.Push("reg/foo:bad", bad)

	cases := map[string]struct {
		ref   string
		stage Stage
	}{
		"not found": {ref: "reg/foo:missing", stage: StageUnpack},
		"invalid":   {ref: "reg/foo:bad", stage: StageInvalid},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := l.Load(t.Context(), Request{Catalog: "foo", Source: image(c.ref)})
			var le *LoadError
			if !errors.As(err, &le) || le.Stage != c.stage {
				t.Fatalf("want stage %s, got %v", c.stage, err)
			}
			if c.stage == StageInvalid && (le.Resolved == nil || le.Resolved.Image == nil) {
				t.Errorf("an invalid catalog's error should say what it resolved to: %+v", le)
			}
			if cur, _ := l.Store.Get("foo"); cur.Hash != v1.Content.Hash {
				t.Errorf("the store changed after a failure")
			}
		})
	}
}

func TestRemoveDropsContentAndUnpackedSource(t *testing.T) {
	l, imgs := newTestLoader(t)
	imgs.Push("reg/foo:v1", fooFiles("1.0.0"))
	mustLoad(t, l, Request{Catalog: "foo", Source: image("reg/foo:v1")})
	if err := l.Remove(t.Context(), "foo", nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.Store.Get("foo"); ok {
		t.Errorf("content still served after Remove")
	}
	if !slices.Equal(imgs.Cleanups(), []string{"catalog/foo"}) {
		t.Errorf("unpacker cleanups %v, want [catalog/foo]", imgs.Cleanups())
	}
	if err := l.Remove(t.Context(), "foo", nil); err != nil {
		t.Errorf("removing twice: %v", err)
	}
}

// Loads and removals of one catalog never overlap: a guard sees the state the store is left in.
func TestLoaderSerialisesOneCatalog(t *testing.T) {
	l, imgs := newTestLoader(t)
	imgs.Push("reg/foo:v1", fooFiles("1.0.0"))
	inGuard := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := l.Load(context.Background(), Request{Catalog: "foo", Source: image("reg/foo:v1"), Guard: func() error {
			close(inGuard)
			<-release
			return nil
		}})
		done <- err
	}()
	<-inGuard
	removed := make(chan error, 1)
	go func() { removed <- l.Remove(context.Background(), "foo", nil) }()
	select {
	case err := <-removed:
		t.Fatalf("Remove ran while a Load of the same catalog held its lock (err %v)", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-removed; err != nil {
		t.Fatal(err)
	}
	if _, ok := l.Store.Get("foo"); ok {
		t.Errorf("Remove after Load: content still served")
	}
	if len(l.locks.m) != 0 {
		t.Errorf("locks left behind: %v", l.locks.m)
	}
}

// A Load run step by step holds the catalog's lock from Begin to End, changes the store only in
// Store, and refuses Store without a successful Parse.
func TestLoadStepByStep(t *testing.T) {
	l, imgs := newTestLoader(t)
	imgs.Push("reg/foo:v1", fooFiles("1.0.0"))
	early := l.Begin(Request{Catalog: "foo", Source: image("reg/foo:v1")})
	if _, err := early.Store(); err == nil {
		t.Error("Store without Parse succeeded")
	}
	early.End()

	ld := l.Begin(Request{Catalog: "foo", Source: image("reg/foo:v1")})
	removed := make(chan error, 1)
	go func() { removed <- l.Remove(context.Background(), "foo", nil) }()
	res, err := ld.Unpack(t.Context())
	if err != nil || res.Unchanged || res.Content != nil {
		t.Fatalf("Unpack: %+v, %v", res, err)
	}
	if err := ld.Parse(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.Store.Get("foo"); ok {
		t.Error("the store changed before Store")
	}
	res, err = ld.Store()
	if err != nil || res.Content == nil {
		t.Fatalf("Store: %+v, %v", res, err)
	}
	select {
	case err := <-removed:
		t.Fatalf("Remove ran before End (err %v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	ld.End()
	ld.End() // a second End does nothing
	if err := <-removed; err != nil {
		t.Fatal(err)
	}
}

// WhatStatusNames: nothing when the status names no content; Held when the store has the named hash;
// else a Load of the pinned source (the digest, not the tag) wanting that hash.
func TestWhatStatusNames(t *testing.T) {
	l, imgs := newTestLoader(t)
	digest := imgs.Push("reg/foo:latest", fooFiles("1.0.0"))
	cat := &catalogdv1alpha1.Catalog{}
	cat.Name = "foo"
	cat.Spec.Source = image("reg/foo:latest")
	if sc, err := WhatStatusNames(cat, l.Store); err != nil || sc.Named {
		t.Fatalf("no status: %+v, %v", sc, err)
	}
	res := mustLoad(t, l, Request{Catalog: "foo", Source: image("reg/foo:latest")})
	cat.Status.ContentHash, cat.Status.ResolvedSource = res.Content.Hash, &res.Resolved
	if sc, err := WhatStatusNames(cat, l.Store); err != nil || !sc.Named || sc.Held == nil || sc.Load != nil {
		t.Fatalf("held: %+v, %v", sc, err)
	}
	cat.Status.ContentHash = "sha256:" + strings.Repeat("0", 64)
	sc, err := WhatStatusNames(cat, l.Store)
	if err != nil || sc.Held != nil || sc.Load == nil || sc.Load.WantHash != cat.Status.ContentHash || sc.Load.Source.Image.Ref != digest {
		t.Fatalf("load: %+v (%+v), %v; want a load of %s", sc, sc.Load, err, digest)
	}
}
