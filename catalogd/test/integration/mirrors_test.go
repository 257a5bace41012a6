package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/catalogd/internal/storage"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
	"github.com/olmv1/olmv1/rukpak/pkg/source/mirrors"
	"github.com/olmv1/olmv1/rukpak/pkg/source/sourcetest"
)

// mirrorsLabel scopes this test's manager to its own Catalogs.
const mirrorsLabel = "test.olmv1.io/mirrors"

// A Catalog whose registry is blocked by catalogd's registries.conf, reconciled by catalogd's
// Catalog reconciler with the real unpacker against this package's kube-apiserver: the catalog is
// pulled from the mirror, the blocked registry gets no request, status.resolvedSource keeps the
// original repository at the digest and names the mirror, and so does the Unpacked condition.
func TestCatalogFromRegistryMirror(t *testing.T) {
	src := sourcetest.NewRegistry(t)
	mirror := sourcetest.NewRegistry(t)
	img, err := imagebuild.CatalogImage(filepath.Join("..", "..", "..", "rukpak", "pkg", "source", "testdata", "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	digest := mirror.Push(t, img, "mirrored/catalogs/demo:v1").DigestStr()
	tmp := t.TempDir()
	conf := filepath.Join(tmp, "registries.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("[[registry]]\nlocation = %q\nblocked = true\n[[registry.mirror]]\nlocation = %q\n",
		src.Host+"/catalogs", mirror.Host+"/mirrored/catalogs")), 0o644); err != nil {
		t.Fatal(err)
	}
	store, err := storage.New(filepath.Join(tmp, "storage"))
	if err != nil {
		t.Fatal(err)
	}
	unpacker, err := source.New(source.Config{CacheDir: filepath.Join(tmp, "cache"), Client: suite.Client, Mirrors: &mirrors.Provider{File: conf}})
	if err != nil {
		t.Fatal(err)
	}
	startCatalogManager(t, mirrorsLabel, unpacker, store, "")

	ref := src.Host + "/catalogs/demo@" + digest
	const name = "from-mirror"
	cat := &catalogdv1alpha1.Catalog{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{mirrorsLabel: "true"}},
		Spec: catalogdv1alpha1.CatalogSpec{Source: rukpakv1alpha1.Source{
			Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: ref},
		}},
	}
	if err := suite.Client.Create(t.Context(), cat); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = suite.Client.Delete(context.Background(), cat)
		pollUntil(t, 30*time.Second, "the Catalog is gone", func() (bool, string) {
			err := suite.Client.Get(context.Background(), client.ObjectKey{Name: name}, &catalogdv1alpha1.Catalog{})
			return err != nil, fmt.Sprint(err)
		})
	})
	var got catalogdv1alpha1.Catalog
	pollUntil(t, 30*time.Second, "the Catalog is unpacked", func() (bool, string) {
		if err := suite.Client.Get(t.Context(), client.ObjectKey{Name: name}, &got); err != nil {
			return false, err.Error()
		}
		return meta.IsStatusConditionTrue(got.Status.Conditions, catalogdv1alpha1.TypeUnpacked), fmt.Sprintf("%+v", got.Status.Conditions)
	})
	rs := got.Status.ResolvedSource
	wantMirror := mirror.Host + "/mirrored/catalogs/demo@" + digest
	if rs == nil || rs.Image == nil || rs.Image.Ref != ref || rs.Image.Mirror != wantMirror {
		t.Fatalf("status.resolvedSource %+v, want image.ref %s and image.mirror %s", rs, ref, wantMirror)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, catalogdv1alpha1.TypeUnpacked); !strings.Contains(c.Message, "pulled from mirror "+wantMirror) {
		t.Errorf("Unpacked message %q does not name the mirror", c.Message)
	}
	if n := len(src.Requests()); n != 0 {
		t.Errorf("the blocked registry got %d requests: %q", n, src.Requests())
	}
	t.Logf("Unpacked: %s", meta.FindStatusCondition(got.Status.Conditions, catalogdv1alpha1.TypeUnpacked).Message)
}
