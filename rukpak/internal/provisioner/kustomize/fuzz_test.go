package kustomize

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
)

// fuzzSentinel is the content of a file next to the bundle (outside of it): no build may read it.
const fuzzSentinel = "OUTSIDE-OF-THE-BUNDLE-SENTINEL"

// fuzzSlots are where the fuzzed kustomization is written in the bundle.
var fuzzSlots = []string{"kustomization.yaml", "overlays/fuzz/kustomization.yaml", "overlays/prod/kustomization.yaml", "hello/kustomization.yaml"}

// fuzzTree is testdata/demo (base, components, overlays) plus, when the shared real test data is
// present, its kustomize/helloWorld under hello/ and kustomize/podinfo under podinfo/, all below
// bundle/; next to it, outside/ holds a kustomization and a file with fuzzSentinel.
func fuzzTree(tb testing.TB) fstest.MapFS {
	tb.Helper()
	tree := fstest.MapFS{
		"outside/kustomization.yaml": {Data: []byte("resources:\n- cm.yaml\n")},
		"outside/cm.yaml":            {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: outside\ndata:\n  secret: " + fuzzSentinel + "\n")},
		"outside/secret.txt":         {Data: []byte(fuzzSentinel)},
	}
	add := func(dir, under string) {
		_ = fs.WalkDir(os.DirFS(dir), ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(filepath.Join(dir, p))
			if err == nil {
				tree[path.Join("bundle", under, p)] = &fstest.MapFile{Data: data}
			}
			return err
		})
	}
	add("testdata/demo", ".")
	if root := fuzzSharedRoot(); root != "" {
		add(filepath.Join(root, "kustomize", "helloWorld"), "hello")
		add(filepath.Join(root, "kustomize", "podinfo"), "podinfo")
	}
	if _, ok := tree["bundle/hello/kustomization.yaml"]; !ok {
		tb.Logf("shared kustomize test data absent: fuzzing on testdata/demo only")
	}
	return tree
}

