package helm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"testing"
	"testing/fstest"

	"helm.sh/helm/v3/pkg/chartutil"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/provisionertest"
)

// fixedCapabilities is a cluster at Kubernetes version serving Helm's default API versions.
func fixedCapabilities(version string) *provisioner.Capabilities {
	return &provisioner.Capabilities{KubeVersion: version, APIVersions: chartutil.DefaultVersionSet}
}

// request renders content as BundleDeployment "rel" in namespace "ns" on a cluster at Kubernetes
// v1.37.2.
func request(content fs.FS, cfg *rukpakv1alpha1.BundleConfig) provisioner.Request {
	return provisioner.Request{Content: content, Name: "rel", InstallNamespace: "ns", Config: cfg, Capabilities: fixedCapabilities("v1.37.2")}
}

func render(t *testing.T, r *Renderer, content fs.FS, cfg *rukpakv1alpha1.BundleConfig) ([]client.Object, error) {
	t.Helper()
	return renderRequest(t, r, request(content, cfg))
}

func renderRequest(t *testing.T, r *Renderer, req provisioner.Request) ([]client.Object, error) {
	t.Helper()
	if r == nil {
		r = New()
	}
	return r.Render(t.Context(), req)
}

// gathered is req with the valuesFrom documents read from values, as the controller gathers them
// before a render.
func gathered(t *testing.T, values client.Reader, req provisioner.Request) provisioner.Request {
	t.Helper()
	req, err := (&provisioner.Gatherer{Values: values}).Gather(t.Context(), New(), req)
	if err != nil {
		t.Fatalf("gathering: %v", err)
	}
	return req
}

func mustRender(t *testing.T, r *Renderer, content fs.FS, cfg *rukpakv1alpha1.BundleConfig) map[string]*unstructured.Unstructured {
	t.Helper()
	objs, err := render(t, r, content, cfg)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return byKey(objs)
}

// byKey indexes objects as "Kind/name".
func byKey(objs []client.Object) map[string]*unstructured.Unstructured {
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

func inline(t *testing.T, yamlOrJSON string) *apiextensionsv1.JSON {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(yamlOrJSON))
	if err != nil {
		t.Fatal(err)
	}
	return &apiextensionsv1.JSON{Raw: j}
}

func data(t *testing.T, u *unstructured.Unstructured, key string) string {
	t.Helper()
	v, _, _ := unstructured.NestedString(u.Object, "data", key)
	return v
}

// wantInvalid asserts err is an InvalidBundleError with reason whose message contains every part.
func wantInvalid(t *testing.T, err error, reason string, parts ...string) {
	t.Helper()
	provisionertest.WantInvalid(t, err, reason, parts...)
}

func demo() fs.FS { return os.DirFS("testdata/demo") }

