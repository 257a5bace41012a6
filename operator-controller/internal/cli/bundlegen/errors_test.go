package bundlegen

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/olmv1/olmv1/rukpak/pkg/bundlerender"
	"github.com/olmv1/olmv1/rukpak/pkg/bundlevalidate"
)

// objects decodes a YAML stream written for a test.
func objects(t *testing.T, yamlStream string) []Object {
	t.Helper()
	objs, err := decode("test.yaml", []byte(yamlStream))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

const testDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: op, namespace: ns}
spec:
  selector: {matchLabels: {app: op}}
  template:
    metadata: {labels: {app: op}}
    spec:
      serviceAccountName: op
      containers: [{name: c, image: example.com/op:v1}]
`

func minimalOptions() Options {
	return Options{Package: "op", Version: "1.0.0", Channels: []string{"stable"}}
}

// TestBuildErrors: manifests a bundle cannot carry, and flags that cannot be right, are refused
// with a message that names the object or flag and says what to do.
func TestBuildErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		manifests string
		edit      func(*Options)
		want      string
	}{
		"unsupported kinds": {manifests: testDeployment + "---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: agent}\n---\napiVersion: batch/v1\nkind: Job\nmetadata: {name: once}\n",
			want: "registry+v1 bundles cannot carry DaemonSet/agent (test.yaml), Job/once (test.yaml); supported are"},
		"a CSV":           {manifests: "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata: {name: x}\n", want: "already holds a ClusterServiceVersion"},
		"v1beta1 CRD":     {manifests: "apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\nmetadata: {name: a.b}\n", want: "bundles need apiextensions.k8s.io/v1 CRDs"},
		"two Deployments": {manifests: testDeployment + "---\n" + strings.Replace(testDeployment, "namespace: ns", "namespace: other", 1), want: `two Deployments are named "op"`},
		"webhook by URL":  {manifests: testDeployment + "---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: v}\nwebhooks: [{name: v.example.com, clientConfig: {url: 'https://x'}}]\n", want: "calls a URL"},
		"webhook without Service": {manifests: testDeployment + "---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: v}\nwebhooks: [{name: v.example.com, clientConfig: {service: {name: svc, namespace: ns}}}]\n",
			want: `is served by Service "svc", which is not in the manifests`},
		"webhook Service selecting nothing": {manifests: testDeployment + "---\napiVersion: v1\nkind: Service\nmetadata: {name: svc}\nspec: {selector: {app: nothing}}\n---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: v}\nwebhooks: [{name: v.example.com, clientConfig: {service: {name: svc, namespace: ns}}}]\n",
			want: `Service "svc" selects no Deployment`},
		"no package":            {edit: func(o *Options) { o.Package = "" }, want: "--package is required"},
		"bad package":           {edit: func(o *Options) { o.Package = "My_Op" }, want: "is not a valid package name"},
		"bad version":           {edit: func(o *Options) { o.Version = "1.0" }, want: `--version "1.0" is not a semantic version`},
		"no channels":           {edit: func(o *Options) { o.Channels = nil }, want: "--channels is required"},
		"default not a channel": {edit: func(o *Options) { o.DefaultChannel = "fast" }, want: `--default-channel "fast" is not one of --channels stable`},
		"bad install mode":      {edit: func(o *Options) { o.InstallModes = []string{"AllNamespace"} }, want: `"AllNamespace" is not an install mode`},
		"bad gvk":               {edit: func(o *Options) { o.RequiresGVK = []string{"Certificate"} }, want: "write group/version/Kind"},
		"bad package range":     {edit: func(o *Options) { o.RequiresPackage = []string{"etcd:>>1"} }, want: `is not a version range`},
		"package without range": {edit: func(o *Options) { o.RequiresPackage = []string{"etcd"} }, want: "write name:range"},
		"bad min kube version":  {edit: func(o *Options) { o.MinKubeVersion = "latest" }, want: "--min-kube-version"},
		"bad icon":              {edit: func(o *Options) { o.Icon = []byte("not an image") }, want: "not an SVG, PNG, JPEG or GIF"},
	} {
		t.Run(name, func(t *testing.T) {
			o := minimalOptions()
			if tc.edit != nil {
				tc.edit(&o)
			}
			m := tc.manifests
			if m == "" {
				m = testDeployment
			}
			_, err := Build(objects(t, m), o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestRBACAbsorption: what becomes of bindings that grant more than the Deployment's account.
func TestRBACAbsorption(t *testing.T) {
	manifests := testDeployment + `---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: shared}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: shared}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: shared}
