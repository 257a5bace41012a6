package source

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// extractLayers applies tar layers (lowest first) the way an image is unpacked, into a content
// directory that has a sibling "outside" directory; it fails the test when anything is written
// next to the content directory.
func extractLayers(t *testing.T, limits Limits, imageDir string, layers ...[]byte) (string, error) {
	t.Helper()
	parent := t.TempDir()
	outside := filepath.Join(parent, "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	content := filepath.Join(parent, "content")
	c, err := openContentDir(content, limits, `image "test"`)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	root := imageDir
	c.absRoot = &root
	var read int64
	err = func() error {
		for _, l := range layers {
			if _, err := extractArchive(ctx(t), bytes.NewReader(l), c, tarOptions{dir: imageDir, layer: newLayerState()}, &read); err != nil {
				return err
			}
		}
		return c.finish()
	}()
	t.Cleanup(func() {
		if got := tree(t, outside); len(got) != 0 {
			t.Errorf("written outside of the content directory: %q", got)
		}
		if entries, _ := os.ReadDir(parent); len(entries) != 2 {
			t.Errorf("the content directory's parent holds %d entries, want 2 (content, outside)", len(entries))
		}
	})
	return content, err
}

func TestExtractRefusesHostileArchives(t *testing.T) {
	big := strings.Repeat("0", 2<<20)
	for _, tc := range []struct {
		name     string
		imageDir string
		limits   Limits
		layers   [][]entry
		kind     Kind
		message  string
	}{
		{name: "dot-dot entry", layers: [][]entry{{file("../outside/evil", "x")}}, kind: KindInvalidContent, message: `entry "../outside/evil" contains a '..' element`},
		{name: "dot-dot inside a path", imageDir: "configs", layers: [][]entry{{file("configs/../../outside/evil", "x")}}, kind: KindInvalidContent, message: "'..' element"},
		{name: "absolute entry", layers: [][]entry{{file("/etc/evil", "x")}}, kind: KindInvalidContent, message: `entry "/etc/evil" has an absolute path`},
		{name: "symlink escaping by ..", layers: [][]entry{{symlink("link", "../outside")}}, kind: KindInvalidContent, message: `symlink "link" points to "../outside", outside of the content directory`},
		{name: "symlink escaping deep", imageDir: "configs", layers: [][]entry{{symlink("configs/a/b/link", "../../../../outside")}}, kind: KindInvalidContent, message: "outside of the content directory"},
		{name: "absolute symlink outside the image dir", imageDir: "configs", layers: [][]entry{{symlink("configs/link", "/etc/passwd")}}, kind: KindInvalidContent, message: `points to "/etc/passwd", outside of /configs`},
		{name: "symlink chain escaping", layers: [][]entry{{symlink("a", "."), symlink("b", "a/../outside")}}, kind: KindInvalidContent, message: `symlink "b" resolves to a path outside of the content directory`},
		{name: "symlink loop", layers: [][]entry{{symlink("a", "b"), symlink("b", "a")}}, kind: KindInvalidContent, message: "symlink loop"},
		{name: "hardlink escaping", layers: [][]entry{{hardlink("h", "../outside/passwd")}}, kind: KindInvalidContent, message: "'..' element"},
		{name: "absolute hardlink", layers: [][]entry{{hardlink("h", "/etc/passwd")}}, kind: KindInvalidContent, message: "absolute path"},
		{name: "hardlink outside the image dir", imageDir: "configs", layers: [][]entry{{file("etc/passwd", "root"), hardlink("configs/h", "etc/passwd")}}, kind: KindInvalidContent, message: `hardlink "h" points to "etc/passwd", outside of /configs`},
		{name: "hardlink to nothing", layers: [][]entry{{hardlink("h", "missing")}}, kind: KindInvalidContent, message: `hardlink "h" points to "missing", which is not a file of the content`},
		{name: "hardlink to a directory", layers: [][]entry{{dir("d/"), hardlink("h", "d")}}, kind: KindInvalidContent, message: "not a regular file"},
		{name: "decompression bomb", limits: Limits{MaxBytes: 1 << 20}, layers: [][]entry{{file("bomb", big)}}, kind: KindTooLarge, message: "larger than 1.0 MiB"},
		{name: "bomb outside the image dir still counts", imageDir: "configs", limits: Limits{MaxBytes: 1 << 20}, layers: [][]entry{{file("usr/bomb", big)}}, kind: KindTooLarge, message: "decompression bomb"},
		{name: "too many files", limits: Limits{MaxFiles: 3}, layers: [][]entry{{file("a", ""), file("b", ""), file("c", ""), file("d", "")}}, kind: KindTooLarge, message: "more than 3 files"},
		{name: "image dir is a file", imageDir: "configs", layers: [][]entry{{file("configs", "x")}}, kind: KindInvalidContent, message: "/configs is a file, not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var layers [][]byte
			for _, l := range tc.layers {
				layers = append(layers, gzipBytes(t, tarBytes(t, l...)))
			}
			_, err := extractLayers(t, tc.limits, tc.imageDir, layers...)
			e := wantError(t, err, tc.kind, tc.message)
			if e.Retryable {
				t.Errorf("hostile content must not be retryable: %v", e)
			}
		})
	}
}

