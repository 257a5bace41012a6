package fbc

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// The spill file holds a catalog's canonical blobs, one per line, in the order the walk produced
// them; the entries (schema, package, name, offset, length, source file) are all Load keeps in
// memory per blob. The file is unlinked as soon as it is created: it takes disk space only while
// it is open, and nothing is left behind by a crash.

// errSpill marks a failure to write or read the spill file: an I/O problem, not invalid content.
var errSpill = errors.New("temporary catalog file")

type spillEntry struct {
	Schema, Package, Name string
	off                   int64 // in the spill file
	len                   int64 // without the newline
	file                  int32 // index into the walk's file names
}

type spill struct {
	f *os.File

	mu      sync.Mutex
	w       *bufio.Writer
	off     int64
	entries []spillEntry
}

func newSpill(dir string) (*spill, error) {
	f, err := os.CreateTemp(dir, ".fbc-blobs-")
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	return &spill{f: f, w: bufio.NewWriterSize(f, 256<<10)}, nil
}

// add appends a blob (called from the walk's goroutines).
func (s *spill) add(m Meta, file int32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.w.Write(m.Blob); err != nil {
		return fmt.Errorf("%w: %w", errSpill, err)
	}
	if err := s.w.WriteByte('\n'); err != nil {
		return fmt.Errorf("%w: %w", errSpill, err)
	}
	s.entries = append(s.entries, spillEntry{Schema: m.Schema, Package: m.Package, Name: m.Name, off: s.off, len: int64(len(m.Blob)), file: file})
	s.off += int64(len(m.Blob)) + 1
	return nil
}

func (s *spill) flush() error {
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("%w: %w", errSpill, err)
	}
	s.w = nil
	return nil
}

func (s *spill) close() { _ = s.f.Close() }

// read reads one blob.
func (s *spill) read(e spillEntry) ([]byte, error) {
	b := make([]byte, e.len)
	if _, err := s.f.ReadAt(b, e.off); err != nil {
		return nil, fmt.Errorf("%w: %w", errSpill, err)
	}
	return b, nil
}

// catalog sorts the entries canonically (by schema, package, name, then content: the blobs are read
// back only for runs of entries with the same schema, package and name) and returns the catalog
// over them, without its hash.
func (s *spill) catalog() (*Catalog, error) {
	slices.SortFunc(s.entries, func(a, b spillEntry) int {
		return cmp.Or(cmp.Compare(a.Schema, b.Schema), cmp.Compare(a.Package, b.Package), cmp.Compare(a.Name, b.Name))
	})
	for i := 0; i < len(s.entries); {
		j := i + 1
		for j < len(s.entries) && sameKey(s.entries[i], s.entries[j]) {
			j++
		}
		if j-i > 1 {
			if err := s.sortByContent(s.entries[i:j]); err != nil {
				return nil, err
			}
		}
		i = j
	}
	c := &Catalog{Entries: make([]Entry, len(s.entries)), at: make([]int64, len(s.entries)), spill: s}
	for i, e := range s.entries {
		c.Entries[i] = Entry{Schema: e.Schema, Package: e.Package, Name: e.Name, Offset: c.Size, Length: e.len}
		c.at[i] = e.off
		c.Size += e.len + 1
		switch e.Schema {
		case declcfg.SchemaPackage:
			c.Counts.Packages++
		case declcfg.SchemaChannel:
			c.Counts.Channels++
		case declcfg.SchemaBundle:
			c.Counts.Bundles++
		}
	}
	return c, nil
}

func sameKey(a, b spillEntry) bool {
	return a.Schema == b.Schema && a.Package == b.Package && a.Name == b.Name
}

// sortByContent orders entries that share schema, package and name by their blobs.
func (s *spill) sortByContent(run []spillEntry) error {
	type blob struct {
		e spillEntry
		b []byte
	}
	blobs := make([]blob, len(run))
	for i, e := range run {
		b, err := s.read(e)
		if err != nil {
			return err
		}
		blobs[i] = blob{e, b}
	}
	slices.SortFunc(blobs, func(a, b blob) int { return bytes.Compare(a.b, b.b) })
	for i := range blobs {
		run[i] = blobs[i].e
	}
	return nil
}

// hash computes c.Hash: the sha256 of the canonical stream.
func (c *Catalog) hash() error {
	h := sha256.New()
	if _, err := c.WriteTo(h); err != nil {
		return err
	}
	c.Hash = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return nil
}

// WriteTo writes the canonical stream: one blob per line, in canonical order. Its sha256 is c.Hash.
// Blobs that follow each other in the spill file are copied in one read.
func (c *Catalog) WriteTo(w io.Writer) (int64, error) {
	buf := make([]byte, 256<<10)
	var n int64
	for i := 0; i < len(c.Entries); {
		start := c.at[i]
		end := start + c.Entries[i].Length + 1
		j := i + 1
		for j < len(c.Entries) && c.at[j] == end {
			end += c.Entries[j].Length + 1
			j++
		}
		k, err := io.CopyBuffer(onlyWriter{w}, io.NewSectionReader(c.spill.f, start, end-start), buf)
		n += k
		if err != nil {
			return n, fmt.Errorf("%w: %w", errSpill, err)
		}
		if k != end-start {
			return n, fmt.Errorf("%w: short read", errSpill)
		}
		i = j
	}
	return n, nil
}

// onlyWriter hides a writer's ReadFrom, so that io.CopyBuffer uses the buffer it is given.
type onlyWriter struct{ io.Writer }

// Blob reads the blob of Entries[i].
func (c *Catalog) Blob(i int) ([]byte, error) {
	return c.spill.read(spillEntry{off: c.at[i], len: c.Entries[i].Length})
}

// ReadMetas reads every blob into memory, in canonical order (for tests and small catalogs: this
// is what Load avoids).
func (c *Catalog) ReadMetas() ([]Meta, error) {
	out := make([]Meta, len(c.Entries))
	for i, e := range c.Entries {
		b, err := c.Blob(i)
		if err != nil {
			return nil, err
		}
		out[i] = Meta{Schema: e.Schema, Package: e.Package, Name: e.Name, Blob: b}
	}
	return out, nil
}

// Close releases the spill file. The catalog cannot be read afterwards.
func (c *Catalog) Close() error { return c.spill.f.Close() }