subjects: [{kind: ServiceAccount, name: op, namespace: ns}, {kind: User, name: alice}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: view, namespace: ns}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{kind: ServiceAccount, name: op, namespace: ns}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: aggregated}
aggregationRule: {clusterRoleSelectors: [{matchLabels: {x: "y"}}]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: aggregated}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: aggregated}
subjects: [{kind: ServiceAccount, name: op, namespace: ns}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: op, namespace: ns}
imagePullSecrets: [{name: pull}]
`
	res, err := Build(objects(t, manifests), minimalOptions())
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := []string{
		"manifests/aggregated_rbac.authorization.k8s.io_clusterrole.yaml",
		"manifests/aggregated_rbac.authorization.k8s.io_clusterrolebinding.yaml",
		"manifests/op.clusterserviceversion.yaml",
		"manifests/op_serviceaccount.yaml", // it has imagePullSecrets, which the CSV cannot say
		"manifests/shared_rbac.authorization.k8s.io_clusterrole.yaml",
		"manifests/shared_rbac.authorization.k8s.io_clusterrolebinding.yaml",
		"manifests/view_rbac.authorization.k8s.io_rolebinding.yaml",
		"metadata/annotations.yaml",
	}
	if got := res.Paths(); !reflect.DeepEqual(got, wantFiles) {
		t.Errorf("files:\n got %q\nwant %q", got, wantFiles)
	}
	if b := string(res.Files["manifests/shared_rbac.authorization.k8s.io_clusterrolebinding.yaml"]); !strings.Contains(b, "alice") || strings.Contains(b, "name: op") {
		t.Errorf("the shared binding should keep only alice:\n%s", b)
	}
	if csv := string(res.Files["manifests/op.clusterserviceversion.yaml"]); !strings.Contains(csv, "clusterPermissions:") || !strings.Contains(csv, "configmaps") {
		t.Errorf("the CSV should grant op the shared rules:\n%s", csv)
	}
	for _, want := range []string{"also binds User alice", `refers to ClusterRole "view", which is not in the manifests`, "grants the aggregated ClusterRole/aggregated"} {
		if !strings.Contains(strings.Join(res.Warnings, "\n"), want) {
			t.Errorf("no warning %q in %q", want, res.Warnings)
		}
	}
}

// TestCompositeBundle: a bundle without a Deployment of its own that requires others' APIs.
func TestCompositeBundle(t *testing.T) {
	crd := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: stacks.example.com}
spec:
  group: example.com
  names: {kind: Stack, plural: stacks}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
`
	o := minimalOptions()
	o.RequiresGVK = []string{"example.org/v1/Database", "v1/ConfigMap"}
	res, err := Build(objects(t, crd), o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Warnings[0], "hold no Deployment") {
		t.Errorf("warnings %q", res.Warnings)
	}
	csv := string(res.Files["manifests/op.clusterserviceversion.yaml"])
	if !strings.Contains(csv, "deployments: []") {
		t.Errorf("CSV:\n%s", csv)
	}
	deps := string(res.Files["metadata/dependencies.yaml"])
	if !strings.Contains(deps, "group: example.org") || !strings.Contains(deps, "group: \"\"\n    kind: ConfigMap") {
		t.Errorf("dependencies.yaml:\n%s", deps)
	}
	// A CSV without deployments is a valid bundle: rukpak installs its CRDs and manifests.
	dir := t.TempDir()
	if _, err := res.Write(dir); err != nil {
		t.Fatal(err)
	}
	r, err := bundlevalidate.Validate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Valid() {
		t.Errorf("the composite bundle does not pass bundle validate: %v", r.Problems)
	}
}

// TestIconMediaType: the icon's media type comes from its content.
func TestIconMediaType(t *testing.T) {
	for name, tc := range map[string]struct {
		data, want string
	}{
		"svg":                {`<svg xmlns="http://www.w3.org/2000/svg"/>`, "image/svg+xml"},
		"svg after xml decl": {"<?xml version=\"1.0\"?>\n<!-- logo -->\n<!DOCTYPE svg>\n<svg/>", "image/svg+xml"},
		"png":                {"\x89PNG\r\n\x1a\n\x00\x00", "image/png"},
		"jpeg":               {"\xFF\xD8\xFF\xE0", "image/jpeg"},
		"gif":                {"GIF89a\x01\x00", "image/gif"},
		"html":               {"<html><svg/></html>", ""},
		"text":               {"logo", ""},
	} {
		got, err := iconMediaType([]byte(tc.data))
		if got != tc.want || (tc.want == "") != (err != nil) {
			t.Errorf("%s: got %q, %v; want %q", name, got, err, tc.want)
		}
	}
}

// TestSupportedKindsMatchRenderer: SupportedKinds is the list rukpak's registry+v1 renderer prints
// when it refuses a kind (the renderer's list is internal to the rukpak module).
func TestSupportedKindsMatchRenderer(t *testing.T) {
	dir := t.TempDir()
	res, err := Build(objects(t, testDeployment), minimalOptions())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.Write(dir); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(dir, "manifests", "x.yaml"), "apiVersion: example.org/v1\nkind: Frobnicator\nmetadata: {name: x}\n")
	_, err = bundlerender.Render(context.Background(), dir, bundlerender.Options{InstallNamespace: "ns"})
	m := regexp.MustCompile(`supported kinds are ClusterServiceVersion, CustomResourceDefinition, (.*)$`).FindStringSubmatch(strings.TrimSpace(errString(err)))
	if m == nil {
		t.Fatalf("the renderer's error does not list the supported kinds: %v", err)
	}
	if got := strings.Join(SupportedKinds(), ", "); got != m[1] {
		t.Errorf("SupportedKinds:\n %s\nthe renderer supports:\n %s", got, m[1])
	}
	_ = os.RemoveAll(dir)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
