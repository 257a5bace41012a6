package source

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
	"github.com/olmv1/olmv1/rukpak/pkg/source/mirrors"
	"github.com/olmv1/olmv1/rukpak/pkg/source/sourcetest"
)

// installMirrorSetCRDs installs testdata/mirrorsets-crds.yaml and waits until both are Established.
func installMirrorSetCRDs(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "mirrorsets-crds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict([]byte(doc), crd); err != nil {
			t.Fatal(err)
		}
		if err := k8sClient.Create(testCtx(t), crd); err != nil {
			t.Fatalf("creating CRD %s: %v", crd.Name, err)
		}
		t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), crd) })
		err := wait.PollUntilContextTimeout(testCtx(t), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			got := &apiextensionsv1.CustomResourceDefinition{}
			if err := k8sClient.Get(ctx, client.ObjectKey{Name: crd.Name}, got); err != nil {
				return false, err
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("CRD %s not Established: %v", crd.Name, err)
		}
	}
}

func mirrorSet(kind, name, source, policy string, mirrorLocations ...string) *unstructured.Unstructured {
	field := "imageDigestMirrors"
	if kind == mirrors.KindImageTagMirrorSet {
		field = "imageTagMirrors"
	}
	ms := make([]any, 0, len(mirrorLocations))
	for _, m := range mirrorLocations {
		ms = append(ms, m)
	}
	entry := map[string]any{"source": source, "mirrors": ms}
	if policy != "" {
		entry["mirrorSourcePolicy"] = policy
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{field: []any{entry}}}}
	u.SetAPIVersion(mirrors.ConfigGroupVersion.String())
	u.SetKind(kind)
	u.SetName(name)
	return u
}

// ImageDigestMirrorSets and ImageTagMirrorSets from a real API server: absent API, then a digest
// reference pulled from the digest mirror with the source never contacted (NeverContactSource), a
// tag reference refused while only the digest mirror set exists, and pulled from the tag mirror
// once an ImageTagMirrorSet names one. The same client (and RESTMapper) is used throughout, as a
// controller that started before the CRDs were installed would.
func TestImageMirrorSetsFromTheAPIServer(t *testing.T) {
	src := sourcetest.NewRegistry(t)
	digestMirror := sourcetest.NewRegistry(t)
	tagMirror := sourcetest.NewRegistry(t)
	img, err := imagebuild.CatalogImage(filepath.Join(testdata, "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	digest := digestMirror.Push(t, img, "mirrored/catalogs/demo:v1")
	tagMirror.Push(t, img, "tags/catalogs/demo:v1")

	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	provider := &mirrors.Provider{Reader: k8sClient, TTL: time.Minute, Now: func() time.Time { return now }}
	if cfg, err := provider.Config(testCtx(t)); err != nil || cfg != nil {
		t.Fatalf("before the CRDs exist: %+v, %v; want no configuration and no error", cfg, err)
	}

	installMirrorSetCRDs(t)
	for _, o := range []*unstructured.Unstructured{
		mirrorSet(mirrors.KindImageDigestMirrorSet, "catalogs", src.Host+"/catalogs", mirrors.NeverContactSource, digestMirror.Host+"/mirrored/catalogs"),
	} {
		if err := k8sClient.Create(testCtx(t), o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), o) })
	}
	now = now.Add(time.Minute) // the TTL of the empty list has passed
	u, err := source.New(source.Config{CacheDir: t.TempDir(), Client: k8sClient, Mirrors: provider})
	if err != nil {
		t.Fatal(err)
	}
	catalogOpts := source.Options{ImageDir: "configs", Namespace: namespace}
	src.ResetRequests()

	ref := src.Host + "/catalogs/demo@" + digest.DigestStr()
	res, err := u.Unpack(testCtx(t), "catalog/demo", rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: ref}}, catalogOpts)
	if err != nil {
		t.Fatal(err)
	}
	if res.ResolvedSource.Image.Ref != ref || res.ResolvedSource.Image.Mirror != digest.String() {
		t.Errorf("resolved %+v, want ref %s and mirror %s", res.ResolvedSource.Image, ref, digest)
	}

	tagRef := src.Ref("catalogs/demo:v1")
	tagSrc := rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: tagRef}}
	_, err = u.Unpack(testCtx(t), "catalog/tag", tagSrc, catalogOpts)
	wantKind(t, err, source.KindInvalidSource, `repository `+src.Host+`/catalogs is blocked by ImageDigestMirrorSet "catalogs" (mirrorSourcePolicy NeverContactSource)`,
		"no mirror serves this tag reference", "(digest-only, from ImageDigestMirrorSet \"catalogs\")")

	itms := mirrorSet(mirrors.KindImageTagMirrorSet, "catalog-tags", src.Host+"/catalogs", "", tagMirror.Host+"/tags/catalogs")
	if err := k8sClient.Create(testCtx(t), itms); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), itms) })
	now = now.Add(time.Minute)
	res, err = u.Unpack(testCtx(t), "catalog/tag", tagSrc, catalogOpts)
	if err != nil {
		t.Fatal(err)
	}
	if want := src.Host + "/catalogs/demo@" + digest.DigestStr(); res.ResolvedSource.Image.Ref != want ||
		res.ResolvedSource.Image.Mirror != tagMirror.Host+"/tags/catalogs/demo@"+digest.DigestStr() {
		t.Errorf("tag resolved %+v, want ref %s from the tag mirror %s", res.ResolvedSource.Image, want, tagMirror.Host)
	}
	if n := len(src.Requests()); n != 0 {
		t.Errorf("the source (NeverContactSource) got %d requests: %q", n, src.Requests())
	}
}
