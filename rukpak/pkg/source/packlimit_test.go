package source

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	gitcache "github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"
)

// packOf returns a packfile holding one blob, and the blob's hash.
func packOf(t *testing.T, content string) ([]byte, plumbing.Hash) {
	t.Helper()
	mem := memory.NewStorage()
	obj := mem.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	w, err := obj.Writer()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(content)); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	h, err := mem.SetEncodedObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := packfile.NewEncoder(&buf, mem, false).Encode([]plumbing.Hash{h}, 0); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), h
}

func newPackLimitStorage(t *testing.T, max int64) *packLimitStorage {
	dir := t.TempDir()
	return &packLimitStorage{
		Storage:  filesystem.NewStorage(osfs.New(filepath.Join(dir, "repo.git")), gitcache.NewObjectLRUDefault()),
		max:      max,
		spoolDir: dir,
	}
}

// writePack writes data to a new pack writer of s in chunks of 7 bytes, the way a stream arrives,
// and closes it; it returns the first error.
func writePack(s *packLimitStorage, data []byte) error {
	w, err := s.PackfileWriter()
	if err != nil {
		return err
	}
	for len(data) > 0 {
		n := min(7, len(data))
		if _, err := w.Write(data[:n]); err != nil {
			_ = w.Close()
			return err
		}
		data = data[n:]
	}
	return w.Close()
}

// packFiles lists what the repository's pack directory and the spool directory hold.
func packFiles(t *testing.T, s *packLimitStorage) []string {
	t.Helper()
	var out []string
	for _, d := range []string{filepath.Join(s.spoolDir, "repo.git", "objects", "pack"), s.spoolDir} {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if !e.IsDir() {
				out = append(out, filepath.Join(d, e.Name()))
			}
		}
	}
	return out
}

func TestPackLimitStorage(t *testing.T) {
	pack, blob := packOf(t, "some catalog content, long enough to be worth a pack")

	t.Run("within the limit", func(t *testing.T) {
		s := newPackLimitStorage(t, int64(len(pack)))
		if err := writePack(s, pack); err != nil {
			t.Fatal(err)
		}
		if _, err := s.EncodedObject(plumbing.BlobObject, blob); err != nil {
			t.Errorf("the blob was not stored: %v", err)
		}
		if s.exceeded || s.received != int64(len(pack)) {
			t.Errorf("exceeded=%v received=%d, want false and %d", s.exceeded, s.received, len(pack))
		}
	})

	t.Run("one byte over the limit", func(t *testing.T) {
		s := newPackLimitStorage(t, int64(len(pack)-1))
		if err := writePack(s, pack); !errors.Is(err, errPackTooLarge) {
			t.Fatalf("got %v, want errPackTooLarge", err)
		}
		if !s.exceeded {
			t.Error("exceeded is false")
		}
		if files := packFiles(t, s); len(files) != 0 {
			t.Errorf("left behind: %v", files)
		}
	})

	for name, data := range map[string][]byte{
		"truncated":       pack[:len(pack)-5],
		"corrupt":         append(append([]byte(nil), pack[:len(pack)-1]...), pack[len(pack)-1]^0xff),
		"not a packfile":  []byte("<html>an error page, not a packfile, but long enough</html>"),
		"only the header": pack[:12],
	} {
		t.Run(name, func(t *testing.T) {
			s := newPackLimitStorage(t, 1<<20)
			err := writePack(s, data)
			if err == nil {
				t.Fatal("a broken packfile was accepted")
			}
			t.Logf("error: %v", err)
			if files := packFiles(t, s); len(files) != 0 {
				t.Errorf("left behind: %v", files)
			}
		})
	}
}
