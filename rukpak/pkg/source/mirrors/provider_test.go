package mirrors

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func writeConf(t *testing.T, path, data string, mod time.Time) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mod, mod); err != nil {
		t.Fatal(err)
	}
}

// The file is read again when it changes, and not otherwise; a broken file is an error.
func TestProviderRereadsTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registries.conf")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	writeConf(t, path, "[[registry]]\nlocation = \"a.local\"\nblocked = true\n", t0)
	p := &Provider{File: path}
	if err := p.CheckFile(); err != nil {
		t.Fatal(err)
	}
	cfg, err := p.Config(context.Background())
	if err != nil || len(cfg.Registries) != 1 || cfg.Registries[0].Prefix != "a.local" {
		t.Fatalf("first read: %+v, %v", cfg, err)
	}
	same, _ := p.Config(context.Background())
	if same != cfg {
		t.Error("an unchanged file was parsed again")
	}

	writeConf(t, path, "[[registry]]\nlocation = \"b.local\"\nblocked = true\n", t0.Add(time.Second))
	if cfg, err = p.Config(context.Background()); err != nil || cfg.Registries[0].Prefix != "b.local" {
		t.Fatalf("after the change: %+v, %v", cfg, err)
	}

	writeConf(t, path, "[[registry]]\nlocation = \"b.local\"\nblockd = true\n", t0.Add(2*time.Second))
	if _, err = p.Config(context.Background()); err == nil || !strings.Contains(err.Error(), "registry.blockd") {
		t.Fatalf("broken file: error %v, want one naming registry.blockd", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, err = p.Config(context.Background()); err == nil || !strings.Contains(err.Error(), "--registries-conf") {
		t.Fatalf("missing file: error %v", err)
	}
}

func mirrorSetMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(ConfigGroupVersion.WithKind(KindImageDigestMirrorSet), meta.RESTScopeRoot)
	m.Add(ConfigGroupVersion.WithKind(KindImageTagMirrorSet), meta.RESTScopeRoot)
	return m
}

// countingReader counts the lists.
type countingReader struct {
	client.Reader
	lists int
	fail  error
}

func (c *countingReader) List(ctx context.Context, l client.ObjectList, opts ...client.ListOption) error {
	c.lists++
	if c.fail != nil {
		return c.fail
	}
	return c.Reader.List(ctx, l, opts...)
}

// Mirror sets are listed at most once per TTL and merged after the file; a cluster without the
// API has none; a failed list after a good one keeps the last sets.
func TestProviderMirrorSets(t *testing.T) {
	idms := mirrorSetObject(KindImageDigestMirrorSet, "digests", mirrorEntry("quay.io/org", NeverContactSource, "idms.local/org"))
	itms := mirrorSetObject(KindImageTagMirrorSet, "tags", mirrorEntry("quay.io/org", "", "itms.local/org"))
	fc := fake.NewClientBuilder().WithScheme(runtime.NewScheme()).WithRESTMapper(mirrorSetMapper()).WithObjects(idms, itms).Build()
	reader := &countingReader{Reader: fc}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := &Provider{Reader: reader, TTL: time.Minute, Now: func() time.Time { return now }}

	cfg, err := p.Config(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := endpoints(cfg.Plan(tagImage("quay.io/org/x", "v1"))), []string{"mirror itms.local/org/x:v1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("tag: got %q, want %q", got, want)
	}
	if got, want := endpoints(cfg.Plan(digestImage("quay.io/org/x"))), []string{"mirror idms.local/org/x@" + testDigest}; !reflect.DeepEqual(got, want) {
		t.Errorf("digest: got %q, want %q", got, want)
	}
	if reader.lists != 2 {
		t.Errorf("%d lists, want 2 (one per kind)", reader.lists)
	}
	if _, err := p.Config(context.Background()); err != nil || reader.lists != 2 {
		t.Errorf("within the TTL: %d lists (want 2), %v", reader.lists, err)
	}
	now = now.Add(time.Minute)
	reader.fail = errors.New("connection refused")
	if cfg, err := p.Config(context.Background()); err != nil || reader.lists != 3 || len(cfg.Registries) != 1 {
		t.Errorf("failed list after a good one: %d lists (want 3), %+v, %v; want the last sets", reader.lists, cfg, err)
	}

	fresh := &Provider{Reader: &countingReader{Reader: fc, fail: errors.New("connection refused")}}
	if _, err := fresh.Config(context.Background()); err == nil || !strings.Contains(err.Error(), "listing ImageDigestMirrorSets") {
		t.Errorf("failed first list: error %v", err)
	} else if le := (*ListError)(nil); !errors.As(err, &le) || le.Forbidden {
		t.Errorf("failed first list: %T, want a *ListError that is not Forbidden", err)
	}

	// A cluster that does not serve config.openshift.io: no mirror sets, no error.
	plain := fake.NewClientBuilder().WithScheme(runtime.NewScheme()).Build()
	noAPI := &Provider{Reader: plain}
	if cfg, err := noAPI.Config(context.Background()); err != nil || cfg != nil {
		t.Errorf("no API: %+v, %v; want no configuration and no error", cfg, err)
	}
}
