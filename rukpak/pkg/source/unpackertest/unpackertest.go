// Package unpackertest is the one fake source.Unpacker of the tests: it fetches nothing. Images are
// pushed to it as files under a tag (their digest reference is the sha256 of the files, or one the
// test names); Unpack writes the files of src.Image.Ref into a directory per key, honours
// Options.Previous (Unchanged, nothing written, when the digest is the previous one) and counts
// what it fetched and cleaned up. Err makes every Unpack fail.
//
// Integration tests use five more things: Route hands some source types to another (real)
// unpacker (RouteVerified: the Image sources with a signature policy), Block holds the Unpacks of one reference, OnUnpack runs a hook at the start of every
// Unpack, and Calls counts the Unpacks of one key. NewIn unpacks into a directory the caller owns,
// for a TestMain that has no testing.TB.
//
// It lives outside the source package (and outside sourcetest, which the source package's own
// tests import) so that it may import source. Tests that need a real registry, git or HTTP server
// use sourcetest instead.
package unpackertest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
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
	calls    map[string]Calls                              // key -> what Unpack did for it
	blocked  map[string]chan struct{}                      // reference -> closed when its Unpacks may go on
	routes   map[rukpakv1alpha1.SourceType]source.Unpacker // source type -> the unpacker that serves it
	verified source.Unpacker                               // serves Image sources with a signature policy
	onUnpack func(key string)
}

// Calls is what Unpack did for one key.
type Calls struct {
	// Unpacks counts every Unpack call: fetches, Unchanged results, failures and routed calls.
	Unpacks int
	// Fetches counts the Unpacks that wrote content.
	Fetches int
}

var _ source.Unpacker = (*Unpacker)(nil)

// New returns an Unpacker that serves no image yet and unpacks into a temporary directory of t.
func New(t testing.TB) *Unpacker {
	return NewIn(t.TempDir())
}

// NewIn returns an Unpacker that serves no image yet and unpacks into dir, which the caller
// removes (for a TestMain, which has no testing.TB).
func NewIn(dir string) *Unpacker {
	return &Unpacker{dir: dir, refs: map[string]map[string]string{}, digests: map[string]string{},
		calls: map[string]Calls{}, blocked: map[string]chan struct{}{}, routes: map[rukpakv1alpha1.SourceType]source.Unpacker{}}
}

// Failing returns an Unpacker whose every Unpack fails with err.
func Failing(err error) *Unpacker {
	u := NewIn("")
	u.err = err
	return u
}

// Digest is the digest ("sha256:<hex>") Push gives files: the same files, the same digest.
func Digest(files map[string]string) string {
	h := sha256.New()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(h, "%s\x00%s\x00", n, files[n])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Push makes tag, and its digest reference (repository@Digest(files)), serve files, and returns
// the digest reference. Pushing a tag again replaces its files.
func (u *Unpacker) Push(tag string, files map[string]string) string {
	repo, _, _ := strings.Cut(tag, ":")
	digest := repo + "@" + Digest(files)
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

// Route makes the sources of the given types go to inner (a real unpacker, say) instead of being
// served from what was pushed; they are still hooked, held and counted in Unpacks, and Cleanup
// cleans up in inner too.
func (u *Unpacker) Route(inner source.Unpacker, types ...rukpakv1alpha1.SourceType) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, t := range types {
		u.routes[t] = inner
	}
}

// RouteVerified makes the Image sources that require a signature (spec.source.image.verify) go to
// inner, a real unpacker: the fake checks no signature. Like Route, they are still hooked, held
// and counted, and Cleanup cleans up in inner too.
func (u *Unpacker) RouteVerified(inner source.Unpacker) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.verified = inner
}

// Block holds every Unpack of the Image reference ref (until its context ends) until release is
// called.
func (u *Unpacker) Block(ref string) (release func()) {
	u.mu.Lock()
	defer u.mu.Unlock()
	ch := make(chan struct{})
	u.blocked[ref] = ch
	return func() { close(ch) }
}

// OnUnpack makes every later Unpack call f first, before it is held or counted. Concurrent
// Unpacks call f concurrently; f may call u's methods.
func (u *Unpacker) OnUnpack(f func(key string)) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.onUnpack = f
}

// Fetches is how many Unpacks wrote content, for every key (Unchanged results and failures do
// not count).
func (u *Unpacker) Fetches() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.fetches
}

// Calls is what Unpack did for key so far.
func (u *Unpacker) Calls(key string) Calls {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.calls[key]
}

// Cleanups are the keys Cleanup was called with, in order.
func (u *Unpacker) Cleanups() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.cleanups)
}

// Unpack implements source.Unpacker: an image not pushed is a retryable KindNotFound error.
func (u *Unpacker) Unpack(ctx context.Context, key string, src rukpakv1alpha1.Source, opts source.Options) (*source.Result, error) {
	u.mu.Lock()
	hook := u.onUnpack
	var wait chan struct{}
	if src.Image != nil {
		wait = u.blocked[src.Image.Ref]
	}
	u.mu.Unlock()
	if hook != nil {
		hook(key)
	}
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}

	u.mu.Lock()
	calls := u.calls[key]
	calls.Unpacks++
	u.calls[key] = calls
	err, inner := u.err, u.routes[src.Type]
	if src.Image != nil && src.Image.Verify != nil && u.verified != nil {
		inner = u.verified
	}
	u.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if inner != nil {
		return inner.Unpack(ctx, key, src, opts)
	}
	return u.serve(key, src, opts)
}

// serve unpacks src, an Image source, from what was pushed.
func (u *Unpacker) serve(key string, src rukpakv1alpha1.Source, opts source.Options) (*source.Result, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if src.Image == nil {
		return nil, &source.Error{Kind: source.KindInvalidSource, Reason: source.ReasonUnpackFailed,
			Message: fmt.Sprintf("unpackertest serves Image sources only, not %q", src.Type)}
	}
	files, ok := u.refs[src.Image.Ref]
	if !ok {
		return nil, &source.Error{Kind: source.KindNotFound, Reason: source.ReasonUnpackFailed, Retryable: true,
			Message: fmt.Sprintf("image %q not found in registry (check spec.source.image.ref)", src.Image.Ref)}
	}
	digest := u.digests[src.Image.Ref]
	resolved := rukpakv1alpha1.ResolvedSource{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ResolvedImageSource{Ref: digest}}
	dir := filepath.Join(u.dir, filepath.FromSlash(key))
	if opts.Previous != nil && opts.Previous.Image != nil && opts.Previous.Image.Ref == digest {
		return &source.Result{Dir: dir, ResolvedSource: resolved, Unchanged: true}, nil
	}
	u.fetches++
	calls := u.calls[key]
	calls.Fetches++
	u.calls[key] = calls
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

// Cleanup implements source.Unpacker: it records key, removes what was unpacked for it and cleans
// up key in every unpacker of Route.
func (u *Unpacker) Cleanup(ctx context.Context, key string) error {
	u.mu.Lock()
	u.cleanups = append(u.cleanups, key)
	var inners []source.Unpacker
	for _, inner := range append(slices.Collect(maps.Values(u.routes)), u.verified) {
		if inner != nil && !slices.Contains(inners, inner) {
			inners = append(inners, inner)
		}
	}
	dir := u.dir
	u.mu.Unlock()
	var errs []error
	if dir != "" {
		errs = append(errs, os.RemoveAll(filepath.Join(dir, filepath.FromSlash(key))))
	}
	for _, inner := range inners {
		errs = append(errs, inner.Cleanup(ctx, key))
	}
	return errors.Join(errs...)
}
