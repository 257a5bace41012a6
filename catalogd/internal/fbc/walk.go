package fbc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

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
// large file per package, and a file-at-a-time walk leaves CPUs idle on the largest one.
//
// fn's error names the file; parse errors also name the line.
func walkMetas(ctx context.Context, root fs.FS, fn func(path string, m *declcfg.Meta, err error) error) error {
	matcher, err := ignore.NewMatcher(root, ".indexignore")
	if err != nil {
		return err
	}
	workers := runtime.GOMAXPROCS(0)
	docs := make(chan document, 4*workers)
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(docs)
		return fs.WalkDir(root, ".", func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return fn(path, nil, err)
			}
			if d.IsDir() || d.Name() == ".indexignore" || matcher.Match(path, false) {
				return nil
			}
			data, err := fs.ReadFile(root, path)
			if err != nil {
				return fn(path, nil, err)
			}
			return splitDocuments(path, data, func(doc document) error {
				select {
				case docs <- doc:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
		})
	})
	for range workers {
		g.Go(func() error {
			for doc := range docs {
				if err := doc.metas(fn); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// document is one YAML document, or a whole JSON file (a stream of values).
type document struct {
	path string
	line int // 1-based line of the file where the document starts
	data []byte
	json bool
}

// jsonSniffLen is how far the Kubernetes YAML-or-JSON decoder looks for a JSON stream's opening
// brace (declcfg creates it with a 4096-byte buffer).
const jsonSniffLen = 4096

// splitDocuments cuts a file into documents as the Kubernetes YAML-or-JSON decoder that declcfg uses
// does: a file whose first non-space character within its first 4096 bytes is '{' is one JSON
// document (which falls back to YAML, see metas); another file is YAML, cut at "---" lines.
func splitDocuments(path string, data []byte, send func(document) error) error {
	if trimmed := bytes.TrimLeftFunc(data[:min(len(data), jsonSniffLen)], unicode.IsSpace); len(trimmed) > 0 && trimmed[0] == '{' {
		return send(document{path: path, line: 1, data: data, json: true})
	}
	return splitYAMLDocuments(path, data, 1, send)
}

// splitYAMLDocuments cuts YAML at separator lines: "---" followed by nothing but spaces or a comment.
// Every document ends with a newline, as the Kubernetes line reader writes them (it matters to a
// block scalar on the last line). firstLine is the line of the file where data starts.
func splitYAMLDocuments(path string, data []byte, firstLine int, send func(document) error) error {
	start, startLine, line := 0, firstLine, firstLine
	flush := func(end int) error {
		doc := data[start:end]
		if isBlankYAML(doc) {
			return nil
		}
		if doc[len(doc)-1] != '\n' {
			doc = append(doc[:len(doc):len(doc)], '\n')
		}
		return send(document{path: path, line: startLine, data: doc})
	}
	for i := 0; i < len(data); {
		j := bytes.IndexByte(data[i:], '\n')
		next := len(data)
		if j >= 0 {
			next = i + j + 1
		}
		l := data[i:next]
		// A separator ends a document only once it has a line: the Kubernetes reader keeps a
		// separator that starts a document as the document's first line (which matters for "---#x",
		// YAML content rather than a document marker).
		if rest := bytes.TrimSpace(l[min(3, len(l)):]); i > start && bytes.HasPrefix(l, []byte("---")) && (len(rest) == 0 || rest[0] == '#') {
			if err := flush(i); err != nil {
				return err
			}
			start, startLine = next, line+1
		}
		i = next
		line++
	}
	return flush(len(data))
}

// isBlankYAML reports whether a document holds only blank lines and comments.
func isBlankYAML(b []byte) bool {
	s := bufio.NewScanner(bytes.NewReader(b))
	s.Buffer(nil, len(b)+1)
	for s.Scan() {
		l := bytes.TrimSpace(s.Bytes())
		if len(l) > 0 && l[0] != '#' {
			return false
		}
	}
	return true
}

// metas parses the document and calls fn for each blob in it.
func (d document) metas(fn func(path string, m *declcfg.Meta, err error) error) error {
	if d.json {
		dec := json.NewDecoder(bytes.NewReader(d.data))
		var decoded int
		var consumed int64
		for {
			var v any
			err := dec.Decode(&v)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				jsonErr := fmt.Errorf("%s: %w", jsonPosition(d.data, dec, err), err)
				if decoded > 1 {
					return fn(d.path, nil, jsonErr)
				}
				// Not a JSON stream after all: like the Kubernetes decoder, read the rest as YAML.
				rest, ok := skipSpaceLine(d.data[consumed:])
				if !ok {
					return fn(d.path, nil, jsonErr)
				}
				line := 1 + bytes.Count(d.data[:len(d.data)-len(rest)], []byte{'\n'})
				return splitYAMLDocuments(d.path, rest, line, func(doc document) error { return doc.metas(fn) })
			}
			decoded, consumed = decoded+1, dec.InputOffset()
			if err := d.emit(v, fn); err != nil {
				return err
			}
		}
	}
	if err := checkAliases(d.data); err != nil {
		return fn(d.path, nil, fmt.Errorf("YAML document starting at line %d: %w", d.line, err))
	}
	var v any
	if err := yaml.Unmarshal(d.data, &v); err != nil {
		return fn(d.path, nil, fmt.Errorf("YAML document starting at line %d: %w", d.line, fromGoYAMLError(err)))
	}
	if v == nil {
		return nil
	}
	budget := expansionLimit(len(d.data))
	v, err := jsonable(v, &budget)
	if errors.Is(err, errBudget) {
		err = expandsTooMuch(len(d.data))
	}
	if err != nil {
		return fn(d.path, nil, fmt.Errorf("YAML document starting at line %d: %w", d.line, err))
	}
	return d.emit(v, fn)
}

// skipSpaceLine drops leading white space up to and including the first newline, as the Kubernetes
// decoder does before it falls back from JSON to YAML; ok is false where it gives up (invalid UTF-8,
// nothing left).
func skipSpaceLine(b []byte) (rest []byte, ok bool) {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError || !unicode.IsSpace(r) {
			return b, r != utf8.RuneError
		}
		b = b[n:]
		if r == '\n' {
			return b, true
		}
	}
	return nil, false
}

// where names the document in messages.
func (d document) where() string {
	if d.json {
		return "JSON"
	}
	return fmt.Sprintf("YAML document starting at line %d", d.line)
}

// jsonPosition names the line of a JSON decoding error: the syntax error's offset, or the first
// non-blank byte after the decoder's position (where the failing value starts).
func jsonPosition(data []byte, dec *json.Decoder, err error) string {
	offset := dec.InputOffset()
	var se *json.SyntaxError
	if errors.As(err, &se) {
		offset = se.Offset
	} else {
		for offset < int64(len(data)) && strings.IndexByte(" \t\r\n", data[offset]) >= 0 {
			offset++
		}
	}
	offset = min(max(offset, 0), int64(len(data)))
	return "JSON at line " + strconv.Itoa(bytes.Count(data[:offset], []byte{'\n'})+1)
}

var folder = cases.Fold()

// emit encodes one decoded blob canonically and hands it to fn with its schema, package and name.
func (d document) emit(v any, fn func(path string, m *declcfg.Meta, err error) error) error {
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
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(obj); err != nil {
		return fn(d.path, nil, fmt.Errorf("%s: %w", d.where(), err))
	}
	m.Blob = buf.Bytes()
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
