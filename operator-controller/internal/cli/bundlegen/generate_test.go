package bundlegen

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/olmv1/olmv1/rukpak/pkg/bundlevalidate"
)

var update = flag.Bool("update", false, "rewrite the golden bundles under testdata/golden")

// fixtureOptions are the options the fixtures are generated with (as docs/operator-authors.md's
// commands give them).
func fixtureOptions(t *testing.T, version string) Options {
	t.Helper()
	icon, err := os.ReadFile(filepath.Join("testdata", "icon.svg"))
	if err != nil {
		t.Fatal(err)
	}
	return Options{
		Package: "widget-operator", Version: version, Channels: []string{"stable", "candidate"}, DefaultChannel: "stable",
		Icon: icon, MinKubeVersion: "1.27.0",
		RequiresGVK: []string{"cert-manager.io/v1/Certificate"}, RequiresPackage: []string{"etcd:>=0.9.0 <1.0.0"},
	}
}

// fixtures are the input directories under testdata and their golden bundles.
var fixtures = []struct{ name, input, golden, version string }{
	{"plain", "testdata/plain", "testdata/golden/plain", "1.0.0"},
	{"kustomize overlay", "testdata/kustomize/overlay", "testdata/golden/kustomize", "1.1.0"},
}

// TestGenerateGolden: the plain fixture and the kustomize overlay generate exactly the committed
// bundles under testdata/golden (go test -update rewrites them), and those pass `bundle validate`.
func TestGenerateGolden(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			res, err := Generate(f.input, fixtureOptions(t, f.version))
			if err != nil {
				t.Fatal(err)
			}
			if *update {
				if _, err := res.Write(f.golden); err != nil {
					t.Fatal(err)
				}
			}
			var diff bytes.Buffer
			equal, err := res.Check(f.golden, &diff)
			if err != nil {
				t.Fatal(err)
			}
			if !equal {
				t.Errorf("generated bundle differs from %s (go test -update rewrites it):\n%s", f.golden, diff.String())
			}
			r, err := bundlevalidate.Validate(f.golden)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range r.Problems {
				t.Log(p.String())
			}
			if !r.Valid() {
				t.Errorf("%s does not pass bundle validate", f.golden)
			}
		})
	}
}

// TestGenerateIsDeterministic: generating again gives the same bytes, file for file.
func TestGenerateIsDeterministic(t *testing.T) {
	for _, f := range fixtures {
		first, err := Generate(f.input, fixtureOptions(t, f.version))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 5; i++ {
			again, err := Generate(f.input, fixtureOptions(t, f.version))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(first.Files, again.Files) || !reflect.DeepEqual(first.Warnings, again.Warnings) {
				t.Fatalf("%s: run %d generated different files or warnings", f.name, i+2)
			}
		}
	}
}

// TestGeneratePlainFixture checks what the plain fixture turns into, part by part.
func TestGeneratePlainFixture(t *testing.T) {
	res, err := Generate("testdata/plain", fixtureOptions(t, "1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	wantPaths := []string{
		"manifests/example.com_widgets.yaml",
		"manifests/widget-admins_rbac.authorization.k8s.io_rolebinding.yaml",
		"manifests/widget-config_configmap.yaml",
		"manifests/widget-metrics_service.yaml",
		"manifests/widget-operator.clusterserviceversion.yaml",
		"manifests/widget-viewer_rbac.authorization.k8s.io_clusterrole.yaml",
		"metadata/annotations.yaml",
		"metadata/dependencies.yaml",
	}
	if got := res.Paths(); !reflect.DeepEqual(got, wantPaths) {
		t.Errorf("files:\n got %q\nwant %q", got, wantPaths)
	}
	csv := string(res.Files["manifests/widget-operator.clusterserviceversion.yaml"])
	for _, want := range []string{
		"name: widget-operator.v1.0.0", "version: 1.0.0", "minKubeVersion: 1.27.0", "mediatype: image/svg+xml",
		"operatorframework.io/suggested-namespace: widget-system", `"kind": "Widget"`,
		"image: quay.io/example/widget-migrate:v1.0.0", "name: migrate", // init container images are related
		"generateName: vwidget.example.com", "targetPort: 9443", "deploymentName: widget-operator",
		"version: v1alpha1", "description: A Widget is a widget.",
	} {
		if !strings.Contains(csv, want) {
			t.Errorf("CSV lacks %q", want)
		}
	}
	// pods get/list/watch is granted by both ClusterRoles: listed once.
	if n := strings.Count(csv, "          - pods\n"); n != 1 {
		t.Errorf("the duplicate pods rule appears %d times in the CSV, want once", n)
	}
	wantWarnings := []string{
		"Namespace/widget-system (namespace.yaml) dropped: the install namespace is chosen when the bundle is installed (it is the bundle's suggested namespace)",
		"RoleBinding/widget-system/widget-admins (rbac.yaml) binds Group widget-admins, none of them the ServiceAccount of a Deployment; kept as it is",
	}
	if !reflect.DeepEqual(res.Warnings, wantWarnings) {
		t.Errorf("warnings:\n got %q\nwant %q", res.Warnings, wantWarnings)
	}
	deps := string(res.Files["metadata/dependencies.yaml"])
	want := `dependencies:
- type: olm.gvk
  value:
    group: cert-manager.io
    kind: Certificate
    version: v1
- type: olm.package
  value:
    packageName: etcd
    version: '>=0.9.0 <1.0.0'
`
	if deps != want {
		t.Errorf("dependencies.yaml:\n%s\nwant:\n%s", deps, want)
	}
}

// TestCheck: Check reports a committed bundle equal to the generated one as equal, and otherwise
// prints a unified diff naming each changed, missing and stale file.
func TestCheck(t *testing.T) {
	res, err := Generate("testdata/plain", fixtureOptions(t, "1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := res.Write(dir); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if equal, err := res.Check(dir, &out); err != nil || !equal || out.Len() != 0 {
		t.Fatalf("freshly written bundle: equal=%v err=%v diff:\n%s", equal, err, out.String())
	}
	csv := filepath.Join(dir, "manifests", "widget-operator.clusterserviceversion.yaml")
	data, _ := os.ReadFile(csv)
	mustWrite(t, csv, strings.Replace(string(data), "replicas: 1", "replicas: 3", 1))
	mustWrite(t, filepath.Join(dir, "manifests", "stale.yaml"), "kind: ConfigMap\n")
	if err := os.Remove(filepath.Join(dir, "metadata", "dependencies.yaml")); err != nil {
		t.Fatal(err)
	}
	equal, err := res.Check(dir, &out)
	if err != nil || equal {
		t.Fatalf("changed bundle: equal=%v err=%v", equal, err)
	}
	diff := out.String()
	for _, want := range []string{
		"--- " + filepath.ToSlash(csv) + " (committed)", "+++ manifests/widget-operator.clusterserviceversion.yaml (generated)",
		"-          replicas: 3", "+          replicas: 1", "@@ ",
		"+++ /dev/null (not generated)", "-kind: ConfigMap",
		"--- /dev/null (not committed)", "+++ metadata/dependencies.yaml (generated)",
	} {
		if !strings.Contains(diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, diff)
		}
	}
	// Write makes the directory equal again, removing the stale file.
	removed, err := res.Write(dir)
	if err != nil || !reflect.DeepEqual(removed, []string{"manifests/stale.yaml"}) {
		t.Fatalf("Write: removed %q, err %v", removed, err)
	}
	out.Reset()
	if equal, _ := res.Check(dir, &out); !equal {
		t.Errorf("after Write the bundle still differs:\n%s", out.String())
	}
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
