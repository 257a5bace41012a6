// Package manifest reads Kubernetes manifests out of bundle content: multi-document YAML and JSON
// files decoded into unstructured objects, with errors that name the file and the document.
package manifest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Object is one decoded manifest and where it came from.
type Object struct {
	// File is the path of the file inside the bundle, e.g. "manifests/crd.yaml".
	File string
	// Index is the 0-based position of the document in File (documents with nothing between two
	// separators are not counted).
	Index int
	// Obj is the decoded object.
	Obj *unstructured.Unstructured
}

// Source says where an object came from, for error messages: `manifests/crd.yaml (document 2)`.
func (o Object) Source() string { return fmt.Sprintf("%s (document %d)", o.File, o.Index+1) }

// IsManifestFile reports whether name has a YAML or JSON extension.
func IsManifestFile(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// ReadDir decodes every YAML/JSON file under dir (recursively, in lexical order). Files with other
// extensions are an error naming the file. A missing dir is an error.
func ReadDir(content fs.FS, dir string) ([]Object, error) {
	var files []string
	err := fs.WalkDir(content, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			return nil
		}
		if !IsManifestFile(d.Name()) {
			return fmt.Errorf("%s: not a manifest (only .yaml, .yml and .json files may be in %s/)", p, dir)
		}
		files = append(files, p)
		return nil
	})
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("bundle has no %s/ directory: put the manifests under %s/ at the bundle root", dir, dir)
		}
		return nil, err
	}
	sort.Strings(files)
	var out []Object
	for _, f := range files {
		data, err := fs.ReadFile(content, f)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", f, err)
		}
		objs, err := Decode(f, data)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// Decode splits data (YAML with `---` separators, or JSON) into objects. Empty documents are skipped;
// a document without apiVersion, kind or metadata.name is an error naming file and document. A YAML
// document whose aliases expand it too much is refused before it is expanded (see CheckAliases).
func Decode(file string, data []byte) ([]Object, error) {
	dec := newDecoder(data)
	var out []Object
	for i := 0; ; i++ {
		var m map[string]any
		if err := dec.decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			if errors.Is(err, ErrAliasExpansion) {
				return nil, fmt.Errorf("%s (document %d): %w", file, i+1, err)
			}
			return nil, fmt.Errorf("%s (document %d): invalid YAML/JSON: %w", file, i+1, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		o := Object{File: file, Index: i, Obj: u}
		switch {
		case u.IsList():
			return nil, fmt.Errorf("%s: %s is a list; put its items as separate documents", o.Source(), u.GetKind())
		case u.GetAPIVersion() == "":
			return nil, fmt.Errorf("%s: apiVersion is missing", o.Source())
		case u.GetKind() == "":
			return nil, fmt.Errorf("%s: kind is missing", o.Source())
		case u.GetName() == "":
			return nil, fmt.Errorf("%s: %s has no metadata.name", o.Source(), u.GetKind())
		}
		out = append(out, o)
	}
}

// decoder reads the documents of a manifest file as k8s.io/apimachinery's YAMLOrJSONDecoder does
// (a file whose first non-space byte within 4096 bytes is '{' is a JSON stream, which falls back to
// YAML after at most one value; another file is YAML documents cut at "---" lines), but checks every
// YAML document with CheckAliases before sigs.k8s.io/yaml expands it.
type decoder struct {
	data  []byte
	json  *json.Decoder // nil once reading YAML
	count int           // JSON values decoded
	yaml  *utilyaml.YAMLReader
}

// jsonSniffLen is how far the Kubernetes decoder looks for a JSON stream's opening brace.
const jsonSniffLen = 4096

func newDecoder(data []byte) *decoder {
	d := &decoder{data: data}
	if utilyaml.IsJSONBuffer(data[:min(len(data), jsonSniffLen)]) {
		d.json = json.NewDecoder(bytes.NewReader(data))
	} else {
		d.yaml = utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	}
	return d
}

// decode decodes the next document into m; io.EOF at the end.
func (d *decoder) decode(m *map[string]any) error {
	var jsonErr error
	if d.json != nil {
		offset := d.json.InputOffset()
		err := d.json.Decode(m)
		if err == nil {
			d.count++
			return nil
		}
		if errors.Is(err, io.EOF) {
			return err
		}
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			jsonErr = utilyaml.JSONSyntaxError{Offset: syntax.Offset, Err: syntax}
		} else {
			jsonErr = err
		}
		if d.count > 1 {
			return err
		}
		// Not a JSON stream after all: read the rest as YAML, after the white space that ends the
		// last JSON value (up to and including the first newline).
		d.json = nil
		rest, ok := skipSpaceLine(d.data[offset:])
		if !ok {
			return jsonErr
		}
		d.yaml = utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(rest)))
	}
	doc, err := d.yaml.Read()
	if err != nil && !errors.Is(err, io.EOF) {
		return cmpErr(jsonErr, err)
	}
	if len(doc) != 0 {
		if aerr := CheckAliases(doc); aerr != nil {
			if errors.Is(aerr, ErrAliasExpansion) {
				return aerr
			}
			return cmpErr(jsonErr, aerr)
		}
		if uerr := yaml.Unmarshal(doc, m); uerr != nil {
			return cmpErr(jsonErr, uerr)
		}
	}
	return err
}

// cmpErr is the error the Kubernetes decoder reports when YAML fails after JSON did: the JSON one.
func cmpErr(jsonErr, yamlErr error) error {
	if jsonErr != nil {
		return jsonErr
	}
	return yamlErr
}

// skipSpaceLine drops leading white space up to and including the first newline, as the Kubernetes
// decoder does before it falls back from JSON to YAML; ok is false where it gives up: on invalid
// UTF-8, and within the last 3 bytes (it reads 4 bytes at a time and stops at a short read).
func skipSpaceLine(b []byte) (rest []byte, ok bool) {
	for len(b) >= 4 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError {
			return b, false
		}
		if !unicode.IsSpace(r) {
			return b, true
		}
		b = b[n:]
		if r == '\n' {
			return b, true
		}
	}
	return nil, false
}
