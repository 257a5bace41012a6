package bundlerender

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	discoveryfake "k8s.io/client-go/discovery/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/apply"
)

const fixtures = "../../internal/provisioner"

func TestRenderRegistryV1(t *testing.T) {
	dir := filepath.Join(fixtures, "registryv1", "testdata", "sprockets")
	res, err := Render(t.Context(), dir, Options{Name: "sprockets", InstallNamespace: "operators"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Provisioner != rukpakv1alpha1.ProvisionerRegistry || !strings.Contains(res.Description, "install mode OwnNamespace (default") {
		t.Errorf("provisioner %s, description %q", res.Provisioner, res.Description)
	}
	out, err := YAML(res.Objects)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"olm.operatorNamespace: operators", apply.OwnerNameLabel + ": sprockets", "kind: CustomResourceDefinition"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("rendered YAML lacks %q", want)
		}
	}
	// Apply order: CRDs first, webhook configurations last; namespaced objects in the install namespace.
	if res.Objects[0].GetKind() != "CustomResourceDefinition" {
		t.Errorf("first object is %s, want the CRD", res.Objects[0].GetKind())
	}
	for _, u := range res.Objects {
		if u.GetKind() == "Deployment" && u.GetNamespace() != "operators" {
			t.Errorf("Deployment %s in namespace %q", u.GetName(), u.GetNamespace())
		}
	}
	// Deterministic: the same input gives the same stream.
	again, err := Render(t.Context(), dir, Options{Name: "sprockets", InstallNamespace: "operators"})
	if err != nil {
		t.Fatal(err)
	}
	out2, _ := YAML(again.Objects)
	if !bytes.Equal(out, out2) {
		t.Error("two renders of the same bundle differ")
	}

	// An unsupported watch-namespace set fails with the provisioner's own message.
	_, err = Render(t.Context(), dir, Options{InstallNamespace: "operators", Config: &rukpakv1alpha1.BundleConfig{WatchNamespaces: []string{"a", "b"}}})
	if err == nil || !strings.Contains(err.Error(), "MultiNamespace") {
		t.Errorf("MultiNamespace render: %v", err)
	}
}

func TestRenderOtherProvisioners(t *testing.T) {
	plainDir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(plainDir, "manifests"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(plainDir, "manifests", "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: b}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		dir  string
		cfg  *rukpakv1alpha1.BundleConfig
		want rukpakv1alpha1.ProvisionerClassName
	}{
		{name: "plain", dir: plainDir, want: rukpakv1alpha1.ProvisionerPlain},
		{name: "helm", dir: filepath.Join(fixtures, "helm", "testdata", "demo"), want: rukpakv1alpha1.ProvisionerHelm,
			cfg: &rukpakv1alpha1.BundleConfig{Values: &apiextensionsv1.JSON{Raw: []byte(`{}`)}}},
		{name: "kustomize", dir: filepath.Join(fixtures, "kustomize", "testdata", "demo"), want: rukpakv1alpha1.ProvisionerKustomize,
			cfg: &rukpakv1alpha1.BundleConfig{Path: "overlays/prod"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "kustomize" {
				if _, err := os.Stat(filepath.Join(tc.dir, "overlays", "prod")); err != nil {
					entries, _ := os.ReadDir(filepath.Join(tc.dir, "overlays"))
					if len(entries) == 0 {
						t.Fatalf("kustomize fixture has no overlays: %v", err)
					}
					tc.cfg.Path = "overlays/" + entries[0].Name()
				}
			}
			res, err := Render(t.Context(), tc.dir, Options{InstallNamespace: "apps", Config: tc.cfg})
			if err != nil {
				t.Fatal(err)
			}
			if res.Provisioner != tc.want || len(res.Objects) == 0 {
				t.Fatalf("provisioner %s (want %s), %d objects", res.Provisioner, tc.want, len(res.Objects))
			}
			for _, u := range res.Objects {
				if u.GetLabels()[apply.OwnerNameLabel] != "bundle" {
					t.Errorf("%s %s lacks the owner label: %v", u.GetKind(), u.GetName(), u.GetLabels())
				}
			}
		})
	}
}

func TestRenderRefusesValuesFrom(t *testing.T) {
	_, err := Render(t.Context(), t.TempDir(), Options{InstallNamespace: "apps",
		Config: &rukpakv1alpha1.BundleConfig{ValuesFrom: []rukpakv1alpha1.ValuesReference{{Kind: "Secret", Name: "v"}}}})
	if err == nil || !strings.Contains(err.Error(), "cannot be rendered offline") {
		t.Errorf("valuesFrom: %v", err)
	}
	if _, err := Render(t.Context(), t.TempDir(), Options{}); err == nil {
		t.Error("a render without an install namespace must fail")
	}
}

// With a Cluster the render reads it as rukpak does before rendering: the valuesFrom Secret, the
// cluster's version for .Capabilities, and the scope of a kind the bundle does not define.
func TestRenderGathersFromCluster(t *testing.T) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "vals", Namespace: "apps"},
		Data: map[string][]byte{"values.yaml": []byte("greeting: from-the-cluster\n")}}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Group: "tenancy.example.com", Version: "v1", Kind: "Tenant"}, meta.RESTScopeRoot)
	dc := kubefake.NewClientset().Discovery().(*discoveryfake.FakeDiscovery)
	dc.FakedServerVersion = &version.Info{GitVersion: "v1.37.2"}
	cluster := &Cluster{Reader: fake.NewClientBuilder().WithObjects(secret).Build(), Mapper: mapper, Discovery: dc}

	res, err := Render(t.Context(), filepath.Join(fixtures, "helm", "testdata", "demo"), Options{InstallNamespace: "apps", Cluster: cluster,
		Config: &rukpakv1alpha1.BundleConfig{ValuesFrom: []rukpakv1alpha1.ValuesReference{{Kind: "Secret", Name: "vals"}}}})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := YAML(res.Objects)
	if !bytes.Contains(out, []byte("greeting: from-the-cluster")) {
		t.Errorf("the valuesFrom Secret was not used:\n%s", out)
	}

	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "manifests"), 0o755); err != nil {
		t.Fatal(err)
	}
	tenant := "apiVersion: tenancy.example.com/v1\nkind: Tenant\nmetadata: {name: acme}\n"
	if err := os.WriteFile(filepath.Join(dir, "manifests", "t.yaml"), []byte(tenant), 0o644); err != nil {
		t.Fatal(err)
	}
	for c, wantNS := range map[*Cluster]string{nil: "apps", cluster: ""} {
		res, err := Render(t.Context(), dir, Options{InstallNamespace: "apps", Cluster: c})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Objects[0].GetNamespace(); got != wantNS {
			t.Errorf("cluster %v: Tenant in namespace %q, want %q", c != nil, got, wantNS)
		}
	}
}
