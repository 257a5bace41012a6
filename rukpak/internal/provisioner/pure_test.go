package provisioner_test

import (
	"context"
	"os"
	"testing"
	"testing/fstest"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/helm"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/plain"
)

// TestRenderersReadOnlyTheRequest: renderers built without any client, mapper or discovery render
// what depends on the cluster (helm valuesFrom and .Capabilities, the scope of a custom resource
// whose CRD someone else installed) from what the Request carries, so Render reads nothing else.
func TestRenderersReadOnlyTheRequest(t *testing.T) {
	ctx := context.Background()
	objs, err := helm.New().Render(ctx, provisioner.Request{
		Content: os.DirFS("helm/testdata/demo"), Name: "rel", InstallNamespace: "ns",
		Config:       &rukpakv1alpha1.BundleConfig{ValuesFrom: []rukpakv1alpha1.ValuesReference{{Kind: "Secret", Name: "vals"}}},
		ValuesFrom:   []provisioner.ValuesDocument{{Exists: true, Found: true, Data: []byte("greeting: gathered\n")}},
		Capabilities: &provisioner.Capabilities{KubeVersion: "v1.37.2"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if cm := find(objs, "ConfigMap", "rel-demo"); cm == nil || cm.Object["data"].(map[string]any)["greeting"] != "gathered" {
		t.Errorf("helm: the gathered valuesFrom document was not used: %v", cm)
	}
	// The demo chart needs Kubernetes >= 1.20: the gathered version is what it is checked against.
	_, err = helm.New().Render(ctx, provisioner.Request{Content: os.DirFS("helm/testdata/demo"), Name: "rel", InstallNamespace: "ns",
		Capabilities: &provisioner.Capabilities{KubeVersion: "v1.19.0"}})
	if err == nil {
		t.Error("helm: a gathered Kubernetes version the chart excludes was not checked")
	}

	bundle := fstest.MapFS{"manifests/t.yaml": {Data: []byte("apiVersion: tenancy.example.com/v1\nkind: Tenant\nmetadata: {name: acme}\n")}}
	for scope, wantNS := range map[bool]string{false: "", true: "ns"} {
		objs, err = plain.New().Render(ctx, provisioner.Request{Content: bundle, Name: "bd", InstallNamespace: "ns",
			Scopes: map[schema.GroupKind]bool{{Group: "tenancy.example.com", Kind: "Tenant"}: scope}})
		if err != nil {
			t.Fatal(err)
		}
		if got := objs[0].GetNamespace(); got != wantNS {
			t.Errorf("plain: Tenant gathered as namespaced=%v is in namespace %q, want %q", scope, got, wantNS)
		}
	}
}

func find(objs []client.Object, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if u, ok := o.(*unstructured.Unstructured); ok && u.GetKind() == kind && u.GetName() == name {
			return u
		}
	}
	return nil
}
