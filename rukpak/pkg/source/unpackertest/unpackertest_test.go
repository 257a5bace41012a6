package unpackertest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
)

func image(ref string) rukpakv1alpha1.Source {
	return rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: ref}}
}

func TestServeCountAndUnchanged(t *testing.T) {
	u := New(t)
	digest := u.Push("reg/foo:v1", map[string]string{"a/b.txt": "b"})
	if digest != "reg/foo@"+Digest(map[string]string{"a/b.txt": "b"}) {
		t.Fatalf("digest %s", digest)
	}
	res, err := u.Unpack(t.Context(), "k", image("reg/foo:v1"), source.Options{})
	if err != nil || res.Unchanged || res.ResolvedSource.Image.Ref != digest {
		t.Fatalf("first: %+v, %v", res, err)
	}
	if b, err := os.ReadFile(filepath.Join(res.Dir, "a", "b.txt")); err != nil || string(b) != "b" {
		t.Fatalf("unpacked file: %q, %v", b, err)
	}
	again, err := u.Unpack(t.Context(), "k", image("reg/foo:v1"), source.Options{Previous: &res.ResolvedSource})
	if err != nil || !again.Unchanged {
		t.Fatalf("again: %+v, %v", again, err)
	}
	var se *source.Error
	if _, err := u.Unpack(t.Context(), "k", image("reg/foo:missing"), source.Options{}); !errors.As(err, &se) || se.Kind != source.KindNotFound || !se.Retryable {
		t.Fatalf("missing image: %v", err)
	}
	if c := u.Calls("k"); c != (Calls{Unpacks: 3, Fetches: 1}) || u.Fetches() != 1 {
		t.Errorf("calls %+v, fetches %d; want 3 unpacks, 1 fetch", c, u.Fetches())
	}
}

// inner is the unpacker Route hands sources to.
type inner struct{ unpacks, cleanups []string }

func (i *inner) Unpack(_ context.Context, key string, _ rukpakv1alpha1.Source, _ source.Options) (*source.Result, error) {
	i.unpacks = append(i.unpacks, key)
	return &source.Result{}, nil
}

func (i *inner) Cleanup(_ context.Context, key string) error {
	i.cleanups = append(i.cleanups, key)
	return nil
}

func TestRouteAndOnUnpack(t *testing.T) {
	u, in := New(t), &inner{}
	u.Route(in, rukpakv1alpha1.SourceTypeConfigMaps, rukpakv1alpha1.SourceTypeGit)
	var hooked []string
	u.OnUnpack(func(key string) { hooked = append(hooked, key) })
	if _, err := u.Unpack(t.Context(), "cm", rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeConfigMaps}, source.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Unpack(t.Context(), "http", rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeHTTP}, source.Options{}); err == nil {
		t.Error("an HTTP source, not routed, was served")
	}
	if err := u.Cleanup(t.Context(), "cm"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(in.unpacks, []string{"cm"}) || !slices.Equal(in.cleanups, []string{"cm"}) || !slices.Equal(hooked, []string{"cm", "http"}) {
		t.Errorf("inner unpacks %v, cleanups %v, hooked %v", in.unpacks, in.cleanups, hooked)
	}
	if c := u.Calls("cm"); c.Unpacks != 1 || c.Fetches != 0 {
		t.Errorf("routed calls %+v, want 1 unpack, no fetch", c)
	}
}

func TestBlock(t *testing.T) {
	u := New(t)
	u.Push("reg/foo:v1", map[string]string{"a": "a"})
	release := u.Block("reg/foo:v1")
	done := make(chan error, 1)
	go func() {
		_, err := u.Unpack(context.Background(), "k", image("reg/foo:v1"), source.Options{})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a blocked Unpack returned: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	u.Block("reg/foo:v1")
	if _, err := u.Unpack(ctx, "k", image("reg/foo:v1"), source.Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("a blocked Unpack whose context ended: %v", err)
	}
}
