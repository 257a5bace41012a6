package bundlegen

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestLoad: a plain directory is read file by file in path order (hidden files and nested
// kustomization files skipped, Lists expanded); a kustomize overlay is built, with its ../base; a
// remote base is refused before anything is fetched.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "b.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n---\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Secret, metadata: {name: c}}\n")
	mustWrite(t, filepath.Join(dir, "a", "a.json"), `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}`)
	mustWrite(t, filepath.Join(dir, ".git", "x.yaml"), "not: a manifest\n")
	mustWrite(t, filepath.Join(dir, "sub", "kustomization.yaml"), "resources: []\n")
	mustWrite(t, filepath.Join(dir, "README.md"), "# docs\n")
	objs, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.Source+":"+o.Obj.GetName())
	}
	if want := "a/a.json:a b.yaml:b b.yaml:c"; strings.Join(got, " ") != want {
		t.Errorf("Load: got %q, want %q", strings.Join(got, " "), want)
	}

	objs, err = Load(filepath.Join("testdata", "kustomize", "overlay"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, o := range objs {
		names[o.Obj.GetKind()] = o.Obj.GetNamespace() + "/" + o.Obj.GetName()
	}
	if names["Deployment"] != "widget-system/widget-operator" || names["ClusterRoleBinding"] != "/widget-manager" {
		t.Errorf("overlay built into %v", names)
	}

	remote := t.TempDir()
	mustWrite(t, filepath.Join(remote, "kustomization.yaml"), "resources:\n- github.com/example/operator/config/default?ref=v1\n")
	if _, err := Load(remote); err == nil || !strings.Contains(err.Error(), "is not a local file or directory; generate builds offline") {
		t.Errorf("remote base: got %v", err)
	}
	bad := t.TempDir()
	mustWrite(t, filepath.Join(bad, "x.yaml"), "just: data\n")
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "x.yaml: document 1 has no apiVersion or kind") {
		t.Errorf("non-manifest: got %v", err)
	}
}
