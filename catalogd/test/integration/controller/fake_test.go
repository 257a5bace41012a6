package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
)

// fakeRegistry is a source.Unpacker for Image sources backed by an in-memory map of tags to
// catalog files: the "digest" of a tag is the sha256 of its files. It honours Options.Previous like
// the real unpacker (same digest: Unchanged, nothing fetched) and counts fetches.
type fakeRegistry struct {
	dir string

	mu       sync.Mutex
	tags     map[string]map[string]string // ref -> file name -> content
	fetches  map[string]int               // key -> number of fetches
	unpacks  map[string]int               // key -> number of Unpack calls (fetches and polls)
	cleanups map[string]int
	blocked  map[string]chan struct{} // ref -> closed when an Unpack of ref may proceed
}

// block makes Unpack of ref wait until the returned function is called.
func (f *fakeRegistry) block(ref string) (release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan struct{})
	f.blocked[ref] = ch
	return func() { close(ch) }
}

func newFakeRegistry(dir string) *fakeRegistry {
	return &fakeRegistry{dir: dir, tags: map[string]map[string]string{}, fetches: map[string]int{}, unpacks: map[string]int{}, cleanups: map[string]int{}, blocked: map[string]chan struct{}{}}
}

// push sets the files of ref (re-pushing a tag replaces them).
func (f *fakeRegistry) push(ref string, files map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tags[ref] = files
}

func (f *fakeRegistry) fetchCount(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fetches[key]
}

func (f *fakeRegistry) unpackCount(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.unpacks[key]
}

func (f *fakeRegistry) cleanupCount(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cleanups[key]
}

func digestOf(files map[string]string) string {
	h := sha256.New()
	for _, name := range sortedKeys(files) {
		fmt.Fprintf(h, "%s\x00%s\x00", name, files[name])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

func (f *fakeRegistry) Unpack(ctx context.Context, key string, src rukpakv1alpha1.Source, opts source.Options) (*source.Result, error) {
	if src.Type != rukpakv1alpha1.SourceTypeImage || src.Image == nil {
		return nil, &source.Error{Kind: source.KindInvalidSource, Reason: source.ReasonUnpackFailed, Message: "the fake registry only serves Image sources"}
	}
	f.mu.Lock()
	wait := f.blocked[src.Image.Ref]
	f.mu.Unlock()
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unpacks[key]++
	files, ok := f.tags[src.Image.Ref]
	if !ok {
		return nil, &source.Error{Kind: source.KindNotFound, Reason: source.ReasonUnpackFailed, Retryable: true,
			Message: fmt.Sprintf("image %q not found in registry (check spec.source.image.ref)", src.Image.Ref)}
	}
	resolved := rukpakv1alpha1.ResolvedSource{Type: rukpakv1alpha1.SourceTypeImage,
		Image: &rukpakv1alpha1.ResolvedImageSource{Ref: src.Image.Ref + "@" + digestOf(files)}}
	dir := filepath.Join(f.dir, filepath.FromSlash(key))
	if opts.Previous != nil && opts.Previous.Image != nil && opts.Previous.Image.Ref == resolved.Image.Ref {
		return &source.Result{Dir: dir, ResolvedSource: resolved, Unchanged: true}, nil
	}
	f.fetches[key]++
	if err := os.RemoveAll(dir); err != nil {
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

func (f *fakeRegistry) Cleanup(_ context.Context, key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cleanups[key]++
	return os.RemoveAll(filepath.Join(f.dir, filepath.FromSlash(key)))
}

// routingUnpacker sends Image sources to the fake registry and the others to the real unpacker.
type routingUnpacker struct{ image, other source.Unpacker }

func (r routingUnpacker) Unpack(ctx context.Context, key string, src rukpakv1alpha1.Source, opts source.Options) (*source.Result, error) {
	if src.Type == rukpakv1alpha1.SourceTypeImage {
		return r.image.Unpack(ctx, key, src, opts)
	}
	return r.other.Unpack(ctx, key, src, opts)
}

func (r routingUnpacker) Cleanup(ctx context.Context, key string) error {
	return errors.Join(r.image.Cleanup(ctx, key), r.other.Cleanup(ctx, key))
}
