package registryv1

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
)

func TestBundleErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		edit    func(map[string]string)
		reason  string
		message []string
	}{
		"unsupported kind": {
			edit: func(f map[string]string) {
				f["manifests/extra.yaml"] = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: sneaky\n"
			},
			reason:  "InvalidBundle",
			message: []string{"manifests/extra.yaml (document 1)", `Deployment "sneaky"`, "not a kind a registry+v1 bundle may contain", "ConfigMap"},
		},
		"no CSV": {
			edit:    func(f map[string]string) { delete(f, csvFile) },
			reason:  "InvalidBundle",
			message: []string{"manifests/ holds no ClusterServiceVersion"},
		},
		"two CSVs": {
			edit: func(f map[string]string) {
				f["manifests/z.clusterserviceversion.yaml"] = strings.Replace(f[csvFile], "name: widgets.v1.0.0", "name: widgets.v2.0.0", 1)
			},
			reason:  "InvalidBundle",
			message: []string{"a second ClusterServiceVersion \"widgets.v2.0.0\"", "widgets.v1.0.0"},
		},
		"v1beta1 CRD": {
			edit: func(f map[string]string) {
				f["manifests/old.crd.yaml"] = "apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\nmetadata:\n  name: olds.example.com\n"
			},
			reason:  "InvalidBundle",
			message: []string{"manifests/old.crd.yaml", "apiextensions.k8s.io/v1beta1", "must use apiextensions.k8s.io/v1"},
		},
		"helm media type": {
			edit: func(f map[string]string) {
				f["metadata/annotations.yaml"] = strings.Replace(f["metadata/annotations.yaml"], "registry+v1", "helm+v1", 1)
			},
			reason:  "InvalidBundle",
			message: []string{"metadata/annotations.yaml", `"helm+v1"`},
		},
		"broken YAML": {
			edit:    func(f map[string]string) { f["manifests/others.yaml"] += "---\nkind: [\n" },
			reason:  "InvalidBundle",
			message: []string{"manifests/others.yaml (document 5): invalid YAML"},
		},
		"CSV field of the wrong type": {
			edit:    editCSV(t, "replicas: 1", "replicas: one"),
			reason:  "InvalidBundle",
			message: []string{"ClusterServiceVersion \"widgets.v1.0.0\"", "does not match its schema"},
		},
		"no deployments, but webhooks served by one": {
			edit: func(f map[string]string) {
				i := strings.Index(f[csvFile], "      deployments:\n")
				j := strings.Index(f[csvFile], "  webhookdefinitions:\n")
				f[csvFile] = f[csvFile][:i] + "      deployments: []\n" + f[csvFile][j:]
			},
			reason:  "InvalidBundle",
			message: []string{`deploymentName "widget-operator" is not a deployment of spec.install.spec.deployments`},
		},
		"owned CRD missing": {
			edit:    func(f map[string]string) { delete(f, "manifests/widgets.example.com.crd.yaml") },
			reason:  "InvalidBundle",
			message: []string{`owns CustomResourceDefinition "widgets.example.com"`, "does not contain it"},
		},
		"duplicate object": {
			edit: func(f map[string]string) {
				f["manifests/dup.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: widget-config\n"
			},
			reason:  "InvalidBundle",
			message: []string{`ConfigMap "widget-config"`, "manifests/others.yaml (document 1)", "manifests/dup.yaml (document 1)"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := renderFS(t, fixtureFS(t, tc.edit), nil, selfSigned)
			wantInvalid(t, err, tc.reason, tc.message...)
		})
	}
}

func TestNoInstallNamespace(t *testing.T) {
	_, err := New(selfSigned).Render(context.Background(), provisioner.Request{Content: fixtureFS(t, nil), Name: "bd"})
	wantInvalid(t, err, "InvalidBundle", "installNamespace is empty")
}

// TestDeterministic renders twice and compares: the apply engine must see no change between
// reconciles of the same input (including the self-signed serving certificate).
func TestDeterministic(t *testing.T) {
	a, err := renderFS(t, fixtureFS(t, nil), watch("b", "a"), selfSigned)
	if err != nil {
		t.Fatal(err)
	}
	b, err := renderFS(t, fixtureFS(t, nil), watch("a", "b"), selfSigned)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.objs, b.objs) {
		t.Fatalf("two renders of the same bundle differ")
	}
}

// TestCompositeBundleWithoutDeployments: a meta package's CSV runs nothing of its own (no
// deployments); its CRDs and manifests install.
func TestCompositeBundleWithoutDeployments(t *testing.T) {
	const csv = `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: meta.v1.0.0
spec:
  version: 1.0.0
  installModes:
  - {type: AllNamespaces, supported: true}
  install:
    strategy: deployment
    spec:
      deployments: []
  customresourcedefinitions:
    owned:
    - {name: metas.example.com, version: v1, kind: Meta}
`
	const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: metas.example.com
spec:
  group: example.com
  names: {kind: Meta, plural: metas, singular: meta, listKind: MetaList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`
	content := fstest.MapFS{
		"metadata/annotations.yaml":                 {Data: []byte("annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.manifests.v1: manifests/\n  operators.operatorframework.io.bundle.metadata.v1: metadata/\n  operators.operatorframework.io.bundle.package.v1: meta\n  operators.operatorframework.io.bundle.channels.v1: stable\n")},
		"manifests/meta.clusterserviceversion.yaml": {Data: []byte(csv)},
		"manifests/metas.crd.yaml":                  {Data: []byte(crd)},
		"manifests/settings.yaml":                   {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: meta-settings\n")},
	}
	r, err := renderFS(t, content, nil, selfSigned)
	if err != nil {
		t.Fatal(err)
	}
	if r.count("Deployment") != 0 {
		t.Errorf("Deployments rendered for a CSV without any: %v", r.keys())
	}
	for _, k := range []string{"CustomResourceDefinition /metas.example.com", "ConfigMap " + fixtureNS + "/meta-settings"} {
		if !r.has(k) {
			t.Errorf("%s not rendered; got %v", k, r.keys())
		}
	}
}
