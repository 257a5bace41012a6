// Package fbc parses, validates and canonicalises file-based catalogs (FBC).
//
// Load reads every JSON and YAML file of a directory tree (honouring .indexignore files, as
// operator-registry's declcfg walker does, but with its own faster parser: see walkMetas), checks
// that the blobs form a valid model (packages, channels,
// bundles, upgrade edges, deprecations), and returns the blobs in a canonical form: each blob is
// compact JSON with sorted keys, and the blobs are sorted by schema, package, name and content. The
// content hash is the sha256 of that canonical stream, so the same catalog gives the same hash
// whatever its source, file layout, key order or blob order.
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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// Catalog is a parsed, validated catalog in canonical order.
type Catalog struct {
	// Metas are the blobs sorted by schema, package, name, then content.
	Metas []Meta
	// Hash is "sha256:<hex>" of the canonical stream (see WriteTo).
	Hash   string
	Counts Counts
	// Size is the number of bytes WriteTo writes.
	Size int64
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

// Load parses and validates the catalog under root.
func Load(ctx context.Context, root fs.FS) (*Catalog, error) {
	var (
		mu    sync.Mutex
		metas []Meta
		typed declcfg.DeclarativeConfig
	)
	err := walkMetas(ctx, root, func(path string, m *declcfg.Meta, err error) error {
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
		// Decode the core schemas into typed objects for validation; the decoding runs in
		// parallel (walkMetas calls us from several goroutines), only the appends are serial.
		var add func()
		switch cm.Schema {
		case declcfg.SchemaPackage:
			var p declcfg.Package
			if err := json.Unmarshal(m.Blob, &p); err != nil {
				return &InvalidError{fmt.Errorf("file %q: %s: %w", path, describe(m), err)}
			}
			add = func() { typed.Packages = append(typed.Packages, p) }
		case declcfg.SchemaChannel:
			var c declcfg.Channel
			if err := json.Unmarshal(m.Blob, &c); err != nil {
				return &InvalidError{fmt.Errorf("file %q: %s: %w", path, describe(m), err)}
			}
			add = func() { typed.Channels = append(typed.Channels, c) }
		case declcfg.SchemaBundle:
			var b declcfg.Bundle
			if err := json.Unmarshal(m.Blob, &b); err != nil {
				return &InvalidError{fmt.Errorf("file %q: %s: %w", path, describe(m), err)}
			}
			add = func() { typed.Bundles = append(typed.Bundles, b) }
		case declcfg.SchemaDeprecation:
			var d declcfg.Deprecation
			if err := json.Unmarshal(m.Blob, &d); err != nil {
				return &InvalidError{fmt.Errorf("file %q: %s: %w", path, describe(m), err)}
			}
			add = func() { typed.Deprecations = append(typed.Deprecations, d) }
		}
		mu.Lock()
		metas = append(metas, cm)
		if add != nil {
			add()
		}
		mu.Unlock()
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var ie *InvalidError
		if errors.As(err, &ie) {
			return nil, err
		}
		return nil, &InvalidError{err}
	}
	if len(metas) == 0 {
		return nil, &InvalidError{errors.New("no FBC blobs found: the content holds no .json or .yaml file with a \"schema\" field (check the source's path or the image's /configs directory)")}
	}
	cat := newCatalog(metas)
	if err := validate(ctx, typed, packageKeys(cat.Metas)); err != nil {
		return nil, err
	}
	return cat, nil
}

// validate converts the catalog into operator-registry's model and validates it, one package at a
// time on every CPU: packages are independent in the model, and conversion and validation (which
// parse every bundle property) cost as much as reading the files.
//
// A package whose canonical blobs were validated before (same key in keys) is not validated again.
func validate(ctx context.Context, cfg declcfg.DeclarativeConfig, keys map[string]string) error {
	byPkg := map[string]*declcfg.DeclarativeConfig{}
	get := func(name string) *declcfg.DeclarativeConfig {
		c, ok := byPkg[name]
		if !ok {
			c = &declcfg.DeclarativeConfig{}
			byPkg[name] = c
		}
		return c
	}
	for _, p := range cfg.Packages {
		get(p.Name).Packages = append(get(p.Name).Packages, p)
	}
	for _, c := range cfg.Channels {
		get(c.Package).Channels = append(get(c.Package).Channels, c)
	}
	for _, b := range cfg.Bundles {
		get(b.Package).Bundles = append(get(b.Package).Bundles, b)
	}
	for _, d := range cfg.Deprecations {
		get(d.Package).Deprecations = append(get(d.Package).Deprecations, d)
	}
	names := slices.DeleteFunc(slices.Sorted(maps.Keys(byPkg)), func(name string) bool {
		return validPackages.has(keys[name])
	})
	errs := make([]error, len(names))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, name := range names {
		g.Go(func() error {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			pkg := *byPkg[name]
			pkg.Bundles = slices.Clone(pkg.Bundles)
			var err error
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
				validPackages.add(keys[name])
			}
			errs[i] = err
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	// Report the first invalid package in name order, so the message does not depend on timing.
	for _, err := range errs {
		if err != nil {
			return &InvalidError{err}
		}
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

// newCatalog sorts metas canonically and computes the hash, counts and size.
func newCatalog(metas []Meta) *Catalog {
	slices.SortFunc(metas, compareMeta)
	c := &Catalog{Metas: metas}
	h := sha256.New()
	for _, m := range metas {
		h.Write(m.Blob)
		h.Write(newline)
		c.Size += int64(len(m.Blob)) + 1
		switch m.Schema {
		case declcfg.SchemaPackage:
			c.Counts.Packages++
		case declcfg.SchemaChannel:
			c.Counts.Channels++
		case declcfg.SchemaBundle:
			c.Counts.Bundles++
		}
	}
	c.Hash = "sha256:" + hex.EncodeToString(h.Sum(nil))
	return c
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

// WriteTo writes the canonical stream: one blob per line, in canonical order. Its sha256 is c.Hash.
func (c *Catalog) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for _, m := range c.Metas {
		k, err := w.Write(m.Blob)
		n += int64(k)
		if err != nil {
			return n, err
		}
		k, err = w.Write(newline)
		n += int64(k)
		if err != nil {
			return n, err
		}
	}
	return n, nil
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

func truncate(b []byte) string {
	const max = 120
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}
