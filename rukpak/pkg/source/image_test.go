package source

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
	"github.com/olmv1/olmv1/rukpak/pkg/source/sourcetest"
)

func imageSrc(ref string) rukpakv1alpha1.Source {
	return rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: ref}}
}

func catalogImage(t testing.TB, dir string) v1.Image {
	t.Helper()
	img, err := imagebuild.CatalogImage(filepath.Join("testdata", dir))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

var catalogOpts = Options{ImageDir: "configs", Namespace: testNamespace}

// A catalog image by tag: resolved to its digest, only /configs extracted; asked again, it is
// neither pulled nor (for a digest reference) even resolved again.
func TestImageCatalogByTagThenFromCache(t *testing.T) {
	reg := sourcetest.NewRegistry(t)
	digest := reg.Push(t, catalogImage(t, "catalog"), "catalogs/demo:v1")
	u := newTestUnpacker(t, nil)

	res, err := u.Unpack(ctx(t), "catalog/demo", imageSrc(reg.Ref("catalogs/demo:v1")), catalogOpts)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.ResolvedSource.Image.Ref; got != digest.String() {
		t.Errorf("resolved %s, want %s", got, digest)
	}
	if res.Unchanged {
		t.Error("first unpack reported Unchanged")
	}
	wantTree(t, res.Dir, "catalog.json="+readFile(t, "testdata/catalog/catalog.json"))

	reg.ResetRequests()
	again, err := u.Unpack(ctx(t), "catalog/demo", imageSrc(reg.Ref("catalogs/demo:v1")), Options{ImageDir: "configs", Previous: &res.ResolvedSource})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Unchanged || again.Dir != res.Dir {
		t.Errorf("second unpack: Unchanged=%v Dir=%s, want true and %s", again.Unchanged, again.Dir, res.Dir)
	}
	if n := reg.CountRequests("/blobs/"); n != 0 {
		t.Errorf("second unpack fetched %d blobs, want 0 (requests: %q)", n, reg.Requests())
	}

	// By digest, from another key: the cached entry is shared and the registry is not asked at all.
	reg.ResetRequests()
	byDigest, err := u.Unpack(ctx(t), "catalog/other", imageSrc(digest.String()), catalogOpts)
	if err != nil {
		t.Fatal(err)
	}
	if byDigest.Dir != res.Dir || len(reg.Requests()) != 0 {
		t.Errorf("digest unpack: Dir=%s (want %s), requests %q (want none)", byDigest.Dir, res.Dir, reg.Requests())
	}
}

// A new process on the same cache directory finds earlier content.
func TestImageCacheSurvivesRestart(t *testing.T) {
	reg := sourcetest.NewRegistry(t)
	digest := reg.Push(t, catalogImage(t, "catalog"), "catalogs/demo:v1")
	dir := t.TempDir()
	u1, err := New(Config{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	first, err := u1.Unpack(ctx(t), "catalog/demo", imageSrc(digest.String()), catalogOpts)
	if err != nil {
		t.Fatal(err)
	}
	reg.ResetRequests()
	u2, err := New(Config{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	second, err := u2.Unpack(ctx(t), "catalog/demo", imageSrc(digest.String()), Options{ImageDir: "configs", Previous: &first.ResolvedSource})
	if err != nil {
		t.Fatal(err)
	}
	if !second.Unchanged || second.Dir != first.Dir || len(reg.Requests()) != 0 {
		t.Errorf("after restart: Unchanged=%v Dir=%s requests=%q; want true, %s, none", second.Unchanged, second.Dir, reg.Requests(), first.Dir)
	}
}

// When a tag moves, the new digest is pulled and the old entry is collected once no key uses it;
// Cleanup removes what only that key used.
func TestImageTagMovesAndGarbageCollection(t *testing.T) {
	reg := sourcetest.NewRegistry(t)
	d1 := reg.Push(t, catalogImage(t, "catalog"), "catalogs/demo:latest")
	u := newTestUnpacker(t, nil)
	src := imageSrc(reg.Ref("catalogs/demo:latest"))
	first, err := u.Unpack(ctx(t), "catalog/a", src, catalogOpts)
	if err != nil {
		t.Fatal(err)
	}
	pinned, err := u.Unpack(ctx(t), "catalog/b", imageSrc(d1.String()), catalogOpts)
	if err != nil {
		t.Fatal(err)
	}

	d2 := reg.Push(t, catalogImage(t, "catalog-v2"), "catalogs/demo:latest")
	second, err := u.Unpack(ctx(t), "catalog/a", src, Options{ImageDir: "configs", Previous: &first.ResolvedSource})
	if err != nil {
		t.Fatal(err)
	}
	if second.Unchanged || second.ResolvedSource.Image.Ref != d2.String() {
		t.Fatalf("after the tag moved: Unchanged=%v resolved=%s, want false and %s", second.Unchanged, second.ResolvedSource.Image.Ref, d2)
	}
	wantTree(t, second.Dir, "catalog.json="+readFile(t, "testdata/catalog-v2/catalog.json"))
	if _, err := os.Stat(first.Dir); err != nil {
		t.Errorf("the old digest is still used by catalog/b but was removed: %v", err)
	}

	if err := u.Cleanup(ctx(t), "catalog/b"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pinned.Dir); !os.IsNotExist(err) {
		t.Errorf("after Cleanup of its last user, %s still exists (%v)", pinned.Dir, err)
	}
	if err := u.Prune(ctx(t), func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(filepath.Join(u.cache.dir, imagesDir)); len(entries) != 0 {
		t.Errorf("after Prune the image cache holds %d digests, want 0", len(entries))
	}
}

func TestImagePlainBundleRoot(t *testing.T) {
	reg := sourcetest.NewRegistry(t)
	img, err := imagebuild.PlainBundleImage("testdata/plain")
	if err != nil {
		t.Fatal(err)
	}
	reg.Push(t, img, "bundles/plain:v1")
	res, err := newTestUnpacker(t, nil).Unpack(ctx(t), "bundledeployment/plain", imageSrc(reg.Ref("bundles/plain:v1")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	wantTree(t, res.Dir, "manifests/", "manifests/configmap.yaml="+readFile(t, "testdata/plain/manifests/configmap.yaml"))
}

// A Helm chart stored as an OCI artifact is unpacked as its chart directory.
func TestImageHelmChart(t *testing.T) {
	reg := sourcetest.NewRegistry(t)
	chart, err := imagebuild.HelmChartArtifact("testdata/chart")
	if err != nil {
		t.Fatal(err)
	}
	reg.Push(t, chart, "charts/demo-chart:0.1.0")
	u := newTestUnpacker(t, nil)
	res, err := u.Unpack(ctx(t), "bundledeployment/chart", imageSrc(reg.Ref("charts/demo-chart:0.1.0")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	wantTree(t, res.Dir,
		"Chart.yaml="+readFile(t, "testdata/chart/Chart.yaml"),
		"values.yaml="+readFile(t, "testdata/chart/values.yaml"),
		"templates/", "templates/configmap.yaml="+readFile(t, "testdata/chart/templates/configmap.yaml"))

	_, err = u.Unpack(ctx(t), "catalog/chart", imageSrc(reg.Ref("charts/demo-chart:0.1.0")), catalogOpts)
	wantError(t, err, KindInvalidContent, "is a Helm chart, which has no /configs directory", "check spec.source.image.ref")
}

func TestImageWithoutTheImageDir(t *testing.T) {
	reg := sourcetest.NewRegistry(t)
	img, _ := imagebuild.PlainBundleImage("testdata/plain")
	reg.Push(t, img, "bundles/plain:v1")
	_, err := newTestUnpacker(t, nil).Unpack(ctx(t), "catalog/x", imageSrc(reg.Ref("bundles/plain:v1")), catalogOpts)
	wantError(t, err, KindInvalidContent, "has no /configs directory", "check spec.source.image.ref")
}

// An image index yields the image of the configured platform.
func TestImageIndexPicksPlatform(t *testing.T) {
	reg := sourcetest.NewRegistry(t)
	amd := image(t, layer(t, file("configs/arch", "amd64")))
	arm := image(t, layer(t, file("configs/arch", "arm64")))
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}},
	)
	pushIndex(t, reg, idx, "catalogs/multi:v1")
	u := newTestUnpacker(t, nil, func(c *Config) { c.Platform = &v1.Platform{OS: "linux", Architecture: "arm64"} })
	res, err := u.Unpack(ctx(t), "catalog/multi", imageSrc(reg.Ref("catalogs/multi:v1")), catalogOpts)
	if err != nil {
		t.Fatal(err)
	}
	wantTree(t, res.Dir, "arch=arm64")
	if d, _ := idx.Digest(); !strings.HasSuffix(res.ResolvedSource.Image.Ref, d.String()) {
		t.Errorf("resolved %s, want the index digest %s", res.ResolvedSource.Image.Ref, d)
	}
}

func TestImageErrors(t *testing.T) {
	reg := sourcetest.NewRegistry(t)
	u := newTestUnpacker(t, nil)

	_, err := u.Unpack(ctx(t), "catalog/x", imageSrc(reg.Ref("catalogs/missing:v1")), catalogOpts)
	e := wantError(t, err, KindNotFound, `image "`+reg.Ref("catalogs/missing:v1")+`" not found in registry `+reg.Host+` (check spec.source.image.ref)`)
	if !e.Retryable {
		t.Error("a missing tag may be pushed later: want retryable")
	}

	_, err = u.Unpack(ctx(t), "catalog/x", imageSrc("Not A Reference!"), catalogOpts)
	if e := wantError(t, err, KindInvalidSource, `image "Not A Reference!" is not a valid image reference`, "check spec.source.image.ref"); e.Retryable {
		t.Error("an invalid reference cannot be fixed by retrying")
	}

	_, err = u.Unpack(ctx(t), "catalog/x", rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage}, catalogOpts)
	wantError(t, err, KindInvalidSource, "spec.source.image is required")
}

func TestImageRegistryRequiringAuth(t *testing.T) {
	reg := sourcetest.NewRegistry(t, sourcetest.WithBasicAuth("puller", "s3cret"))
	reg.Push(t, catalogImage(t, "catalog"), "private/catalog:v1")
	secret := func(name string, typ corev1.SecretType, data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace}, Type: typ, Data: data}
	}
	c := fakeClient(
		secret("good", corev1.SecretTypeDockerConfigJson, map[string][]byte{corev1.DockerConfigJsonKey: reg.DockerConfigJSON("puller", "s3cret")}),
		secret("wrong", corev1.SecretTypeDockerConfigJson, map[string][]byte{corev1.DockerConfigJsonKey: reg.DockerConfigJSON("puller", "nope")}),
		secret("opaque", corev1.SecretTypeOpaque, map[string][]byte{"x": []byte("y")}),
	)
	u := newTestUnpacker(t, c)
	ref := reg.Ref("private/catalog:v1")
	withSecret := func(name string) rukpakv1alpha1.Source {
		s := imageSrc(ref)
		s.Image.PullSecret = name
		return s
	}

	_, err := u.Unpack(ctx(t), "catalog/p", imageSrc(ref), catalogOpts)
	wantError(t, err, KindUnauthorized, "registry "+reg.Host+" refused access", "401", "set spec.source.image.pullSecret")

	_, err = u.Unpack(ctx(t), "catalog/p", withSecret("wrong"), catalogOpts)
	wantError(t, err, KindUnauthorized, `check the credentials for `+reg.Host+` in Secret "wrong"`)

	_, err = u.Unpack(ctx(t), "catalog/p", withSecret("absent"), catalogOpts)
	wantError(t, err, KindNotFound, `Secret "absent" not found in namespace "olmv1-system"`, "spec.source.image.pullSecret")

	_, err = u.Unpack(ctx(t), "catalog/p", withSecret("opaque"), catalogOpts)
	if e := wantError(t, err, KindInvalidSource, `Secret "opaque" has type "Opaque"`, "kubernetes.io/dockerconfigjson"); !e.Retryable {
		t.Error("fixing the Secret fixes this: want retryable")
	}

	res, err := u.Unpack(ctx(t), "catalog/p", withSecret("good"), catalogOpts)
	if err != nil {
		t.Fatal(err)
	}
	wantTree(t, res.Dir, "catalog.json="+readFile(t, "testdata/catalog/catalog.json"))
}

// Bytes that do not match their digest are refused, whether a layer or the manifest.
func TestImageDigestMismatch(t *testing.T) {
	reg := sourcetest.NewRegistry(t)
	img := image(t, layer(t, file("configs/catalog.json", `{"schema":"olm.package","name":"x"}`)))
	digest := reg.Push(t, img, "catalogs/tampered:v1")
	layers, _ := img.Layers()
	ld, _ := layers[0].Digest()
	blob := readAll(t, layers[0])
	blob[len(blob)/2] ^= 0xff // same size, one byte flipped
	reg.TamperBlob("catalogs/tampered", ld, blob)
	u := newTestUnpacker(t, nil)
	_, err := u.Unpack(ctx(t), "catalog/t", imageSrc(digest.String()), catalogOpts)
	wantError(t, err, KindDigestMismatch, "does not match its digest")
	assertCacheEmpty(t, u)

	other := image(t, layer(t, file("configs/catalog.json", "{}")))
	raw, _ := other.RawManifest()
	reg.TamperManifest("catalogs/tampered", digest.DigestStr(), raw)
	_, err = u.Unpack(ctx(t), "catalog/t", imageSrc(digest.String()), catalogOpts)
	wantError(t, err, KindDigestMismatch, "does not match its digest")
}

// A blob of another size is caught too.
func TestImageBlobOfWrongSize(t *testing.T) {
	reg := sourcetest.NewRegistry(t)
	img := image(t, layer(t, file("configs/catalog.json", "{}")))
	digest := reg.Push(t, img, "catalogs/short:v1")
	layers, _ := img.Layers()
	ld, _ := layers[0].Digest()
	reg.TamperBlob("catalogs/short", ld, []byte("short"))
	_, err := newTestUnpacker(t, nil).Unpack(ctx(t), "catalog/s", imageSrc(digest.String()), catalogOpts)
	wantError(t, err, KindDigestMismatch, "does not match its digest")
}

func TestImageRegistryTimeout(t *testing.T) {
	reg := sourcetest.NewRegistry(t)
	reg.Hang(true)
	u := newTestUnpacker(t, nil, func(c *Config) { c.Timeout = 300 * time.Millisecond })
	start := time.Now()
	_, err := u.Unpack(ctx(t), "catalog/slow", imageSrc(reg.Ref("catalogs/slow:v1")), catalogOpts)
	e := wantError(t, err, KindUnreachable, "timed out after 300ms", "registry "+reg.Host)
	if !e.Retryable {
		t.Error("a timeout is retryable")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("gave up after %s, want about 300ms", d)
	}
}

// Hostile layers are refused as a whole and leave nothing in the cache.
func TestImageHostileLayers(t *testing.T) {
	reg := sourcetest.NewRegistry(t)
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestSpeed)
	// A 64 MiB file of zeros compresses to about 64 KiB.
	hdr := tarHeaderBytes(t, "configs/bomb", 64<<20)
	_, _ = zw.Write(hdr)
	zeros := make([]byte, 1<<20)
	for range 64 {
		_, _ = zw.Write(zeros)
	}
	_ = zw.Close()
	bombLayer := static.NewLayer(bomb.Bytes(), types.DockerLayer)

	for _, tc := range []struct {
		name    string
		img     v1.Image
		kind    Kind
		message string
	}{
		{"symlink escape", image(t, layer(t, file("configs/ok.json", "{}"), symlink("configs/passwd", "../../../etc/passwd"))), KindInvalidContent, `symlink "passwd" points to "../../../etc/passwd", outside of the content directory`},
		{"path traversal", image(t, layer(t, file("configs/../../../tmp/evil", "x"))), KindInvalidContent, "'..' element"},
		{"decompression bomb", image(t, bombLayer), KindTooLarge, "decompression bomb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := newTestUnpacker(t, nil, func(c *Config) { c.Limits.MaxBytes = 8 << 20 })
			reg.Push(t, tc.img, "catalogs/hostile:"+strings.ReplaceAll(tc.name, " ", "-"))
			_, err := u.Unpack(ctx(t), "catalog/h", imageSrc(reg.Ref("catalogs/hostile:"+strings.ReplaceAll(tc.name, " ", "-"))), catalogOpts)
			wantError(t, err, tc.kind, tc.message, `image "`+reg.Ref("catalogs/hostile:"))
			assertCacheEmpty(t, u)
		})
	}
}

func readAll(t testing.TB, l v1.Layer) []byte {
	t.Helper()
	rc, err := l.Compressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(rc); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func assertCacheEmpty(t *testing.T, u *DiskUnpacker) {
	t.Helper()
	for _, d := range []string{imagesDir, keysDir, tmpDir} {
		if entries, _ := os.ReadDir(filepath.Join(u.cache.dir, d)); len(entries) != 0 {
			t.Errorf("cache directory %s is not empty after a failed unpack: %v", d, entries)
		}
	}
}

// A registry that accepts the connection and never answers is reported after ResponseTimeout, well
// before Timeout: the worker is freed for the other bundles (issue 36's head-of-line benchmark).
func TestImageRegistryNeverAnswers(t *testing.T) {
	reg := sourcetest.NewRegistry(t)
	reg.Hang(true)
	u := newTestUnpacker(t, nil, func(c *Config) { c.Timeout, c.ResponseTimeout = time.Minute, 200*time.Millisecond })
	start := time.Now()
	_, err := u.Unpack(ctx(t), "catalog/hung", imageSrc(reg.Ref("catalogs/hung:v1")), catalogOpts)
	e := wantError(t, err, KindUnreachable, "registry "+reg.Host, "accepted the connection", "did not answer within 200ms", "will retry with backoff")
	if !e.Retryable {
		t.Error("a registry that does not answer is retryable")
	}
	// go-containerregistry retries a timed-out request a few times (about 4 s of backoff in all).
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("gave up after %s, want a few seconds (Timeout is a minute)", d)
	}
}