func TestRenderDemoChart(t *testing.T) {
	objs, err := render(t, nil, demo(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := byKey(objs)
	want := []string{"ConfigMap/rel-cache", "ConfigMap/rel-demo", "CustomResourceDefinition/widgets.demo.rukpak.io", "Widget/rel-demo"}
	if k := keys(got); strings.Join(k, ",") != strings.Join(want, ",") {
		t.Fatalf("objects %v, want %v (NOTES.txt and .helmignore'd files are not objects)", k, want)
	}
	if objs[0].GetObjectKind().GroupVersionKind().Kind != "CustomResourceDefinition" {
		t.Errorf("crds/ must come first, got %s", objs[0].GetObjectKind().GroupVersionKind().Kind)
	}
	cm := got["ConfigMap/rel-demo"]
	if data(t, cm, "greeting") != "hello" || data(t, cm, "namespace") != "ns" {
		t.Errorf("chart defaults and release namespace not rendered: %v", cm.Object["data"])
	}
	// The library chart's named templates run in the parent chart's scope.
	if cm.GetLabels()["app.kubernetes.io/name"] != "demo" || cm.GetLabels()["app.kubernetes.io/version"] != "1.2.0" {
		t.Errorf("library chart labels: %v", cm.GetLabels())
	}
	if data(t, got["ConfigMap/rel-cache"], "size") != "64" {
		t.Errorf("subchart defaults: %v", got["ConfigMap/rel-cache"].Object["data"])
	}
}

func TestSubchartConditionAndValues(t *testing.T) {
	got := mustRender(t, nil, demo(), &rukpakv1alpha1.BundleConfig{Values: inline(t, "cache: {enabled: false}")})
	if _, ok := got["ConfigMap/rel-cache"]; ok {
		t.Error("cache.enabled=false must leave the subchart out")
	}
	got = mustRender(t, nil, demo(), &rukpakv1alpha1.BundleConfig{Values: inline(t, "cache: {size: 128}")})
	if data(t, got["ConfigMap/rel-cache"], "size") != "128" {
		t.Errorf("values for a subchart go under its name: %v", got["ConfigMap/rel-cache"].Object["data"])
	}
}

func TestValuesFromOrderAndInlineLast(t *testing.T) {
	c := fake.NewClientBuilder().WithObjects(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "base", Namespace: "ns"},
			Data: map[string][]byte{"values.yaml": []byte("greeting: from-secret\nreplicas: 2\ncache: {size: 1}\n")}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "env", Namespace: "ns"},
			Data: map[string]string{"prod.yaml": "greeting: from-configmap\ncache: {size: 2}\n"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: "ns"},
			Data: map[string]string{"values.yaml": "- a list\n- is not values\n"}},
	).Build()
	// Rendered as the controller renders: the valuesFrom documents gathered from c first.
	renderFrom := func(cfg *rukpakv1alpha1.BundleConfig) ([]client.Object, error) {
		return renderRequest(t, nil, gathered(t, c, request(demo(), cfg)))
	}
	cfg := &rukpakv1alpha1.BundleConfig{
		ValuesFrom: []rukpakv1alpha1.ValuesReference{
			{Kind: "Secret", Name: "base"},
			{Kind: "ConfigMap", Name: "env", Key: "prod.yaml"},
			{Kind: "Secret", Name: "absent", Optional: true},
			{Kind: "ConfigMap", Name: "env", Key: "absent.yaml", Optional: true},
		},
		Values: inline(t, "cache: {size: 3}"),
	}
	objs, err := renderFrom(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := byKey(objs)
	cm := got["ConfigMap/rel-demo"]
	if data(t, cm, "greeting") != "from-configmap" || data(t, cm, "replicas") != "2" {
		t.Errorf("later valuesFrom entries must win key by key: %v", cm.Object["data"])
	}
	if data(t, got["ConfigMap/rel-cache"], "size") != "3" {
		t.Errorf("inline values must win over valuesFrom: %v", got["ConfigMap/rel-cache"].Object["data"])
	}

	// A missing object may be created later: a plain (retried) error that says what to do.
	_, err = renderFrom(&rukpakv1alpha1.BundleConfig{ValuesFrom: []rukpakv1alpha1.ValuesReference{{Kind: "Secret", Name: "absent"}}})
	var ib *provisioner.InvalidBundleError
	const wantMissing = `spec.config.valuesFrom[0]: Secret ns/absent key "values.yaml" does not exist: create it in the install namespace or mark the reference optional`
	if err == nil || errors.As(err, &ib) || err.Error() != wantMissing {
		t.Errorf("missing Secret: %v", err)
	}
	_, err = renderFrom(&rukpakv1alpha1.BundleConfig{ValuesFrom: []rukpakv1alpha1.ValuesReference{{Kind: "ConfigMap", Name: "env"}}})
	if err == nil || !strings.Contains(err.Error(), `key "values.yaml"`) {
		t.Errorf("missing key: %v", err)
	}
	_, err = renderFrom(&rukpakv1alpha1.BundleConfig{ValuesFrom: []rukpakv1alpha1.ValuesReference{{Kind: "ConfigMap", Name: "bad"}}})
	wantInvalid(t, err, ReasonInvalidValues, "valuesFrom[0]", "ConfigMap ns/bad", "not a YAML map")

	// Not gathered (rukpak has no values reader): refused, saying so.
	_, err = render(t, nil, demo(), &rukpakv1alpha1.BundleConfig{ValuesFrom: []rukpakv1alpha1.ValuesReference{{Kind: "Secret", Name: "base"}}})
	wantInvalid(t, err, ReasonInvalidValues, `valuesFrom[0]: Secret ns/base key "values.yaml" cannot be read: this rukpak was started without a values reader`)
}

func TestSchemaViolationIsReported(t *testing.T) {
	_, err := render(t, nil, demo(), &rukpakv1alpha1.BundleConfig{Values: inline(t, "replicas: 9\ngreeting: 3")})
	wantInvalid(t, err, ReasonInvalidValues, "chart demo 1.2.0", "replicas", "greeting", "spec.config.values")
}

func TestKubeVersionIsChecked(t *testing.T) {
	req := request(demo(), nil)
	req.Capabilities = fixedCapabilities("v1.19.4")
	_, err := renderRequest(t, nil, req)
	wantInvalid(t, err, ReasonIncompatibleKubeVersion, `">=1.20.0-0"`, "v1.19.4")
}

// chartFS is a one-template chart named name.
func chartFS(name, chartYAML string, templates map[string]string) fstest.MapFS {
	m := fstest.MapFS{"Chart.yaml": {Data: []byte("apiVersion: v2\nname: " + name + "\nversion: 0.1.0\n" + chartYAML)}}
	for f, body := range templates {
		m["templates/"+f] = &fstest.MapFile{Data: []byte(body)}
	}
	return m
}