// noNetwork makes every HTTP request of the process fail and puts git and helm programs that fail
// first on PATH; it returns a func that says whether any of them was used since it was last called.
func noNetwork(f *testing.F) func() string {
	var requests atomic.Int64
	orig := http.DefaultTransport
	http.DefaultTransport = roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Host != "" { // (net/http sends nothing for a URL without a host, e.g. "https:x")
			requests.Add(1)
		}
		return nil, fmt.Errorf("fuzz: no network access (%s)", r.URL)
	})
	f.Cleanup(func() { http.DefaultTransport = orig })

	bin := f.TempDir()
	marker := filepath.Join(bin, "used")
	for _, prog := range []string{"git", "helm", "kubectl"} {
		script := fmt.Sprintf("#!/bin/sh\necho \"%s $*\" >> '%s'\nexit 1\n", prog, marker)
		if err := os.WriteFile(filepath.Join(bin, prog), []byte(script), 0o755); err != nil {
			f.Fatal(err)
		}
	}
	f.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() string {
		used, _ := os.ReadFile(marker)
		_ = os.Remove(marker)
		if n := requests.Swap(0); n > 0 {
			return fmt.Sprintf("%d HTTP requests; programs run: %q", n, used)
		}
		if len(used) > 0 {
			return fmt.Sprintf("programs run: %q", used)
		}
		return ""
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// FuzzKustomizePath builds a bundle whose spec.config.path and one kustomization (at the root, in a
// new overlay, replacing overlays/prod's or the real helloWorld's) are arbitrary. For any input: no
// panic, no hang; errors are InvalidBundleErrors; nothing is fetched over the network and no git or
// helm program runs (remote references are refused before the build); and a build that succeeds
// is of a path inside the bundle and holds nothing from outside of it.
func FuzzKustomizePath(f *testing.F) {
	tree := fuzzTree(f)
	remote := noNetwork(f)

	kustomization := func(p string) []byte {
		if file, ok := tree[path.Join("bundle", p)]; ok {
			return file.Data
		}
		return nil
	}
	f.Add("", kustomization("base/kustomization.yaml"), uint8(0))
	f.Add("base", []byte("resources:\n- deployment.yaml\n"), uint8(0))
	f.Add("overlays/prod", kustomization("overlays/prod/kustomization.yaml"), uint8(2))
	f.Add("./overlays/fuzz", []byte("resources:\n- ../../base\ncomponents:\n- ../../components/debug\n"), uint8(1))
	f.Add("overlays/fuzz", kustomization("overlays/remote-base/kustomization.yaml"), uint8(1))
	f.Add("overlays/fuzz", kustomization("overlays/remote-patch/kustomization.yaml"), uint8(1))
	f.Add("overlays/fuzz", []byte("resources:\n- ../../../outside\n"), uint8(1))
	f.Add("overlays/fuzz", []byte("resources:\n- ../../outside/cm.yaml\n"), uint8(1))
	f.Add("", []byte("resources:\n- github.com/org/repo//dir?ref=v1\n"), uint8(0))
	f.Add("", []byte("resources:\n- git@github.com:org/repo.git\n"), uint8(0))
	f.Add("", []byte("resources:\n- base\nconfigMapGenerator:\n- name: x\n  files:\n  - k=https://example.com/x\n"), uint8(0))
	f.Add("", []byte("helmCharts:\n- name: podinfo\n  repo: https://stefanprodan.github.io/podinfo\n"), uint8(0))
	f.Add("", []byte("resources:\n- /etc/passwd\n"), uint8(0))
	f.Add("", []byte("resources:\n- |\n  apiVersion: v1\n  kind: ConfigMap\n"), uint8(0))
	f.Add("", []byte("openapi:\n  path: https://example.com/schema.json\nresources:\n- base\n"), uint8(0))
	f.Add("", []byte("resources: [base, base]\n"), uint8(0))
	f.Add("", []byte("{"), uint8(0))
	f.Add("", []byte("resources:\n- base\ntransformers:\n- |\n  apiVersion: builtin\n  kind: LabelTransformer\n  metadata:\n    name: l\n  labels:\n    a: b\n  fieldSpecs:\n  - path: metadata/labels\n    create: true\n"), uint8(0))
	f.Add("", []byte("resources:\n- base\npatches:\n- path: \"https://example.com/p.yaml\\n\"\n"), uint8(0))
	f.Add("", []byte("resources:\n- base\npatches:\n- path: \"https:example.com/p.yaml\"\n"), uint8(0))
	for _, p := range []string{"..", "../outside", "/outside", "base/../../outside", "base/..", ".", "./", "overlays/../base", "base\x00", "BASE", "base/", "hello", "podinfo", "a//b"} {
		f.Add(p, []byte(nil), uint8(3))
	}
	f.Add("hello", kustomization("hello/kustomization.yaml"), uint8(3))

	f.Fuzz(func(t *testing.T, configPath string, data []byte, slot uint8) {
		root := maps.Clone(tree)
		if data != nil {
			root[path.Join("bundle", fuzzSlots[int(slot)%len(fuzzSlots)])] = &fstest.MapFile{Data: data}
		}
		bundle, err := fs.Sub(root, "bundle")
		if err != nil {
			t.Fatal(err)
		}
		var cfg *rukpakv1alpha1.BundleConfig
		if configPath != "" {
			cfg = &rukpakv1alpha1.BundleConfig{Path: configPath}
		}

		stop := time.AfterFunc(30*time.Second, func() {
			panic(fmt.Sprintf("kustomize build of path %q did not return within 30s", configPath))
		}).Stop
		objs, err := New().Render(t.Context(), provisioner.Request{Content: bundle, Name: "bd", InstallNamespace: "ns", Config: cfg})
		stop()

		if used := remote(); used != "" {
			t.Fatalf("the build of path %q reached for the network: %s (error: %v)", configPath, used, err)
		}
		if err != nil {
			var ib *provisioner.InvalidBundleError
			if !errors.As(err, &ib) {
				t.Fatalf("Render failed with %T %v, want an InvalidBundleError", err, err)
			}
			return
		}
		target := path.Clean(strings.TrimPrefix(configPath, "./"))
		if target == ".." || strings.HasPrefix(target, "../") || path.IsAbs(target) || !fs.ValidPath(target) {
			t.Fatalf("spec.config.path %q (%q) is outside the bundle, yet the build succeeded", configPath, target)
		}
		if kustomizationFile(bundle, target) == "" {
			t.Fatalf("spec.config.path %q has no kustomization in the bundle, yet the build succeeded", configPath)
		}
		for _, o := range objs {
			if o.GetObjectKind().GroupVersionKind().Kind == "" || o.GetName() == "" {
				t.Fatalf("built object without kind or name: %v", o)
			}
			if raw, _ := json.Marshal(o); strings.Contains(string(raw), fuzzSentinel) {
				t.Fatalf("the build of path %q holds content from outside the bundle: %s", configPath, raw)
			}
		}
	})
}

// fuzzSharedRoot is the shared real test data directory ($OLMV1_TESTDATA, by default
// ../shared/testdata next to the repository root), or "" when it is absent.
func fuzzSharedRoot() string {
	root := os.Getenv("OLMV1_TESTDATA")
	if root == "" {
		dir, err := os.Getwd()
		if err != nil {
			return ""
		}
		for ; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
				break
			}
			if filepath.Dir(dir) == dir {
				return ""
			}
		}
		root = filepath.Join(dir, "..", "shared", "testdata")
	}
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return ""
	}
	return root
}
