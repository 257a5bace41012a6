// Package fbc parses, validates and canonicalises file-based catalogs (FBC).
//
// Load reads every JSON and YAML file of a directory tree (honouring .indexignore files, as
// operator-registry's declcfg walker does, but with its own faster parser: see walkMetas), checks
// that the blobs form a valid model (packages, channels,
// bundles, upgrade edges, deprecations), and returns the blobs in a canonical form: each blob is
// compact JSON with sorted keys, and the blobs are sorted by schema, package, name and content. The
// content hash is the sha256 of that canonical stream, so the same catalog gives the same hash
// whatever its source, file layout, key order or blob order. The blobs are not kept in memory: they
// are spilled to a temporary file and only an index of them is (see LoadWith).
//
// Hostile content is refused as invalid, never retried: a YAML document whose aliases expand it to
// more than ten times its size ("billion laughs", see aliases.go) is refused before it is expanded,
// and so is a blob whose schema, package or name could not be served as written or would read as
// another (invalid UTF-8, control and invisible characters, over-long names: see names.go).
package fbc

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// Meta is one FBC blob in canonical form.
type Meta struct {
	Schema  string
	Package string
	Name    string
	// Blob is the blob as compact JSON with sorted object keys (no trailing newline).
	Blob []byte
}

// Counts counts the blobs of the three core schemas.
type Counts struct {
	Packages, Channels, Bundles int
}

// Entry locates one blob in the canonical stream.
type Entry struct {
	Schema  string `json:"schema"`
	Package string `json:"package,omitempty"`
	Name    string `json:"name,omitempty"`
	Offset  int64  `json:"offset"`
	Length  int64  `json:"length"` // without the trailing newline
}

// Catalog is a parsed, validated catalog in canonical order. Its blobs are not in memory: they are
// in a temporary file (removed from its directory as soon as it is created, so nothing is left
// behind whatever happens) that WriteTo and Blob read. Close releases the file; a Catalog that is
// not closed releases it when it is garbage collected.
type Catalog struct {
	// Entries are the blobs sorted by schema, package, name, then content, with their byte range in
	// the canonical stream.
	Entries []Entry
	// Hash is "sha256:<hex>" of the canonical stream (see WriteTo).
	Hash   string
	Counts Counts
	// Size is the number of bytes WriteTo writes.
	Size int64

	spill *spill
	// at[i] is where Entries[i]'s blob is in the spill file.
	at []int64
}

// InvalidError is returned by Load when the content is readable but is not a valid file-based
// catalog: a controller reports it as InvalidCatalog rather than as a transient failure.
type InvalidError struct{ Err error }

func (e *InvalidError) Error() string { return e.Err.Error() }
func (e *InvalidError) Unwrap() error { return e.Err }

// IsInvalid reports whether err says the catalog content is invalid (retrying cannot fix it).
func IsInvalid(err error) bool {
	var ie *InvalidError
	return errors.As(err, &ie)
}

// Options tune LoadWith.
type Options struct {
	// TempDir is where the canonical blobs are spilled while the catalog is loaded and until it is
	// closed (as large as the canonical stream); default: os.TempDir(). catalogd passes a directory
	// of its storage volume (storage.Store.TempDir).
	TempDir string
}

// Load parses and validates the catalog under root (see LoadWith) with the default Options.
func Load(ctx context.Context, root fs.FS) (*Catalog, error) {
	return LoadWith(ctx, root, Options{})
}

// LoadWith parses and validates the catalog under root with memory bounded by its largest
// document (YAML document or JSON value: files are read as streams) and its largest packages, not
// by the catalog nor by its largest file:
//
//  1. walk: every blob is parsed, canonicalised and appended to a spill file; only its schema,
//     package, name, place in the spill file and source file are kept in memory;
//  2. order: the entries are sorted canonically (blobs are read back only to order blobs with the
//     same schema, package and name);
//  3. validate: one package at a time per CPU, its blobs are read back, decoded and validated as an
//     operator-registry model (validation never looks across packages);
//  4. hash: the blobs are read back in canonical order and hashed.
func LoadWith(ctx context.Context, root fs.FS, opts Options) (_ *Catalog, err error) {
	sp, err := newSpill(opts.TempDir)
	if err != nil {
		return nil, fmt.Errorf("creating a temporary file for the catalog's blobs: %w", err)
	}
	defer func() {
		if err != nil {
			sp.close()
		}
	}()
	var files fileNames
	err = walkMetas(ctx, root, func(path string, m *declcfg.Meta, err error) error {
		if err != nil {
			return &InvalidError{fmt.Errorf("file %q: %w", path, err)}
		}
		cm, err := canonicalize(m)
		if err != nil {
			return &InvalidError{fmt.Errorf("file %q: %s: %w", path, describe(m), err)}
		}
		if cm.Schema == "" {
			return &InvalidError{fmt.Errorf("file %q: blob %s has no \"schema\" field; every FBC blob needs one (olm.package, olm.channel, olm.bundle, olm.deprecations, ...)", path, truncate(m.Blob))}
		}
		if err := checkNames(cm); err != nil {
			return &InvalidError{fmt.Errorf("file %q: %w", path, err)}
		}
		return sp.add(cm, files.index(path))
	})
	if err == nil {
		err = sp.flush()
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var ie *InvalidError
		if errors.As(err, &ie) || errors.Is(err, errSpill) {
			return nil, err
		}
		return nil, &InvalidError{err}
	}
	if len(sp.entries) == 0 {
		return nil, &InvalidError{errors.New("no FBC blobs found: the content holds no .json or .yaml file with a \"schema\" field (check the source's path or the image's /configs directory)")}
	}
	cat, err := sp.catalog()
	if err != nil {
		return nil, err
	}
	if err := validate(ctx, sp, files.names); err != nil {
		return nil, err
	}
	if err := cat.hash(); err != nil {
		return nil, err
	}
	return cat, nil
}

// fileNames numbers the files blobs come from (an entry keeps the number, not the name).
type fileNames struct {
	mu    sync.Mutex
	names []string
	last  int
}

func (f *fileNames) index(path string) int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	// Blobs of a file arrive together (several workers share a file's documents), so a look at the
	// most recent names is enough to avoid duplicates in the common case; duplicates are harmless.
	for i := len(f.names) - 1; i >= max(0, len(f.names)-8); i-- {
		if f.names[i] == path {
			return int32(i)
		}
	}
	f.names = append(f.names, path)
	return int32(len(f.names) - 1)
}

var newline = []byte{'\n'}

func compareMeta(a, b Meta) int {
	return cmp.Or(
		cmp.Compare(a.Schema, b.Schema),
		cmp.Compare(a.Package, b.Package),
		cmp.Compare(a.Name, b.Name),
		bytes.Compare(a.Blob, b.Blob),
	)
}

func describe(m *declcfg.Meta) string {
	s := fmt.Sprintf("blob schema=%q", m.Schema)
	if m.Package != "" {
		s += fmt.Sprintf(" package=%q", m.Package)
	}
	if m.Name != "" {
		s += fmt.Sprintf(" name=%q", m.Name)
	}
	return s
}

func describeEntry(e spillEntry) string {
	return describe(&declcfg.Meta{Schema: e.Schema, Package: e.Package, Name: e.Name})
}

func truncate(b []byte) string {
	const max = 120
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}
