package registryv1

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"sigs.k8s.io/yaml"

	"github.com/olmv1/olmv1/platform/sharedtestdata"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/certs"
)

// fuzzBase is an in-repo bundle whose ClusterServiceVersion the fuzzer replaces.
type fuzzBase struct {
	files   map[string][]byte // every file but the CSV
	csvPath string
	csv     []byte
}

func loadFuzzBase(tb testing.TB, dir, csvPath string) fuzzBase {
	tb.Helper()
	b := fuzzBase{files: map[string][]byte{}, csvPath: csvPath}
	err := fs.WalkDir(os.DirFS(dir), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(filepath.Join(dir, p))
		if p == csvPath {
			b.csv = data
		} else {
			b.files[p] = data
		}
		return err
	})
	if err != nil || b.csv == nil {
		tb.Fatalf("loading %s: %v (CSV found: %v)", dir, err, b.csv != nil)
	}
	return b
}

// fuzzOwnedCRDs makes a minimal CRD for every CRD the CSV owns that the base lacks, so that CSVs
// of other bundles (the real ones) get past the owned-CRD check into rendering.
func fuzzOwnedCRDs(csv []byte, have map[string][]byte) map[string][]byte {
	var c struct {
		Spec struct {
			CRDs struct {
				Owned []struct{ Name, Kind, Version string } `json:"owned"`
			} `json:"customresourcedefinitions"`
		} `json:"spec"`
	}
	if yaml.Unmarshal(csv, &c) != nil {
		return nil
	}
	out := map[string][]byte{}
	made := map[string]bool{}
	for i, o := range c.Spec.CRDs.Owned {
		if made[o.Name] { // a CSV lists a CRD once per version it owns
			continue
		}
		made[o.Name] = true
		plural, group, _ := strings.Cut(o.Name, ".")
		version := o.Version
		if version == "" {
			version = "v1"
		}
		crd, _ := json.Marshal(map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": o.Name},
			"spec": map[string]any{
				"group": group, "scope": "Namespaced",
				"names":    map[string]any{"plural": plural, "kind": o.Kind},
				"versions": []any{map[string]any{"name": version, "served": true, "storage": true}},
			},
		})
		if _, ok := have["manifests/"+o.Name+".crd.yaml"]; !ok { // the fixtures' CRD files are named so
			out[fmt.Sprintf("manifests/fuzz-owned-%d.crd.json", i)] = crd
		}
	}
	return out
}

// FuzzRenderCSV renders a registry+v1 bundle whose ClusterServiceVersion is arbitrary bytes (the
// rest of the bundle is testdata/widgets or testdata/sprockets, plus a minimal CRD for every CRD the
// CSV owns), with an arbitrary spec.config.watchNamespaces and each certificate provider. The
// renderer must return objects or an InvalidBundleError, never panic; every object it returns has
// apiVersion, kind and name, and no object is rendered twice.
func FuzzRenderCSV(f *testing.F) {
	bases := []fuzzBase{
		loadFuzzBase(f, fixture, csvFile),
		loadFuzzBase(f, sprockets, sprocketCSV),
	}
	providers := []certs.Provider{nil, certs.NewCertManager(nil), certs.NewOpenShiftServiceCA(), certs.NewSelfSigned(testCA)}

	for i, b := range bases {
		f.Add(b.csv, uint8(i), "")
		f.Add(b.csv, uint8(i|1<<2), "other-ns")
		f.Add(b.csv, uint8(i|2<<2), "a,b")
		f.Add(b.csv, uint8(i|3<<2), ",")
	}
	f.Add([]byte("apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: empty\n"), uint8(0), "")
	f.Add([]byte("apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: x\nspec:\n  install:\n    strategy: deployment\n    spec:\n      deployments:\n      - name: d\n      - name: d\n"), uint8(1), "")
	f.Add([]byte("kind: ClusterServiceVersion\n"), uint8(0), "")
	f.Add([]byte("- not a map\n"), uint8(0), "")
	for _, csv := range fuzzRealCSVs(f) {
		f.Add(csv, uint8(1<<2), "")
		f.Add(csv, uint8(3<<2), "ns1,ns2")
	}

	f.Fuzz(func(t *testing.T, csv []byte, opts uint8, watchNamespaces string) {
		b := bases[int(opts&1)]
		content := fstest.MapFS{b.csvPath: &fstest.MapFile{Data: csv}}
		for p, data := range b.files {
			content[p] = &fstest.MapFile{Data: data}
		}
		for p, data := range fuzzOwnedCRDs(csv, b.files) {
			content[p] = &fstest.MapFile{Data: data}
		}
		var cfg *rukpakv1alpha1.BundleConfig
		if watchNamespaces != "" {
			cfg = &rukpakv1alpha1.BundleConfig{WatchNamespaces: strings.Split(watchNamespaces, ",")}
		}
		var options []Option
		if p := providers[int(opts>>2&3)]; p != nil {
			options = append(options, WithCertProvider(p))
		}

		objs, err := New(options...).Render(context.Background(), provisioner.Request{
			Content: content, Name: "bd", InstallNamespace: "fuzz-system", Config: cfg,
		})
		if err != nil {
			var ib *provisioner.InvalidBundleError
			if !errors.As(err, &ib) || ib.Reason == "" {
				t.Fatalf("Render failed with %T %v, want an InvalidBundleError with a reason", err, err)
			}
			if len(objs) != 0 {
				t.Fatalf("Render returned %d objects with its error", len(objs))
			}
			return
		}
		seen := map[string]bool{}
		for i, o := range objs {
			if o == nil {
				t.Fatalf("object %d is nil", i)
			}
			gvk := o.GetObjectKind().GroupVersionKind()
			if gvk.Version == "" || gvk.Kind == "" || o.GetName() == "" {
				t.Fatalf("object %d has apiVersion %q, kind %q, name %q: all three are needed to apply it", i, gvk.GroupVersion(), gvk.Kind, o.GetName())
			}
			key := gvk.GroupKind().String() + " " + path.Join(o.GetNamespace(), o.GetName())
			if seen[key] {
				t.Fatalf("%s is rendered twice", key)
			}
			seen[key] = true
		}
	})
}

// fuzzRealCSVs are the ClusterServiceVersions of the shared real bundles ($OLMV1_TESTDATA/bundles,
// by default ../shared/testdata/bundles next to the repository root); none when it is absent.
func fuzzRealCSVs(tb testing.TB) [][]byte {
	root, ok := sharedtestdata.Root()
	if !ok {
		return nil
	}
	files, _ := filepath.Glob(filepath.Join(root, "bundles", "*", "*", "manifests", "*clusterserviceversion.yaml"))
	if len(files) == 0 {
		tb.Logf("no real CSVs under %s: fuzzing on the built-in seeds only", root)
	}
	var out [][]byte
	seen := map[string]bool{}
	for _, p := range files {
		pkg := filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(p))))
		if seen[pkg] { // one version per package is enough
			continue
		}
		seen[pkg] = true
		// Mutating a large CSV mostly breaks its YAML, slowly: the largest (kubevirt, 164 KB) is left out.
		if data, err := os.ReadFile(p); err == nil && len(data) <= 80<<10 {
			out = append(out, data)
		}
	}
	return out
}
