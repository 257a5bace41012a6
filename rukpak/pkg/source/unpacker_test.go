package source

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/source/sourcetest"
)

func TestUnpackRejectsBadInput(t *testing.T) {
	u := newTestUnpacker(t, nil)
	for _, tc := range []struct {
		name string
		key  string
		src  rukpakv1alpha1.Source
		kind Kind
		msg  string
	}{
		{"empty key", "", imageSrc("x"), KindInternal, "empty key"},
		{"unknown type", "k", rukpakv1alpha1.Source{Type: "FTP"}, KindInvalidSource, `source type "FTP" is not supported`},
		{"missing image", "k", rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage}, KindInvalidSource, "spec.source.image is required"},
		{"missing configMaps", "k", rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeConfigMaps}, KindInvalidSource, "spec.source.configMaps is required"},
		{"missing http", "k", rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeHTTP}, KindInvalidSource, "spec.source.http is required"},
		{"missing git", "k", rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeGit}, KindInvalidSource, "spec.source.git is required"},
		{"two git refs", "k", gitSrc("https://example.com/x.git", rukpakv1alpha1.GitRef{Branch: "a", Tag: "b"}, ""), KindInvalidSource, "exactly one of branch, tag or commit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := u.Unpack(ctx(t), tc.key, tc.src, Options{})
			wantError(t, err, tc.kind, tc.msg)
		})
	}
	if _, err := New(Config{}); err == nil {
		t.Error("New without CacheDir succeeded")
	}
}

// Keys unpacking the same image at once share one pull.
func TestConcurrentUnpacksShareOnePull(t *testing.T) {
	reg := sourcetest.NewRegistry(t)
	digest := reg.Push(t, image(t, layer(t, file("configs/catalog.json", "{}"))), "catalogs/shared:v1")
	reg.ResetRequests()
	u := newTestUnpacker(t, nil)
	var wg sync.WaitGroup
	dirs := make([]string, 8)
	errs := make([]error, 8)
	for i := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := u.Unpack(ctx(t), fmt.Sprintf("catalog/%d", i), imageSrc(digest.String()), catalogOpts)
			if err == nil {
				dirs[i] = res.Dir
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i := range dirs {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if dirs[i] != dirs[0] {
			t.Errorf("key %d got %s, key 0 got %s", i, dirs[i], dirs[0])
		}
	}
	// One manifest GET and one layer blob GET (the config blob is fetched too).
	if n := reg.CountRequests("GET /v2/catalogs/shared/manifests/"); n != 1 {
		t.Errorf("%d manifest fetches, want 1: %q", n, reg.Requests())
	}
}

func TestNewRemovesLeftovers(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"tmp/unpack-123/x", "keys/orphan-0000/content-1/x", "images/sha256-abc/root/x"} {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := New(Config{CacheDir: dir}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"tmp", "keys", "images"} {
		if entries, _ := os.ReadDir(filepath.Join(dir, d)); len(entries) != 0 {
			t.Errorf("%s still holds %v", d, entries)
		}
	}
}

func TestErrorHelpers(t *testing.T) {
	wrapped := fmt.Errorf("reconcile: %w", newError(KindTooLarge, nil, "too big"))
	if IsRetryable(wrapped) || KindOf(wrapped) != KindTooLarge {
		t.Errorf("wrapped TooLarge: retryable=%v kind=%s", IsRetryable(wrapped), KindOf(wrapped))
	}
	plain := errors.New("boom")
	if !IsRetryable(plain) || KindOf(plain) != KindInternal {
		t.Errorf("plain error: retryable=%v kind=%s", IsRetryable(plain), KindOf(plain))
	}
	if IsRetryable(nil) {
		t.Error("nil is not retryable")
	}
}

func TestSameResolved(t *testing.T) {
	h := func(etag, lm string) *rukpakv1alpha1.ResolvedSource {
		return &rukpakv1alpha1.ResolvedSource{Type: rukpakv1alpha1.SourceTypeHTTP, HTTP: &rukpakv1alpha1.ResolvedHTTPSource{URL: "u", ETag: etag, LastModified: lm}}
	}
	for _, tc := range []struct {
		name string
		a, b *rukpakv1alpha1.ResolvedSource
		want bool
	}{
		{"same etag", h(`"1"`, ""), h(`"1"`, ""), true},
		{"other etag", h(`"1"`, ""), h(`"2"`, ""), false},
		{"same last-modified", h("", "Mon"), h("", "Mon"), true},
		{"nothing to compare", h("", ""), h("", ""), false},
		{"nil", nil, h(`"1"`, ""), false},
	} {
		if got := sameResolved(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
