package kustomize

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/provisionertest"
)

func build(t *testing.T, content fs.FS, p string) ([]client.Object, error) {
	t.Helper()
	var cfg *rukpakv1alpha1.BundleConfig
	if p != "" {
		cfg = &rukpakv1alpha1.BundleConfig{Path: p}
	}
	return New().Render(t.Context(), provisioner.Request{Content: content, Name: "bd", InstallNamespace: "ns", Config: cfg})
}

func mustBuild(t *testing.T, content fs.FS, p string) map[string]*unstructured.Unstructured {
	t.Helper()
	objs, err := build(t, content, p)
	if err != nil {
		t.Fatalf("build %q: %v", p, err)
	}
	out := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		u := o.(*unstructured.Unstructured)
		out[u.GetKind()+"/"+u.GetName()] = u
	}
	return out
}

func keys(m map[string]*unstructured.Unstructured) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// wantInvalid asserts err is an InvalidBundleError with reason whose message contains every part.
func wantInvalid(t *testing.T, err error, reason string, parts ...string) {
	t.Helper()
	provisionertest.WantInvalid(t, err, reason, parts...)
}

func demo() fs.FS { return os.DirFS("testdata/demo") }

func TestBuildOverlay(t *testing.T) {
	got := mustBuild(t, demo(), "overlays/prod")
	var cmName string
	for k := range got {
		if strings.HasPrefix(k, "ConfigMap/prod-greeter-") {
			cmName = strings.TrimPrefix(k, "ConfigMap/")
		}
	}
	d, svc := got["Deployment/prod-greeter"], got["Service/prod-greeter"]
	if d == nil || svc == nil || cmName == "" || len(got) != 3 {
		t.Fatalf("objects %v", keys(got))
	}
	replicas, _, _ := unstructured.NestedFieldNoCopy(d.Object, "spec", "replicas")
	if fmt.Sprint(replicas) != "3" {
		t.Errorf("the overlay's patch sets 3 replicas, got %v", replicas)
	}
	if d.GetAnnotations()["example.rukpak.io/debug"] != "true" || d.GetLabels()["app.kubernetes.io/name"] != "greeter" {
		t.Errorf("component annotation and base labels: %v %v", d.GetAnnotations(), d.GetLabels())
	}
	// The generated ConfigMap's hashed name is propagated to the Deployment that uses it.
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if !strings.Contains(fmt.Sprint(containers), cmName) {
		t.Errorf("deployment does not refer to %s: %v", cmName, containers)
	}
	if v, _, _ := unstructured.NestedString(got["ConfigMap/"+cmName].Object, "data", "greeting"); v != "hello from prod" {
		t.Errorf("merged generator: %q", v)
	}
}

func TestPathSelectsOverlay(t *testing.T) {
	if got := mustBuild(t, demo(), "base"); got["Deployment/greeter"] == nil {
		t.Errorf("base: %v", keys(got))
	}
	sub, _ := fs.Sub(demo(), "base")
	if got := mustBuild(t, sub, ""); got["Deployment/greeter"] == nil {
		t.Errorf("empty path builds the root: %v", keys(got))
	}
	_, err := build(t, demo(), "")
	wantInvalid(t, err, ReasonInvalidKustomization, "no kustomization.yaml at the bundle root", "spec.config.path", "base", "overlays/prod")
	_, err = build(t, demo(), "overlays/staging")
	wantInvalid(t, err, ReasonInvalidKustomization, "overlays/staging/")
}

func TestRemoteReferencesRejected(t *testing.T) {
	_, err := build(t, demo(), "overlays/remote-base")
	wantInvalid(t, err, ReasonRemoteReference, "overlays/remote-base/kustomization.yaml", "https://github.com/kubernetes-sigs/kustomize//examples/helloWorld?ref=v1.0.6", "is a remote base", "without network access")
	_, err = build(t, demo(), "overlays/remote-patch")
	wantInvalid(t, err, ReasonRemoteReference, "patches.path", "https://raw.githubusercontent.com/example/config/main/replicas.yaml", "without network access")
	// Shorthand git references (no scheme) are caught as well: they are not in the bundle.
	gitBase := fstest.MapFS{"kustomization.yaml": {Data: []byte("resources:\n- github.com/example/repo/base?ref=v1\n")}}
	_, err = build(t, gitBase, "")
	wantInvalid(t, err, ReasonRemoteReference, "github.com/example/repo/base?ref=v1", "remote base")
	missing := fstest.MapFS{"kustomization.yaml": {Data: []byte("resources:\n- deployment.yaml\n")}}
	_, err = build(t, missing, "")
	wantInvalid(t, err, ReasonInvalidKustomization, `"deployment.yaml" is not a file or directory of the bundle`)
}

func TestBuildProblems(t *testing.T) {
	for _, tc := range []struct {
		name, kustomization string
		parts               []string
	}{
		{"helm charts", "helmCharts:\n- name: x\n  repo: https://charts.example\n", []string{"helmCharts", "core-rukpak-io-helm"}},
		{"exec plugin", "generators:\n- gen.yaml\n", []string{"building", "plugin"}},
		{"escaping resource", "resources:\n- ../outside\n", []string{"outside the bundle"}},
		{"not yaml", "resources: [", []string{"kustomization.yaml is not a valid kustomization"}},
		{"no objects", "namePrefix: x-\n", []string{"builds no objects"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			content := fstest.MapFS{
				"kustomization.yaml": {Data: []byte(tc.kustomization)},
				"gen.yaml":           {Data: []byte("apiVersion: example.com/v1\nkind: Exec\nmetadata:\n  name: g\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: /bin/sh\n")},
			}
			_, err := build(t, content, "")
			wantInvalid(t, err, ReasonInvalidKustomization, tc.parts...)
		})
	}
}

// sharedKustomization returns $OLMV1_TESTDATA/kustomize (default ../shared/testdata next to the
// repository), skipping when the real test data is absent.
func sharedKustomization(tb testing.TB) fs.FS {
	tb.Helper()
	root := os.Getenv("OLMV1_TESTDATA")
	if root == "" {
		root = filepath.Join("..", "..", "..", "..", "..", "shared", "testdata")
	}
	dir := filepath.Join(root, "kustomize")
	if _, err := os.Stat(filepath.Join(dir, "podinfo", "kustomization.yaml")); err != nil {
		tb.Skipf("real test data %s is absent (set OLMV1_TESTDATA): %v", dir, err)
	}
	return os.DirFS(dir)
}

func TestRealKustomizations(t *testing.T) {
	content := sharedKustomization(t)
	got := mustBuild(t, content, "podinfo")
	for _, k := range []string{"Deployment/podinfo", "Service/podinfo", "HorizontalPodAutoscaler/podinfo"} {
		if got[k] == nil {
			t.Errorf("podinfo builds no %s: %v", k, keys(got))
		}
	}
	got = mustBuild(t, content, "helloWorld")
	var names []string
	for k, u := range got {
		names = append(names, k)
		if u.GetLabels()["app"] != "hello" {
			t.Errorf("%s lacks the commonLabels of helloWorld: %v", k, u.GetLabels())
		}
	}
	if len(names) != 3 {
		t.Errorf("helloWorld objects: %v", keys(got))
	}
}

func BenchmarkBuildOverlay(b *testing.B) {
	content := demo()
	r := New()
	req := provisioner.Request{Content: content, Name: "bd", InstallNamespace: "ns", Config: &rukpakv1alpha1.BundleConfig{Path: "overlays/prod"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Render(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
}
