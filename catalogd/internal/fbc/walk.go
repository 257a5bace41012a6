package fbc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/joelanford/ignore"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"go.yaml.in/yaml/v2"
	"golang.org/x/sync/errgroup"
	"golang.org/x/text/cases"
)

// walkMetas calls fn for every blob of every catalog file under root, from several goroutines.
//
// It reads the same files as declcfg.WalkMetasFS (every file but .indexignore files and what they
// ignore) and produces the same blobs (schema, package and name found case-insensitively; the blob
// as compact JSON with sorted keys), but it parses each YAML document once, straight into the
// canonical JSON, where declcfg converts YAML to JSON, decodes that JSON into a map and encodes it
// again. It also spreads the documents of one file over all CPUs: real catalogs are often one
// large file per package, and a file-at-a-time walk leaves CPUs idle on the largest one. Files are
// read as streams (see split.go): memory is bounded by the largest document or JSON value, not by
// the largest file.
//
// fn's error names the file; parse errors also name the line. When fn returns an error for
// several documents, walkMetas returns the one of the first document in walk order (files in
// lexical order, documents in file order), as a walk that reads one document at a time would: the
// documents after a failed one are skipped, those before it still parsed.
func walkMetas(ctx context.Context, root fs.FS, fn walkFunc) error {
	matcher, err := ignore.NewMatcher(root, ".indexignore")
	if err != nil {
		return err
	}
	workers := runtime.GOMAXPROCS(0)
	docs := make(chan document, workers)
	var first firstError
	var g errgroup.Group
	g.Go(func() error {
		defer close(docs)
		var seq int64 // of the next document
		send := func(doc document) error {
			if first.before(seq) {
				return errStopWalk
			}
			doc.seq, seq = seq, seq+1
			select {
			case docs <- doc:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		err := fs.WalkDir(root, ".", func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return fn(path, nil, err)
			}
			if d.IsDir() || d.Name() == ".indexignore" || matcher.Match(path, false) {
				return nil
			}
			return splitFile(root, path, fn, send)
		})
		if err != nil && !errors.Is(err, errStopWalk) {
			first.set(seq, err)
		}
		return nil
	})
	for range workers {
		g.Go(func() error {
			var out []byte // the worker's buffer for canonical blobs
			for doc := range docs {
				if ctx.Err() != nil || first.before(doc.seq) {
					continue
				}
				if err := doc.metas(root, &out, fn); err != nil {
					first.set(doc.seq, err)
				}
			}
			return nil
		})
	}
	_ = g.Wait()
	if first.err == nil {
		return ctx.Err()
	}
	return first.err
}

// errStopWalk stops the walk's reader once a document before the next one failed.
var errStopWalk = errors.New("an earlier document failed")

// firstError keeps the error of the first failed document in walk order.
type firstError struct {
	mu  sync.Mutex
	err error
	seq atomic.Int64 // of the failed document, plus one (0: none)
}

func (f *firstError) set(seq int64, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil || seq < f.seq.Load()-1 {
		f.err = err
		f.seq.Store(seq + 1)
	}
}

// before reports whether a document before document seq failed (so seq's outcome cannot matter).
func (f *firstError) before(seq int64) bool {
	n := f.seq.Load()
	return n > 0 && n-1 < seq
}

// document is one YAML document or one value of a JSON stream.
type document struct {
	seq  int64 // in walk order
	path string
	line int // YAML: 1-based line of the file where the document starts
	data []byte
	json bool
	// JSON: the offset in the file just after the value (where an error decoding it is reported),
	// and the value if the walk decoded it already (decoded).
	end     int64
	value   any
	decoded bool
}

// metas parses the document and calls fn for each blob in it, encoded into *out (root is the
// file's root: an error in a JSON value is reported with its line, which takes reading the file
// again). It drops the document's text once parsed, so that a large document is not held twice
// while it is encoded.
func (d *document) metas(root fs.FS, out *[]byte, fn walkFunc) error {
	size := len(d.data)
	if d.json {
		v := d.value
		if !d.decoded {
			if err := json.Unmarshal(d.data, &v); err != nil {
				return fn(d.path, nil, jsonError(root, d.path, d.end, err))
			}
		}
		d.data, d.value = nil, nil
		return d.emit(v, out, fn)
	}
	if err := checkAliases(d.data); err != nil {
		return fn(d.path, nil, fmt.Errorf("YAML document starting at line %d: %w", d.line, err))
	}
	var v any
	err := yaml.Unmarshal(d.data, &v)
	d.data = nil
	if err != nil {
		return fn(d.path, nil, fmt.Errorf("YAML document starting at line %d: %w", d.line, fromGoYAMLError(err)))
	}
	if v == nil {
		return nil
	}
	budget := expansionLimit(size)
	v, err = jsonable(v, &budget)
	if errors.Is(err, errBudget) {
		err = expandsTooMuch(size)
	}
	if err != nil {
		return fn(d.path, nil, fmt.Errorf("YAML document starting at line %d: %w", d.line, err))
	}
	return d.emit(v, out, fn)
}

