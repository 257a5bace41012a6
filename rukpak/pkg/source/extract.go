package source

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"path"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// Whiteout markers of OCI image layers (the AUFS convention the OCI image spec adopted).
const (
	whiteoutPrefix = ".wh."
	whiteoutOpaque = ".wh..wh..opq"
)

// tarOptions say how one tar stream is read into a contentDir.
type tarOptions struct {
	// dir is the directory of the archive to extract, cleaned and relative ("" for all of it). Its
	// content lands at the root of the content directory; entries elsewhere are skipped.
	dir string
	// layer is set for image layers: whiteout files are then applied to the layers below, and
	// layer records what this layer wrote so that its own entries survive an opaque whiteout.
	layer *layerState
	// streamErr classifies an error returned by the underlying stream (network, digest check).
	streamErr func(error) *Error
}

// layerState is what one image layer wrote, as content-relative names; "" stands for the root.
type layerState struct {
	written   map[string]bool
	ancestors map[string]bool
}

func newLayerState() *layerState {
	return &layerState{written: map[string]bool{}, ancestors: map[string]bool{}}
}

func (l *layerState) mark(rel string) {
	if l == nil {
		return
	}
	l.written[rel] = true
	l.ancestors[""] = true
	for d := path.Dir(rel); d != "." && d != "/"; d = path.Dir(d) {
		l.ancestors[d] = true
	}
}

// extractTar reads the (uncompressed) tar stream r into c and reports whether any entry was found
// under opts.dir.
func extractTar(ctx context.Context, r io.Reader, c *contentDir, opts tarOptions) (found bool, err error) {
	tr := tar.NewReader(r)
	for {
		if err := ctx.Err(); err != nil {
			return found, err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return found, nil
		}
		if err != nil {
			return found, c.streamError(err, opts)
		}
		name, err := cleanEntryName(hdr.Name)
		if err != nil {
			return found, c.invalid("%v; refusing an archive that writes outside of its directory", err)
		}
		if opts.layer != nil {
			base, dir := path.Base(name), path.Dir(name)
			if dir == "." {
				dir = ""
			}
			if base == whiteoutOpaque {
				if err := c.applyWhiteout(dir, opts, true); err != nil {
					return found, err
				}
				continue
			}
			if strings.HasPrefix(base, whiteoutPrefix) {
				if err := c.applyWhiteout(path.Join(dir, strings.TrimPrefix(base, whiteoutPrefix)), opts, false); err != nil {
					return found, err
				}
				continue
			}
		}
		rel, ok := stripDirPrefix(name, opts.dir)
		if !ok {
			continue
		}
		found = true
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = c.mkdir(rel)
		case tar.TypeReg, tar.TypeGNUSparse, '\x00':
			if rel == "" {
				return found, c.invalid("/%s is a file, not a directory", opts.dir)
			}
			err = c.writeFile(rel, tr, hdr.FileInfo().Mode())
		case tar.TypeSymlink:
			err = c.symlink(rel, hdr.Linkname)
		case tar.TypeLink:
			err = c.extractHardlink(rel, hdr.Linkname, opts.dir)
		default:
			// Devices, fifos and archive metadata entries carry no content for a catalog or bundle.
			continue
		}
		if err != nil {
			var e *Error
			if errors.As(err, &e) && e.Kind == KindUnreachable && e.Err != nil {
				// A read of the entry's data failed: the stream, not the entry, is at fault.
				return found, c.streamError(e.Err, opts)
			}
			return found, err
		}
		opts.layer.mark(rel)
	}
}

func (c *contentDir) streamError(err error, opts tarOptions) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, tar.ErrHeader) || errors.Is(err, gzip.ErrHeader) || errors.Is(err, gzip.ErrChecksum) || errors.Is(err, zstd.ErrMagicMismatch) {
		return c.invalid("not a valid tar archive: %v", err)
	}
	if opts.streamErr != nil {
		return opts.streamErr(err)
	}
	return newError(KindUnreachable, err, "%s: reading the archive: %v", c.what, err)
}

func (c *contentDir) extractHardlink(rel, linkname, dir string) error {
	target, err := cleanEntryName(linkname)
	if err != nil {
		return c.invalid("hardlink %q: target %v", rel, err)
	}
	trel, ok := stripDirPrefix(target, dir)
	if !ok {
		return c.invalid("hardlink %q points to %q, outside of /%s", rel, linkname, dir)
	}
	return c.hardlink(rel, trel)
}

// applyWhiteout removes, from the layers below, the image path p (or, when opaque, the children of
// directory p), translated to the content directory.
func (c *contentDir) applyWhiteout(p string, opts tarOptions, opaque bool) error {
	rel, ok := stripDirPrefix(p, opts.dir)
	if !ok {
		if p != "" && !strings.HasPrefix(opts.dir, p+"/") {
			return nil // unrelated to the extracted directory
		}
		// p is an ancestor of the extracted directory: all of it goes.
		rel, opaque = "", true
	}
	if opaque {
		return c.removeLowerChildren(rel, opts.layer)
	}
	return c.removeLower(rel, opts.layer)
}

func (c *contentDir) removeLower(rel string, l *layerState) error {
	if l.ancestors[rel] || rel == "" {
		return c.removeLowerChildren(rel, l)
	}
	if l.written[rel] {
		return nil
	}
	return c.clear(rel, false)
}

func (c *contentDir) removeLowerChildren(rel string, l *layerState) error {
	name := rel
	if name == "" {
		name = "."
	}
	fi, err := c.root.Lstat(name)
	if err != nil || !fi.IsDir() {
		return nil
	}
	f, err := c.root.Open(name)
	if err != nil {
		return c.writeErr(name, err)
	}
	children, err := f.ReadDir(-1)
	_ = f.Close()
	if err != nil {
		return c.writeErr(name, err)
	}
	for _, child := range children {
		if err := c.removeLower(path.Join(rel, child.Name()), l); err != nil {
			return err
		}
	}
	return nil
}

// budgetReader counts the bytes read (after decompression) against the content's limit, so that a
// decompression bomb stops early even when its entries are skipped.
type budgetReader struct {
	r    io.Reader
	c    *contentDir
	read *int64
}

func (b budgetReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	*b.read += int64(n)
	if *b.read > b.c.limits.MaxBytes {
		return n, b.c.tooLarge()
	}
	return n, err
}

// decompress detects gzip and zstd streams by their magic bytes; anything else is returned as is.
func decompress(r io.Reader) (io.ReadCloser, error) {
	br := bufio.NewReader(r)
	magic, err := br.Peek(4)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	switch {
	case len(magic) >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		return gzip.NewReader(br)
	case len(magic) == 4 && magic[0] == 0x28 && magic[1] == 0xb5 && magic[2] == 0x2f && magic[3] == 0xfd:
		d, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(512<<20))
		if err != nil {
			return nil, err
		}
		return d.IOReadCloser(), nil
	}
	return io.NopCloser(br), nil
}

// extractArchive decompresses r when needed and extracts it. After the tar end marker the rest of
// the stream is read too, so that a digest check at the end of the stream runs.
func extractArchive(ctx context.Context, r io.Reader, c *contentDir, opts tarOptions, read *int64) (bool, error) {
	dr, err := decompress(r)
	if err != nil {
		return false, c.streamError(err, opts)
	}
	defer dr.Close()
	br := budgetReader{r: dr, c: c, read: read}
	found, err := extractTar(ctx, br, c, opts)
	if err != nil {
		return found, err
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		return found, c.streamError(err, opts)
	}
	if _, err := io.Copy(io.Discard, r); err != nil {
		return found, c.streamError(err, opts)
	}
	return found, nil
}
