package controller

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// TestConfigMapSource uses the real ConfigMaps unpacker: the catalog is served, and editing the
// ConfigMap (no change to the Catalog) is picked up through the ConfigMap watch.
func TestConfigMapSource(t *testing.T) {
	const name = "from-configmaps"
	files := fooCatalog("2.0.0")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "foo-content", Namespace: namespace}, Data: map[string]string{}}
	for k, v := range files {
		cm.Data[strings.ReplaceAll(k, "/", "_")] = v
	}
	if err := env.client.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.client.Delete(t.Context(), cm) })

	cat := &catalogdv1alpha1.Catalog{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: catalogdv1alpha1.CatalogSpec{Source: rukpakv1alpha1.Source{
			Type:       rukpakv1alpha1.SourceTypeConfigMaps,
			ConfigMaps: []rukpakv1alpha1.ConfigMapSource{{ConfigMap: rukpakv1alpha1.ConfigMapReference{Name: cm.Name}, Path: "configs"}},
		}},
	}
	if err := env.client.Create(t.Context(), cat); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.client.Delete(t.Context(), cat) })

	got := waitFor(t, name, servingOK(1))
	hash1 := got.Status.ContentHash
	rs := got.Status.ResolvedSource
	if rs == nil || len(rs.ConfigMaps) != 1 || rs.ConfigMaps[0].Name != cm.Name || rs.ConfigMaps[0].ResourceVersion == "" {
		t.Errorf("resolvedSource = %+v", rs)
	}
	if code, _, body := httpGet(t, got.Status.ContentURL); code != 200 || !strings.Contains(body, "foo.v2.0.0") {
		t.Errorf("GET %s: %d", got.Status.ContentURL, code)
	}

	// Edit the ConfigMap: the Catalog's generation stays 1, the content changes.
	patch := client.MergeFrom(cm.DeepCopy())
	for k, v := range fooCatalog("2.1.0") {
		cm.Data[strings.ReplaceAll(k, "/", "_")] = v
	}
	if err := env.client.Patch(t.Context(), cm, patch); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for got.Status.ContentHash == hash1 {
		if time.Now().After(deadline) {
			t.Fatalf("the edited ConfigMap was not unpacked again:\n%s", statusString(got))
		}
		time.Sleep(200 * time.Millisecond)
		if err := env.client.Get(t.Context(), client.ObjectKey{Name: name}, got); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, name, servingOK(1))
	if code, _, body := httpGet(t, got.Status.ContentURL); code != 200 || !strings.Contains(body, "foo.v2.1.0") {
		t.Errorf("GET after the edit: %d", code)
	}
}
