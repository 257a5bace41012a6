// Package unpackertest is the source.Unpacker of unit tests: it fetches nothing. Images are pushed
// to it as files under a tag (their digest reference is the sha256 of the files, or one the test
// names); Unpack writes the files of src.Image.Ref into a directory per key, honours
// Options.Previous (Unchanged, nothing written, when the digest is the previous one) and counts
// what it fetched and cleaned up. Err makes every Unpack fail.
//
// It lives outside the source package (and outside sourcetest, which the source package's own
// tests import) so that it may import source. Tests that need a real registry, git or HTTP server
// use sourcetest instead.
package unpackertest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
)

// Unpacker is a fake source.Unpacker of Image sources; it is safe for concurrent use.
type Unpacker struct {
	dir string

	mu       sync.Mutex
	err      error
	refs     map[string]map[string]string // tag or digest reference -> files
	digests  map[string]string            // tag or digest reference -> digest reference
	fetches  int
	cleanups []string
}

var _ source.Unpacker = (*Unpacker)(nil)

// New returns an Unpacker that serves no image yet and unpacks into a temporary directory of t.
func New(t testing.TB) *Unpacker {
	return &Unpacker{dir: t.TempDir(), refs: map[string]map[string]string{}, digests: map[string]string{}}
}

// Failing returns an Unpacker whose every Unpack fails with err.
func Failing(err error) *Unpacker {
	return &Unpacker{err: err}
}

// Push makes tag, and its digest reference (repository@sha256 of the files), serve files, and
// returns the digest reference.
func (u *Unpacker) Push(tag string, files map[string]string) string {
	h := sha256.New()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(h, "%s\x00%s\x00", n, files[n])
	}
	repo, _, _ := strings.Cut(tag, ":")
	digest := repo + "@sha256:" + hex.EncodeToString(h.Sum(nil))
	u.PushAs(tag, digest, files)
	return digest
}

// PushAs makes tag and digest (the digest reference the test chose) serve files.
func (u *Unpacker) PushAs(tag, digest string, files map[string]string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.refs[tag], u.refs[digest] = files, files
	u.digests[tag], u.digests[digest] = digest, digest
}

// SetErr makes every later Unpack fail with err (nil: serve again).
func (u *Unpacker) SetErr(err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.err = err
}

// Fetches is how many Unpacks wrote content (Unchanged results and failures do not count).
func (u *Unpacker) Fetches() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.fetches
}

// Cleanups are the keys Cleanup was called with, in order.
func (u *Unpacker) Cleanups() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.cleanups)
}

// Unpack implements source.Unpacker: an image not pushed is a retryable KindNotFound error.
func (u *Unpacker) Unpack(_ context.Context, key string, src rukpakv1alpha1.Source, opts source.Options) (*source.Result, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.err != nil {
		return nil, u.err
	}
	if src.Image == nil {
		return nil, &source.Error{Kind: source.KindInvalidSource, Reason: source.ReasonUnpackFailed,
			Message: fmt.Sprintf("unpackertest serves Image sources only, not %q", src.Type)}
	}
	files, ok := u.refs[src.Image.Ref]
	if !ok {
		return nil, &source.Error{Kind: source.KindNotFound, Reason: source.ReasonUnpackFailed, Retryable: true,
			Message: fmt.Sprintf("image %q not found", src.Image.Ref)}
	}
	digest := u.digests[src.Image.Ref]
	resolved := rukpakv1alpha1.ResolvedSource{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ResolvedImageSource{Ref: digest}}
	dir := filepath.Join(u.dir, filepath.FromSlash(key))
	if opts.Previous != nil && opts.Previous.Image != nil && opts.Previous.Image.Ref == digest {
		return &source.Result{Dir: dir, ResolvedSource: resolved, Unchanged: true}, nil
	}
	u.fetches++
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	return &source.Result{Dir: dir, ResolvedSource: resolved}, nil
}

// Cleanup implements source.Unpacker: it records key and removes what was unpacked for it.
func (u *Unpacker) Cleanup(_ context.Context, key string) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.cleanups = append(u.cleanups, key)
	if u.dir == "" {
		return nil
	}
	return os.RemoveAll(filepath.Join(u.dir, filepath.FromSlash(key)))
}
