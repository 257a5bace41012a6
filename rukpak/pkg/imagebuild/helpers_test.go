package imagebuild_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"io/fs"
	"log"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

// startRegistry serves go-containerregistry's in-memory registry on 127.0.0.1 and returns its
// host:port.
func startRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// pushAndPull pushes img to host/repo:tag, checks the returned digest reference, and pulls the
// image back by digest.
func pushAndPull(t *testing.T, img v1.Image, host, repoAndTag string) v1.Image {
	t.Helper()
	ref := host + "/" + repoAndTag
	d, err := imagebuild.Push(context.Background(), img, ref, imagebuild.WithInsecure())
	if err != nil {
		t.Fatalf("Push(%s): %v", ref, err)
	}
	want, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if d.DigestStr() != want.String() {
		t.Errorf("Push returned digest %s, image digest is %s", d.DigestStr(), want)
	}
	repo, _, _ := strings.Cut(repoAndTag, ":")
	if got := d.Context().String(); got != host+"/"+repo {
		t.Errorf("Push returned repository %q, want %q", got, host+"/"+repo)
	}
	pulled, err := remote.Image(d)
	if err != nil {
		t.Fatalf("pull %s: %v", d, err)
	}
	// The tag must point at the same manifest.
	tagRef, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	tagged, err := remote.Image(tagRef)
	if err != nil {
		t.Fatalf("pull %s: %v", ref, err)
	}
	if td, _ := tagged.Digest(); td != want {
		t.Errorf("tag %s points at %s, want %s", ref, td, want)
	}
	return pulled
}

// tarEntry is one entry of an archive, with its content for regular files.
type tarEntry struct {
	hdr     *tar.Header
	content string
}

// readTar lists a tar stream by entry name.
func readTar(t *testing.T, r io.Reader) (map[string]tarEntry, []string) {
	t.Helper()
	entries := map[string]tarEntry{}
	var order []string
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return entries, order
		}
		if err != nil {
			t.Fatalf("read tar: %v", err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := entries[hdr.Name]; dup {
			t.Errorf("tar entry %q appears twice", hdr.Name)
		}
		entries[hdr.Name] = tarEntry{hdr: hdr, content: string(b)}
		order = append(order, hdr.Name)
	}
}

// singleLayer returns the entries of an image's only layer, failing if there is not exactly one.
func singleLayer(t *testing.T, img v1.Image) map[string]tarEntry {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("image has %d layers, want 1", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	entries, order := readTar(t, rc)
	assertNormalized(t, entries, order)
	return entries
}

// readTgz lists a gzip-compressed tar.
func readTgz(t *testing.T, b []byte) map[string]tarEntry {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("gunzip: %v", err)
	}
	entries, order := readTar(t, zr)
	assertNormalized(t, entries, order)
	return entries
}

// assertNormalized checks the reproducibility rules on every header.
func assertNormalized(t *testing.T, entries map[string]tarEntry, order []string) {
	t.Helper()
	for _, n := range order {
		h := entries[n].hdr
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: owner %d:%d (%q:%q), want 0:0 without names", n, h.Uid, h.Gid, h.Uname, h.Gname)
		}
		if !h.ModTime.Equal(time.Unix(0, 0)) {
			t.Errorf("%s: mtime %s, want the Unix epoch", n, h.ModTime)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if h.Mode != 0o755 {
				t.Errorf("%s: dir mode %o, want 755", n, h.Mode)
			}
		case tar.TypeReg:
			if h.Mode != 0o644 && h.Mode != 0o755 {
				t.Errorf("%s: file mode %o, want 644 or 755", n, h.Mode)
			}
		}
	}
	for i := 1; i < len(order); i++ {
		if !pathLess(order[i-1], order[i]) {
			t.Errorf("entries not sorted: %q before %q", order[i-1], order[i])
		}
	}
}

// pathLess orders paths component by component, a directory before its content (walk order).
func pathLess(a, b string) bool {
	as := strings.Split(strings.TrimSuffix(a, "/"), "/")
	bs := strings.Split(strings.TrimSuffix(b, "/"), "/")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if as[i] != bs[i] {
			return as[i] < bs[i]
		}
	}
	return len(as) < len(bs)
}

// regularFiles returns name -> content of the regular files among entries.
func regularFiles(entries map[string]tarEntry) map[string]string {
	files := map[string]string{}
	for n, e := range entries {
		if e.hdr.Typeflag == tar.TypeReg {
			files[n] = e.content
		}
	}
	return files
}

// dirFiles returns prefix+relative path -> content of the regular files under dir.
func dirFiles(t *testing.T, dir, prefix string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[prefix+filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// assertSameFiles compares two name -> content maps.
func assertSameFiles(t *testing.T, got, want map[string]string) {
	t.Helper()
	for n, w := range want {
		g, ok := got[n]
		switch {
		case !ok:
			t.Errorf("missing file %s", n)
		case g != w:
			t.Errorf("file %s differs: got %d bytes, want %d", n, len(g), len(w))
		}
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			t.Errorf("unexpected file %s", n)
		}
	}
}

// copyTree copies src to a new temporary directory, with a different mtime and permissions, so
// that determinism tests can see that only content matters.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	later := time.Date(2031, 5, 4, 3, 2, 1, 0, time.UTC)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(target, b, 0o600); err != nil {
			return err
		}
		return os.Chtimes(target, later, later)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func digestOf(t *testing.T, img v1.Image) v1.Hash {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// assertErrorContains fails unless err is non-nil and contains every one of wants.
func assertErrorContains(t *testing.T, err error, wants ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", wants)
	}
	t.Logf("error (as a user sees it): %v", err)
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
