package helm

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/version"
	discoveryfake "k8s.io/client-go/discovery/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
)

// sharedChart returns $OLMV1_TESTDATA/helm/<name> (default ../shared/testdata next to the repository),
// skipping when the real test data is absent.
func sharedChart(tb testing.TB, name string) fs.FS {
	tb.Helper()
	root := os.Getenv("OLMV1_TESTDATA")
	if root == "" {
		root = filepath.Join("..", "..", "..", "..", "..", "shared", "testdata")
	}
	dir := filepath.Join(root, "helm", name)
	if _, err := os.Stat(filepath.Join(dir, "Chart.yaml")); err != nil {
		tb.Skipf("real test data %s is absent (set OLMV1_TESTDATA): %v", dir, err)
	}
	return os.DirFS(dir)
}

func TestRealChartPodinfo(t *testing.T) {
	chart := sharedChart(t, "podinfo")
	got := mustRender(t, nil, chart, nil)
	for _, k := range []string{"Deployment/rel-podinfo", "Service/rel-podinfo"} {
		if got[k] == nil {
			t.Errorf("podinfo renders no %s: %v", k, keys(got))
		}
	}
	// podinfo's templates/tests are test hooks: only `helm test` runs them.
	for k := range got {
		if k == "Pod/rel-podinfo-grpc-test" || got[k].GetAnnotations()["helm.sh/hook"] != "" {
			t.Errorf("hook %s must not be rendered as an object", k)
		}
	}
	replicas, _, _ := unstructured.NestedFieldNoCopy(got["Deployment/rel-podinfo"].Object, "spec", "replicas")
	if fmt.Sprint(replicas) != "1" {
		t.Errorf("default replicas %d", replicas)
	}

	got = mustRender(t, nil, chart, &rukpakv1alpha1.BundleConfig{Values: inline(t, "replicaCount: 3\nredis: {enabled: true}")})
	if replicas, _, _ = unstructured.NestedFieldNoCopy(got["Deployment/rel-podinfo"].Object, "spec", "replicas"); fmt.Sprint(replicas) != "3" || got["Deployment/rel-podinfo-redis"] == nil {
		t.Errorf("values: replicas %d, objects %v", replicas, keys(got))
	}

	// Its install hooks are switched by values: switched on, they are rejected by name.
	_, err := render(t, nil, chart, &rukpakv1alpha1.BundleConfig{Values: inline(t, "hooks: {preInstall: {job: {enabled: true}}}")})
	wantInvalid(t, err, ReasonUnsupportedHook, `Job "rel-podinfo-pre-install"`, "podinfo/templates/hooks/job.yaml", "helm.sh/hook: pre-install")

	// Chart.yaml says kubeVersion: ">=1.23.0-0".
	req := request(chart, nil)
	req.Capabilities = fixedCapabilities("v1.22.0")
	_, err = renderRequest(t, nil, req)
	wantInvalid(t, err, ReasonIncompatibleKubeVersion, "podinfo", "v1.22.0")
}

func TestRealChartHelloWorld(t *testing.T) {
	got := mustRender(t, nil, sharedChart(t, "hello-world"), nil)
	for _, k := range []string{"Deployment/rel-hello-world", "Service/rel-hello-world", "ServiceAccount/rel-hello-world"} {
		if got[k] == nil {
			t.Errorf("hello-world renders no %s: %v", k, keys(got))
		}
	}
}

// TestGatheredCapabilities: the cluster's version and API versions, gathered through discovery as
// the controller does, are what templates see as .Capabilities (the discovery itself is tested in
// package provisioner).
func TestGatheredCapabilities(t *testing.T) {
	cs := kubefake.NewClientset()
	dc := cs.Discovery().(*discoveryfake.FakeDiscovery)
	dc.FakedServerVersion = &version.Info{GitVersion: "v1.37.2", Major: "1", Minor: "37"}
	dc.Resources = []*metav1.APIResourceList{
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment"}}},
		{GroupVersion: "monitoring.coreos.com/v1", APIResources: []metav1.APIResource{{Name: "servicemonitors", Kind: "ServiceMonitor"}}},
	}
	g := &provisioner.Gatherer{Capabilities: provisioner.DiscoveryCapabilities(dc, time.Hour)}
	// Templates branch on it: a chart rendering a ServiceMonitor only when the cluster serves one.
	chart := chartFS("mon", "", map[string]string{"sm.yaml": `{{ if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor" }}` + configMap + `{{ end }}` +
		"\n---\n" + `{{ if semverCompare ">=1.37.0-0" .Capabilities.KubeVersion.Version }}` + "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: recent\n{{ end }}"})
	req, err := g.Gather(t.Context(), New(), provisioner.Request{Content: chart, Name: "rel", InstallNamespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := renderRequest(t, nil, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := byKey(objs); len(got) != 2 {
		t.Errorf("capabilities not passed to templates: %v", keys(got))
	}
}

func BenchmarkRenderPodinfo(b *testing.B) {
	chart := sharedChart(b, "podinfo")
	r := New()
	req := requestFor(chart)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Render(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
}