func TestExtractRefusesNonTar(t *testing.T) {
	_, err := extractLayers(t, Limits{}, "", gzipBytes(t, bytes.Repeat([]byte("not a tar archive "), 100)))
	wantError(t, err, KindInvalidContent, "not a valid tar archive")
}

func TestExtractAppliesWhiteouts(t *testing.T) {
	lower := tarBytes(t,
		dir("configs/"), file("configs/a.json", "a"), file("configs/b.json", "b"),
		file("configs/sub/c.json", "c"), file("configs/sub/deep/e.json", "e"),
		file("configs/x/y.json", "y"), file("usr/bin/opm", "binary"))
	upper := tarBytes(t,
		file("configs/sub/d.json", "d"), // written before the opaque marker of its directory: kept
		file("configs/.wh.a.json", ""),
		file("configs/sub/.wh..wh..opq", ""),
		file("configs/x", "now a file"), // a file replaces the lower directory
		file("configs/b.json", "b2"))
	dir, err := extractLayers(t, Limits{}, "configs", gzipBytes(t, lower), upper)
	if err != nil {
		t.Fatal(err)
	}
	wantTree(t, dir, "b.json=b2", "sub/", "sub/d.json=d", "x=now a file")
}

func TestExtractWhiteoutOfTheImageDir(t *testing.T) {
	l1 := tarBytes(t, file("configs/old.json", "old"))
	l2 := tarBytes(t, file(".wh.configs", ""))
	l3 := tarBytes(t, file("configs/new.json", "new"))
	dir, err := extractLayers(t, Limits{}, "configs", l1, l2, l3)
	if err != nil {
		t.Fatal(err)
	}
	wantTree(t, dir, "new.json=new")

	// An opaque root hides every lower layer.
	dir, err = extractLayers(t, Limits{}, "", l1, tarBytes(t, file(".wh..wh..opq", ""), file("top", "t")))
	if err != nil {
		t.Fatal(err)
	}
	wantTree(t, dir, "top=t")
}

func TestExtractLinksInside(t *testing.T) {
	dir, err := extractLayers(t, Limits{}, "configs",
		gzipBytes(t, tarBytes(t,
			dir("configs/v1/"), file("configs/v1/a.json", "a"),
			symlink("configs/latest", "v1"),
			symlink("configs/abs", "/configs/v1/a.json"), // absolute, inside the image dir: rewritten
			hardlink("configs/hard.json", "configs/v1/a.json"),
			file("configs/latest/through.json", "t"), // written through an inside symlink
			execFile("configs/run.sh", "#!/bin/sh"),
			fifo("configs/fifo"), // skipped
		)))
	if err != nil {
		t.Fatal(err)
	}
	wantTree(t, dir, "v1/", "v1/a.json=a", "v1/through.json=t", "latest -> v1", "abs -> v1/a.json", "hard.json=a", "run.sh=#!/bin/sh")
	if fi, _ := os.Stat(filepath.Join(dir, "run.sh")); fi.Mode().Perm() != 0o755 {
		t.Errorf("run.sh mode %v, want 0755", fi.Mode().Perm())
	}
}

func TestExtractZstd(t *testing.T) {
	var buf bytes.Buffer
	zw, err := zstd.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = zw.Write(tarBytes(t, file("manifests/cm.yaml", "kind: ConfigMap")))
	_ = zw.Close()
	dir, err := extractLayers(t, Limits{}, "", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	wantTree(t, dir, "manifests/", "manifests/cm.yaml=kind: ConfigMap")
}

func TestRelativeTo(t *testing.T) {
	for _, tc := range []struct{ from, to, want string }{
		{".", "a/b", "a/b"},
		{"a", "a/b", "b"},
		{"a/c", "a/b", "../b"},
		{"x/y", ".", "../.."},
	} {
		if got := relativeTo(tc.from, tc.to); got != tc.want {
			t.Errorf("relativeTo(%q, %q) = %q, want %q", tc.from, tc.to, got, tc.want)
		}
	}
}