// where names the document in messages.
func (d *document) where() string {
	if d.json {
		return "JSON"
	}
	return fmt.Sprintf("YAML document starting at line %d", d.line)
}

var folder = cases.Fold()

// emit encodes one decoded blob canonically into *out (the worker's buffer, kept for its next
// blob) and hands it to fn with its schema, package and name.
func (d *document) emit(v any, out *[]byte, fn walkFunc) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return fn(d.path, nil, fmt.Errorf("%s: a blob must be an object, not %T", d.where(), v))
	}
	m := &declcfg.Meta{}
	seen := make(map[string]string, len(obj))
	for key, val := range obj {
		fk := folder.String(key)
		if other, dup := seen[fk]; dup {
			return fn(d.path, nil, fmt.Errorf("%s: duplicate keys %q and %q (keys are compared case-insensitively)", d.where(), other, key))
		}
		seen[fk] = key
		var dst *string
		switch fk {
		case "schema":
			dst = &m.Schema
		case "package":
			dst = &m.Package
		case "name":
			dst = &m.Name
		default:
			continue
		}
		s, ok := val.(string)
		if !ok {
			return fn(d.path, nil, fmt.Errorf("%s: %q must be a string, got %v", d.where(), key, val))
		}
		*dst = s
	}
	blob, ok := appendJSON((*out)[:0], obj)
	*out = blob
	if !ok {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(obj); err != nil {
			return fn(d.path, nil, fmt.Errorf("%s: %w", d.where(), err))
		}
		blob = buf.Bytes()
	}
	m.Blob = blob
	return fn(d.path, m, nil)
}

// errBudget says that jsonable's output would exceed its budget.
var errBudget = errors.New("over budget")

// jsonable turns what yaml.v2 decodes into what encoding/json decodes from the equivalent JSON:
// maps with string keys (YAML allows other scalars as keys; they are written as strings, as
// sigs.k8s.io/yaml does) and every number a float64.
//
// It takes from *budget an estimate of the JSON it stands for (at least the bytes of strings and
// keys, their quotes and the separators) and returns errBudget once the budget is spent: go-yaml
// expands aliases into copies, and this bounds what they cost after it (see checkAliases).
func jsonable(v any, budget *int64) (any, error) {
	switch t := v.(type) {
	case map[any]any:
		*budget -= 2
		m := make(map[string]any, len(t))
		for k, val := range t {
			var key string
			switch tk := k.(type) {
			case string:
				key = tk
			case int:
				key = strconv.Itoa(tk)
			case int64:
				key = strconv.FormatInt(tk, 10)
			case uint64:
				key = strconv.FormatUint(tk, 10)
			case float64:
				key = yamlFloatKey(tk)
			case bool:
				key = strconv.FormatBool(tk)
			default:
				return nil, fmt.Errorf("unsupported map key %v of type %T", k, k)
			}
			if *budget -= int64(len(key)) + 4; *budget < 0 {
				return nil, errBudget
			}
			c, err := jsonable(val, budget)
			if err != nil {
				return nil, err
			}
			m[key] = c
		}
		return m, nil
	case []any:
		if *budget -= 2 + int64(len(t)); *budget < 0 {
			return nil, errBudget
		}
		out := make([]any, len(t))
		for i, e := range t {
			c, err := jsonable(e, budget)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case string:
		if *budget -= int64(len(t)) + 2; *budget < 0 {
			return nil, errBudget
		}
		return v, nil
	}
	if *budget -= 4; *budget < 0 {
		return nil, errBudget
	}
	switch t := v.(type) {
	case int:
		return float64(t), nil
	case int64:
		return float64(t), nil
	case uint64:
		return float64(t), nil
	default:
		return v, nil
	}
}

func yamlFloatKey(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 32)
	switch s {
	case "+Inf":
		return ".inf"
	case "-Inf":
		return "-.inf"
	case "NaN":
		return ".nan"
	}
	return s
}
