// Package manifest reads Kubernetes manifests out of bundle content: multi-document YAML and JSON
// files decoded into unstructured objects, with errors that name the file and the document.
package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
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
// a document without apiVersion, kind or metadata.name is an error naming file and document.
func Decode(file string, data []byte) ([]Object, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []Object
	for i := 0; ; i++ {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
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
