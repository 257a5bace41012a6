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
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"runtime"
	"slices"
	"sync"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/model"
	"github.com/operator-framework/operator-registry/alpha/property"
	"golang.org/x/sync/errgroup"
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

// validate converts the catalog into operator-registry's model and validates it, one package at a
// time on every CPU: packages are independent in the model, and conversion and validation (which
// parse every bundle property) cost as much as reading the files. Only the blobs of the packages
// being validated are in memory.
//
// A package whose canonical blobs were validated before (same key, see validcache.go) is not
// decoded nor validated again. A blob that cannot be decoded into its schema's type is reported
// before any invalid package, naming its file, as the walk would; then the first invalid package in
// name order, so the message does not depend on timing.
func validate(ctx context.Context, sp *spill, files []string) error {
	byPkg := map[string][]int{}
	for i, e := range sp.entries {
		pkg, ok := validationPackage(e.Schema, e.Package, e.Name)
		if ok {
			byPkg[pkg] = append(byPkg[pkg], i)
		}
	}
	names := slices.Sorted(maps.Keys(byPkg))
	decodeErrs := make([]error, len(names))
	errs := make([]error, len(names))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, name := range names {
		g.Go(func() error {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			blobs, err := sp.readAll(byPkg[name])
			if err != nil {
				return err
			}
			key := packageKey(name, func(yield func(schema string, blob []byte) bool) {
				for j, idx := range byPkg[name] {
					if !yield(sp.entries[idx].Schema, blobs[j]) {
						return
					}
				}
			})
			if validPackages.has(key) {
				return nil
			}
			var pkg declcfg.DeclarativeConfig
			for j, idx := range byPkg[name] {
				if err := decodeInto(&pkg, sp.entries[idx], blobs[j]); err != nil {
					decodeErrs[i] = &InvalidError{fmt.Errorf("file %q: %s: %w", files[sp.entries[idx].file], describeEntry(sp.entries[idx]), err)}
					return nil
				}
			}
			blobs = nil
			for j := range pkg.Bundles {
				if pkg.Bundles[j], err = parseHeavyProperties(pkg.Bundles[j]); err != nil {
					break
				}
			}
			var m model.Model
			if err == nil {
				m, err = declcfg.ConvertToModel(pkg)
			}
			if err == nil {
				err = m.Validate()
			}
			if err == nil {
				validPackages.add(key)
			}
			errs[i] = err
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for _, err := range decodeErrs {
		if err != nil {
			return err
		}
	}
	for _, err := range errs {
		if err != nil {
			return &InvalidError{err}
		}
	}
	return nil
}

// validationPackage is the package whose validation reads a blob: its own name for olm.package,
// its package for the other core schemas; ok is false for other schemas.
func validationPackage(schema, pkg, name string) (string, bool) {
	switch schema {
	case declcfg.SchemaPackage:
		return name, true
	case declcfg.SchemaChannel, declcfg.SchemaBundle, declcfg.SchemaDeprecation:
		return pkg, true
	}
	return "", false
}

// decodeInto decodes a core-schema blob into its typed form and adds it to cfg.
func decodeInto(cfg *declcfg.DeclarativeConfig, e spillEntry, blob []byte) error {
	switch e.Schema {
	case declcfg.SchemaPackage:
		var p declcfg.Package
		if err := json.Unmarshal(blob, &p); err != nil {
			return err
		}
		cfg.Packages = append(cfg.Packages, p)
	case declcfg.SchemaChannel:
		var c declcfg.Channel
		if err := json.Unmarshal(blob, &c); err != nil {
			return err
		}
		cfg.Channels = append(cfg.Channels, c)
	case declcfg.SchemaBundle:
		var b declcfg.Bundle
		if err := json.Unmarshal(blob, &b); err != nil {
			return err
		}
		cfg.Bundles = append(cfg.Bundles, b)
	case declcfg.SchemaDeprecation:
		var d declcfg.Deprecation
		if err := json.Unmarshal(blob, &d); err != nil {
			return err
		}
		cfg.Deprecations = append(cfg.Deprecations, d)
	}
	return nil
}

// heavyProperties are the bundle properties that carry whole manifests (a CSV's metadata, base64
// objects). The model conversion parses every property twice and encodes them once more.
var heavyProperties = map[string]bool{property.TypeCSVMetadata: true, property.TypeBundleObject: true}

// parseHeavyProperties parses b's heavy properties once, as property.Parse would, and returns a
// copy of b whose heavy property values are the empty object, which parse and encode for nothing
// and which nothing in the model's validation looks into.
func parseHeavyProperties(b declcfg.Bundle) (declcfg.Bundle, error) {
	heavy := slices.IndexFunc(b.Properties, func(p property.Property) bool { return heavyProperties[p.Type] })
	if heavy < 0 {
		return b, nil
	}
	props := slices.Clone(b.Properties)
	for i, p := range props {
		if !heavyProperties[p.Type] {
			continue
		}
		if _, err := property.Parse([]property.Property{p}); err != nil {
			var pe property.ParseError
			if errors.As(err, &pe) {
				pe.Idx = i
				err = pe
			}
			return b, fmt.Errorf("parse properties for bundle %q: %v", b.Name, err)
		}
		props[i].Value = emptyObject
	}
	b.Properties = props
	return b, nil
}

var emptyObject = json.RawMessage(`{}`)

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
