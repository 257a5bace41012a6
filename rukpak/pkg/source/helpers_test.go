package source

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/olmv1/olmv1/rukpak/pkg/source/sourcetest"
)

const testNamespace = "olmv1-system"

// entry is one tar entry of a hand-built archive.
type entry struct {
	name string
	body string
	link string
	typ  byte // tar.TypeReg when zero
	mode int64
}

func file(name, body string) entry     { return entry{name: name, body: body} }
func dir(name string) entry            { return entry{name: name, typ: tar.TypeDir} }
func symlink(name, to string) entry    { return entry{name: name, link: to, typ: tar.TypeSymlink} }
func hardlink(name, to string) entry   { return entry{name: name, link: to, typ: tar.TypeLink} }
func whiteout(name string) entry       { return entry{name: name} } // a .wh. file is an empty file
func fifo(name string) entry           { return entry{name: name, typ: tar.TypeFifo} }
func execFile(name, body string) entry { return entry{name: name, body: body, mode: 0o755} }

func tarBytes(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		mode := e.mode
		if mode == 0 {
			mode = 0o644
			if typ == tar.TypeDir {
				mode = 0o755
			}
		}
		hdr := &tar.Header{Name: e.name, Typeflag: typ, Linkname: e.link, Mode: mode, Format: tar.FormatPAX}
		if typ == tar.TypeReg {
			hdr.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gzipBytes(t testing.TB, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// layer builds an image layer from entries.
func layer(t testing.TB, entries ...entry) v1.Layer {
	t.Helper()
	data := tarBytes(t, entries...)
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// image builds an image from layers, lowest first.
func image(t testing.TB, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// tarHeaderBytes is the tar header of a regular file of the given size, without its content.
func tarHeaderBytes(t testing.TB, name string, size int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: name, Size: size, Mode: 0o644, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// pushIndex pushes an image index to the test registry.
func pushIndex(t testing.TB, reg *sourcetest.Registry, idx v1.ImageIndex, repoAndTag string) {
	t.Helper()
	ref, err := name.ParseReference(reg.Ref(repoAndTag))
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
}

func fakeClient(objs ...client.Object) client.Reader {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}

func newTestUnpacker(t testing.TB, c client.Reader, mutators ...func(*Config)) *DiskUnpacker {
	t.Helper()
	cfg := Config{CacheDir: t.TempDir(), Client: c}
	for _, m := range mutators {
		m(&cfg)
	}
	u, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// tree lists a directory: "name" for files (with content after '='), "name/" for directories,
// "name -> target" for symlinks.
func tree(t testing.TB, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.Type()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out = append(out, rel+" -> "+target)
		case d.IsDir():
			out = append(out, rel+"/")
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out = append(out, rel+"="+string(data))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func wantTree(t testing.TB, root string, want ...string) {
	t.Helper()
	sort.Strings(want)
	got := tree(t, root)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("content of %s:\n got: %q\nwant: %q", root, got, want)
	}
}

// wantError checks that err is an *Error of kind whose message contains every fragment.
func wantError(t testing.TB, err error, kind Kind, fragments ...string) *Error {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want a %s error", kind)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got %T %v, want *source.Error", err, err)
	}
	if e.Kind != kind {
		t.Fatalf("got kind %s, want %s: %v", e.Kind, kind, err)
	}
	t.Logf("%s error (retryable=%v): %s", e.Kind, e.Retryable, e.Message)
	if e.Reason != ReasonUnpackFailed {
		t.Errorf("reason %q, want %q", e.Reason, ReasonUnpackFailed)
	}
	for _, f := range fragments {
		if !strings.Contains(e.Message, f) {
			t.Errorf("message %q does not contain %q", e.Message, f)
		}
	}
	return e
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return c
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
