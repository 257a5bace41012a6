package bundlegen

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/olmv1/olmv1/platform/yamlalias"
)

// Object is one manifest of the input, with where it came from (for messages).
type Object struct {
	Source string
	Obj    *unstructured.Unstructured
}

func (o Object) gk() schema.GroupKind { return o.Obj.GroupVersionKind().GroupKind() }

// describe is kind/name (namespace/name when namespaced), as errors and warnings name objects.
func (o Object) describe() string {
	name := o.Obj.GetName()
	if ns := o.Obj.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	return fmt.Sprintf("%s/%s (%s)", o.Obj.GetKind(), name, o.Source)
}

// kustomizationFiles are the names kustomize reads a kustomization from.
var kustomizationFiles = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// Load reads the manifests of dir: the output of its kustomization (built in-process, offline) when
// dir holds one, else every .yaml, .yml and .json file under dir (hidden files and directories and
// nested kustomization files skipped), in path order and document order within a file.
func Load(dir string) ([]Object, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory: generate reads a directory of manifests or a kustomize overlay", dir)
	}
	if kustomizationIn(dir) != "" {
		return buildKustomization(dir)
	}
	var files []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && p != dir {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		ext := strings.ToLower(filepath.Ext(p))
		if !d.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") && !contains(kustomizationFiles, d.Name()) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []Object
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		rel, _ := filepath.Rel(dir, f)
		objs, err := decode(filepath.ToSlash(rel), data)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no manifests (.yaml, .yml or .json files, or a kustomization.yaml)", dir)
	}
	return out, nil
}

func kustomizationIn(dir string) string {
	for _, n := range kustomizationFiles {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			return filepath.Join(dir, n)
		}
	}
	return ""
}

// decode splits a YAML or JSON stream into objects; a List's items become objects of their own.
func decode(source string, data []byte) ([]Object, error) {
	if err := yamlalias.CheckFile(data); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []Object
	for i := 0; ; i++ {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d is not valid YAML: %w", source, i+1, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetAPIVersion() == "" || u.GetKind() == "" {
			return nil, fmt.Errorf("%s: document %d has no apiVersion or kind; every file must hold Kubernetes manifests", source, i+1)
		}
		if u.IsList() {
			l, err := u.ToList()
			if err != nil {
				return nil, fmt.Errorf("%s: document %d: %w", source, i+1, err)
			}
			for j := range l.Items {
				out = append(out, Object{Source: source, Obj: &l.Items[j]})
			}
			continue
		}
		if u.GetName() == "" {
			return nil, fmt.Errorf("%s: %s in document %d has no metadata.name", source, u.GetKind(), i+1)
		}
		out = append(out, Object{Source: source, Obj: u})
	}
}
