package source

import (
	"archive/tar"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/olmv1/olmv1/platform/sharedtestdata"
)

// FuzzExtractArchive feeds arbitrary bytes to the archive extraction of image layers and HTTP
// sources (extractArchive: gzip, zstd or plain tar) and checks, on a real directory, what must hold
// for any input:
//
//   - no panic; every error is a *Error;
//   - nothing is created, changed or hard-linked outside the content directory (a sibling directory
//     holds a sentinel file; the parent may hold nothing else);
//   - when extraction succeeds, every symlink resolves inside the content directory, and the content
//     respects Limits (bytes read and written, number of entries). (When it fails, the caller
//     removes the staging directory, refused links included.)
//
// mode picks the variant: bit 0 gzips the input (so that mutations of the tar structure also reach
// the gzip path), bit 1 extracts it as an image layer over a fixed lower layer (whiteouts, absolute
// symlinks rewritten under the image directory), bits 2-3 the image directory ("", "configs",
// "manifests"). maxBytes and maxFiles are the Limits, kept small so that the fuzzer reaches them.
func FuzzExtractArchive(f *testing.F) {
	seeds := map[string][]byte{
		"plain": tarBytes(f, dir("configs/"), file("configs/a.json", `{"schema":"olm.package"}`), execFile("configs/run.sh", "#!/bin/sh"),
			symlink("configs/latest", "a.json"), symlink("configs/abs", "/configs/a.json"), hardlink("configs/hard.json", "configs/a.json"), fifo("configs/fifo")),
		"dotdot":       tarBytes(f, file("../outside/evil", "x")),
		"dotdot-deep":  tarBytes(f, file("configs/../../outside/evil", "x")),
		"absolute":     tarBytes(f, file("/etc/evil", "x")),
		"symlink-out":  tarBytes(f, symlink("link", "../outside")),
		"symlink-then": tarBytes(f, symlink("configs/link", "../outside"), file("configs/link/evil", "x")),
		"symlink-dir":  tarBytes(f, symlink("configs/d", "."), file("configs/d/d/d/x", "x")),
		"chain":        tarBytes(f, symlink("a", "."), symlink("b", "a/../outside")),
		"loop":         tarBytes(f, symlink("a", "b"), symlink("b", "a")),
		"hardlink-out": tarBytes(f, hardlink("h", "../outside/sentinel")),
		"hardlink-abs": tarBytes(f, hardlink("h", "/etc/passwd")),
		"whiteouts": tarBytes(f, file("configs/sub/d.json", "d"), file("configs/.wh.a.json", ""), file("configs/sub/.wh..wh..opq", ""),
			file("configs/x", "now a file"), file(".wh.configs", ""), file(".wh..wh..opq", "")),
		"file-is-dir": tarBytes(f, file("configs", "x")),
		"many":        tarBytes(f, file("a", "1"), file("b", "2"), file("c", "3"), file("d", "4"), dir("e/"), dir("e/f/")),
		"big":         tarBytes(f, file("configs/big", strings.Repeat("0", 70000))),
		"header-only": tarHeaderBytes(f, "configs/truncated", 1<<20),
		"not-tar":     bytes.Repeat([]byte("not a tar archive "), 40),
		"empty":       nil,
	}
	if chart := fuzzSharedDir(f, "helm/hello-world"); chart != nil {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		if err := tw.AddFS(chart); err == nil && tw.Close() == nil {
			seeds["real-chart"] = buf.Bytes()
		}
	}
	names := make([]string, 0, len(seeds))
	for name := range seeds {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		data := seeds[name]
		f.Add(data, uint8(0), uint16(0xffff), uint8(0xff))
		f.Add(gzipBytes(f, data), uint8(2|1<<2), uint16(4096), uint8(8))
		f.Add(data, uint8(1|2|2<<2), uint16(100), uint8(3))
	}
	lowerEntries := []entry{dir("configs/"), file("configs/a.json", "a"), file("configs/sub/c.json", "c"),
		symlink("configs/latest", "sub"), file("manifests/m.yaml", "m"), file("usr/bin/opm", "binary")}
	lowerTar := tarBytes(f, lowerEntries...)
	lower := gzipBytes(f, lowerTar)

	f.Fuzz(func(t *testing.T, data []byte, mode uint8, maxBytes uint16, maxFiles uint8) {
		limits := Limits{MaxBytes: int64(maxBytes) + 1, MaxFiles: int(maxFiles) + 1}
		imageDir := []string{"", "configs", "manifests", "configs"}[mode>>2&3]
		layer := mode&2 != 0
		if layer { // the limits are for the fuzzed layer: the lower layer fits in any of them
			limits.MaxBytes += int64(len(lowerTar))
			limits.MaxFiles += len(lowerEntries)
		}
		if mode&1 != 0 {
			data = gzipBytes(t, data)
		}

		parent := t.TempDir()
		outside := filepath.Join(parent, "outside")
		sentinel := filepath.Join(outside, "sentinel")
		if err := os.Mkdir(outside, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(sentinel, []byte("sentinel"), 0o644); err != nil {
			t.Fatal(err)
		}
		content := filepath.Join(parent, "content")
		c, err := openContentDir(content, limits, "fuzz")
		if err != nil {
			t.Fatal(err)
		}
		defer c.close()

		var read int64
		xerr := func() error {
			if !layer {
				if _, err := extractArchive(ctx(t), bytes.NewReader(data), c, tarOptions{dir: imageDir}, &read); err != nil {
					return err
				}
				return c.finish()
			}
			c.absRoot = &imageDir
			for _, l := range [][]byte{lower, data} {
				if _, err := extractArchive(ctx(t), bytes.NewReader(l), c, tarOptions{dir: imageDir, layer: newLayerState()}, &read); err != nil {
					return err
				}
			}
			return c.finish()
		}()
		var e *Error
		if xerr != nil && !errors.As(xerr, &e) {
			t.Fatalf("extraction failed with %T, not a *source.Error: %v", xerr, xerr)
		}

		// Nothing outside the content directory.
		if entries, _ := os.ReadDir(parent); len(entries) != 2 {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Fatalf("the content directory's parent holds %q, want only content and outside", names)
		}
		if got := tree(t, outside); len(got) != 1 || got[0] != "sentinel=sentinel" {
			t.Fatalf("outside of the content directory changed: %q", got)
		}
		sentinelInfo, err := os.Stat(sentinel)
		if err != nil {
			t.Fatal(err)
		}
		realContent, err := filepath.EvalSymlinks(content)
		if err != nil {
			t.Fatal(err)
		}
		root, err := os.OpenRoot(content)
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()

		// Inside it: no link leads out, and the content is within Limits.
		var entries int
		var size int64
		var regular []fs.FileInfo
		err = filepath.WalkDir(content, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == content {
				return err
			}
			entries++
			fi, err := os.Lstat(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(content, p)
			switch {
			case fi.Mode()&fs.ModeSymlink != 0 && xerr == nil:
				// (A failed extraction may leave a refused link behind: the caller removes the
				// staging directory.)
				if resolved, err := filepath.EvalSymlinks(p); err == nil {
					if r, _ := filepath.Rel(realContent, resolved); r == ".." || strings.HasPrefix(r, "../") {
						t.Errorf("symlink %s resolves to %s, outside of the content directory", rel, resolved)
					}
				}
				if _, err := root.Stat(rel); err != nil && strings.Contains(err.Error(), "escapes") {
					t.Errorf("symlink %s escapes the content directory: %v", rel, err)
				}
			case fi.Mode().IsRegular():
				if os.SameFile(fi, sentinelInfo) {
					t.Errorf("%s is a hard link to the sentinel outside of the content directory", rel)
				}
				for _, other := range regular {
					if os.SameFile(fi, other) {
						return nil // a hard link: its bytes are counted once
					}
				}
				regular = append(regular, fi)
				size += fi.Size()
			}
			return nil
		})
		if err != nil {
			t.Fatalf("walking the content: %v", err)
		}
		if xerr != nil {
			return
		}
		if size > limits.MaxBytes {
			t.Errorf("extraction succeeded with %d bytes of files, over the limit of %d", size, limits.MaxBytes)
		}
		if entries > limits.MaxFiles {
			t.Errorf("extraction succeeded with %d entries, over the limit of %d", entries, limits.MaxFiles)
		}
		if read > limits.MaxBytes {
			t.Errorf("extraction succeeded after reading %d bytes, over the limit of %d", read, limits.MaxBytes)
		}
	})
}

// fuzzSharedDir returns the directory rel of the shared real test data ($OLMV1_TESTDATA, by default
// ../shared/testdata next to the repository root), or nil when it is absent: the fuzz targets still
// run on their built-in seeds.
func fuzzSharedDir(tb testing.TB, rel string) fs.FS {
	tb.Helper()
	root, ok := sharedtestdata.Root()
	if !ok {
		return nil
	}
	p := filepath.Join(root, rel)
	if st, err := os.Stat(p); err != nil || !st.IsDir() {
		tb.Logf("fuzz seed %s not added: %v", p, err)
		return nil
	}
	return os.DirFS(p)
}
