package localcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/olmv1/olmv1/platform/sharedtestdata"
)

func TestReadBundleDirFixture(t *testing.T) {
	b, err := ReadBundleDir("../testdata/author/0.2.0", "author/0.2.0")
	if err != nil {
		t.Fatal(err)
	}
	if b.Package != "widget-operator" || b.CSVName != "widget-operator.v0.2.0" || b.Version != "0.2.0" || b.DefaultChannel != "stable" {
		t.Errorf("bundle: %+v", b)
	}
	if strings.Join(b.CRDs, ",") != "widgets.author.olmv1.io" {
		t.Errorf("CRDs %v", b.CRDs)
	}
	if !strings.Contains(b.ALMExamples, `"name": "blue"`) {
		t.Errorf("alm-examples %q", b.ALMExamples)
	}
	if len(b.InstallModes) != 3 || b.Supports("MultiNamespace") {
		t.Errorf("install modes %v", b.InstallModes)
	}
}

func TestReadBundleDirSkipsFilesThatAreNotManifests(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("../testdata/author/0.2.0")); err != nil {
		t.Fatal(err)
	}
	notes := "# Notes\n\nkind: of a README, not YAML: [\n"
	if err := os.WriteFile(filepath.Join(dir, "manifests", "NOTES.md"), []byte(notes), 0o644); err != nil {
		t.Fatal(err)
	}
	// A CRD as JSON has no "kind:" line: it is parsed, and its name still found.
	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"gadgets.author.olmv1.io"},"spec":{}}`
	if err := os.WriteFile(filepath.Join(dir, "manifests", "gadgets.json"), []byte(crd), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := ReadBundleDir(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(b.CRDs, ",") != "gadgets.author.olmv1.io,widgets.author.olmv1.io" {
		t.Errorf("CRDs %v", b.CRDs)
	}
	if len(b.Kinds) != 3 {
		t.Errorf("kinds %v: NOTES.md is not a manifest", b.Kinds)
	}
}

func TestReadBundleDirNamesTheMissingAnnotations(t *testing.T) {
	_, err := ReadBundleDir(t.TempDir(), "")
	if err == nil || !strings.Contains(err.Error(), "is not a registry+v1 bundle (metadata/annotations.yaml)") {
		t.Fatalf("got %v", err)
	}
}

func TestTopLevelName(t *testing.T) {
	for _, tc := range []struct {
		doc, want string
		ok        bool
	}{
		{"kind: CustomResourceDefinition\nmetadata:\n  name: a.example.io\nspec: {}\n", "a.example.io", true},
		{"metadata:\n  annotations:\n    name: not-this\n  labels: {name: nor-this}\n  name: \"b.example.io\" # the name\n", "b.example.io", true},
		{"metadata:\n\n    # comment\n    creationTimestamp: null\n    name: 'c.example.io'\n", "c.example.io", true},
		{"metadata: {name: flow.example.io}\n", "", false},
		{"metadata:\n  labels:\n    name: x\nspec:\n  name: y\n", "", false},
		{`{"metadata":{"name":"json.example.io"}}`, "", false},
	} {
		got, ok := topLevelName([]byte(tc.doc))
		if got != tc.want || ok != tc.ok {
			t.Errorf("topLevelName(%q) = %q, %v; want %q, %v", tc.doc, got, ok, tc.want, tc.ok)
		}
	}
}

// TestTopLevelNameAgreesWithYAMLOnTheCorpus checks the line scan against a YAML parse for every
// CRD file of the shared real bundles.
func TestTopLevelNameAgreesWithYAMLOnTheCorpus(t *testing.T) {
	root, ok := sharedtestdata.Root()
	files, _ := filepath.Glob(filepath.Join(root, "corpus", "*", "*", "manifests", "*"))
	if !ok || len(files) == 0 {
		t.Skipf("no shared test data under %q (set OLMV1_TESTDATA)", root)
	}
	crds := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if topLevelKind(data) != "CustomResourceDefinition" {
			continue
		}
		crds++
		want, err := crdName(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if got, ok := topLevelName(data); !ok || got != want {
			t.Errorf("%s: line scan %q (%v), YAML %q", f, got, ok, want)
		}
	}
	if crds == 0 {
		t.Fatal("no CRD in the corpus")
	}
	t.Logf("%d CRD files agree", crds)
}