const configMap = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n"

func TestHooks(t *testing.T) {
	const testPod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: smoke\n  annotations:\n    helm.sh/hook: test\nspec: {containers: [{name: c, image: busybox}]}\n"
	const job = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  annotations:\n    helm.sh/hook: pre-install,pre-upgrade\nspec: {}\n"

	got := mustRender(t, nil, chartFS("tested", "", map[string]string{"cm.yaml": configMap, "test.yaml": testPod}), nil)
	if k := keys(got); len(k) != 1 || k[0] != "ConfigMap/plain" {
		t.Errorf("test hooks are left out: %v", k)
	}
	_, err := render(t, nil, chartFS("hooked", "", map[string]string{"cm.yaml": configMap, "job.yaml": job}), nil)
	wantInvalid(t, err, ReasonUnsupportedHook, `Job "migrate"`, "hooked/templates/job.yaml", "pre-install,pre-upgrade", "does not run")
}

func TestChartProblems(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content fs.FS
		parts   []string
	}{
		{"library chart", chartFS("lib", "type: library\n", map[string]string{"_x.tpl": `{{ define "x" }}{{ end }}`}), []string{`type "library"`, "cannot be installed"}},
		{"missing dependency", chartFS("app", "dependencies: [{name: redis, version: 1.0.0}]\n", map[string]string{"cm.yaml": configMap}), []string{"missing in charts/: redis", "helm dependency build"}},
		{"random output", chartFS("rnd", "", map[string]string{"s.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {p: {{ randAlphaNum 16 | quote }}}\n"}), []string{"rnd/templates/s.yaml", "render differently", "new revision"}},
		{"template error", chartFS("broken", "", map[string]string{"cm.yaml": "{{ .Values.a.b.c }}"}), []string{"broken/templates/cm.yaml", "nil pointer"}},
		{"no objects", chartFS("empty", "", nil), []string{"renders no objects"}},
		{"duplicate object", chartFS("dup", "", map[string]string{"a.yaml": configMap, "b.yaml": configMap}), []string{`ConfigMap "plain"`, "dup/templates/a.yaml", "dup/templates/b.yaml"}},
		{"not a chart", fstest.MapFS{"manifests/cm.yaml": {Data: []byte(configMap)}}, []string{"not a Helm chart", "no Chart.yaml"}},
		{"two charts", fstest.MapFS{"a.tgz": {Data: []byte("x")}, "b.tgz": {Data: []byte("y")}}, []string{"several charts", "a.tgz, b.tgz"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render(t, nil, tc.content, nil)
			wantInvalid(t, err, ReasonInvalidChart, tc.parts...)
		})
	}
}

// packageChart writes dir as `helm package` lays it out: every file under a folder named name,
// leaving out what testdata/demo/.helmignore names.
func packageChart(t *testing.T, dir, name string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	err := fs.WalkDir(os.DirFS(dir), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".bak") {
			return err
		}
		b, err := os.ReadFile(path.Join(dir, p))
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: name + "/" + p, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = gz.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestChartLocations(t *testing.T) {
	archive := fstest.MapFS{"demo-1.2.0.tgz": {Data: packageChart(t, "testdata/demo", "demo")}}
	nested := fstest.MapFS{}
	_ = fs.WalkDir(demo(), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := fs.ReadFile(demo(), p)
			nested["demo/"+p] = &fstest.MapFile{Data: b}
		}
		return err
	})
	nested["README.md"] = &fstest.MapFile{Data: []byte("not a chart")}
	for name, content := range map[string]fs.FS{"archive at the root": archive, "chart directory below the root": nested} {
		t.Run(name, func(t *testing.T) {
			if got := mustRender(t, nil, content, nil); len(got) != 4 {
				t.Errorf("objects: %v", keys(got))
			}
		})
	}
}

func TestMergeMaps(t *testing.T) {
	base := map[string]any{"a": map[string]any{"x": 1, "y": 2}, "b": "keep", "c": map[string]any{"z": 1}}
	over := map[string]any{"a": map[string]any{"y": 3}, "c": "scalar replaces map"}
	got := mergeMaps(base, over)
	if a := got["a"].(map[string]any); a["x"] != 1 || a["y"] != 3 || got["b"] != "keep" || got["c"] != "scalar replaces map" {
		t.Errorf("merge: %v", got)
	}
	if base["a"].(map[string]any)["y"] != 2 {
		t.Error("mergeMaps must not modify its arguments")
	}
}

func requestFor(content fs.FS) provisioner.Request {
	return provisioner.Request{Content: content, Name: "rel", InstallNamespace: "ns", Capabilities: fixedCapabilities("v1.37.2")}
}
