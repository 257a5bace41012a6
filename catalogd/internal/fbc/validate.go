package fbc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
	"golang.org/x/sync/errgroup"
)

// validate converts the catalog into operator-registry's model and validates it, one package at a
// time on every CPU: packages are independent in the model, and conversion and validation (which
// parse every bundle property) cost as much as reading the files.
//
// A package is read from the spill file one blob at a time, into one buffer per CPU, and each bundle
// is slimmed as soon as it is decoded (see parseHeavyProperties): what a package keeps in memory
// while it is validated is its typed form without the manifests its bundles carry, which are most
// of a real catalog's bytes. A package whose canonical blobs were validated before (same key, see
// validcache.go) is not decoded nor validated again.
//
// A blob that cannot be decoded into its schema's type is reported before any invalid package,
// naming its file, as the walk would; then the first invalid package in name order, so the message
// does not depend on timing.
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
	var next atomic.Int64 // the next package to validate, in name order
	for range min(runtime.GOMAXPROCS(0), len(names)) {
		g.Go(func() error {
			v := packageValidator{sp: sp, files: files}
			for {
				i := int(next.Add(1) - 1)
				if i >= len(names) {
					return nil
				}
				if ctx.Err() != nil {
					return ctx.Err()
				}
				var err error
				if decodeErrs[i], errs[i], err = v.validate(names[i], byPkg[names[i]]); err != nil {
					return err
				}
			}
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

// packageValidator validates packages one after the other, reading their blobs into one buffer.
type packageValidator struct {
	sp    *spill
	files []string
	buf   []byte
}

// validate validates the package name whose blobs are the spill entries idx (in canonical order).
// decodeErr is a blob that does not decode into its schema's type, invalid the package's
// validation error; err is an error reading the spill file.
func (v *packageValidator) validate(name string, idx []int) (decodeErr, invalid, err error) {
	// First the key: the blobs are read once more to decode them only when the package was not
	// validated before, which is the common case of a catalog's update.
	key := packageKey(name, func(yield func(schema string, blob []byte) bool) {
		for _, i := range idx {
			if err = v.read(i); err != nil || !yield(v.sp.entries[i].Schema, v.buf) {
				return
			}
		}
	})
	if err != nil {
		return nil, nil, err
	}
	if validPackages.has(key) {
		return nil, nil, nil
	}
	var pkg declcfg.DeclarativeConfig
	for _, i := range idx {
		if err := v.read(i); err != nil {
			return nil, nil, err
		}
		e := v.sp.entries[i]
		if err := decodeInto(&pkg, e, v.buf); err != nil {
			return &InvalidError{fmt.Errorf("file %q: %s: %w", v.files[e.file], describeEntry(e), err)}, nil, nil
		}
		if e.Schema != declcfg.SchemaBundle {
			continue
		}
		// Decoding goes on after an invalid property, since a blob that does not decode is
		// reported first; the bundles after it are not parsed, only slimmed.
		b := &pkg.Bundles[len(pkg.Bundles)-1]
		if invalid == nil {
			*b, invalid = parseHeavyProperties(*b)
		}
		if invalid != nil {
			*b = withoutHeavyProperties(*b)
		}
	}
	if invalid != nil {
		return nil, invalid, nil
	}
	m, invalid := declcfg.ConvertToModel(pkg)
	if invalid == nil {
		invalid = m.Validate()
	}
	if invalid == nil {
		validPackages.add(key)
	}
	return nil, invalid, nil
}

// read reads the blob of spill entry i into v.buf.
func (v *packageValidator) read(i int) error {
	e := v.sp.entries[i]
	if int64(cap(v.buf)) < e.len {
		v.buf = make([]byte, e.len)
	}
	v.buf = v.buf[:e.len]
	if _, err := v.sp.f.ReadAt(v.buf, e.off); err != nil {
		return fmt.Errorf("%w: %w", errSpill, err)
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

// decodeInto decodes a core-schema blob into its typed form and adds it to cfg. Nothing of blob is
// kept (json.RawMessage values are copies), so the caller may reuse it.
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

// parseHeavyProperties parses b's heavy properties once, as property.Parse would, and returns b
// with the empty object as the value of each (see withoutHeavyProperties).
func parseHeavyProperties(b declcfg.Bundle) (declcfg.Bundle, error) {
	for i, p := range b.Properties {
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
	}
	return withoutHeavyProperties(b), nil
}

// withoutHeavyProperties returns b whose heavy property values are the empty object, which parses
// and encodes for nothing and which nothing in the model's validation looks into. b's properties
// are replaced, not changed.
func withoutHeavyProperties(b declcfg.Bundle) declcfg.Bundle {
	if !slices.ContainsFunc(b.Properties, func(p property.Property) bool { return heavyProperties[p.Type] }) {
		return b
	}
	props := slices.Clone(b.Properties)
	for i, p := range props {
		if heavyProperties[p.Type] {
			props[i].Value = emptyObject
		}
	}
	b.Properties = props
	return b
}

var emptyObject = json.RawMessage(`{}`)
