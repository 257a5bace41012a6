package source

import (
	"context"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
	"github.com/olmv1/olmv1/rukpak/pkg/source/sourcetest"
)

const testdata = "../../../pkg/source/testdata"

func newUnpacker(t *testing.T, c client.Reader) *source.DiskUnpacker {
	t.Helper()
	u, err := source.New(source.Config{CacheDir: t.TempDir(), Client: c})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx
}

// create creates obj in the API server and deletes it when the test ends.
func create(t *testing.T, obj client.Object) {
	t.Helper()
	obj.SetNamespace(namespace)
	if err := k8sClient.Create(testCtx(t), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), obj) })
}

func read(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func wantKind(t *testing.T, err error, kind source.Kind, fragments ...string) {
	t.Helper()
	var e *source.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want a *source.Error of kind %s", err, kind)
	}
	if e.Kind != kind {
		t.Fatalf("got kind %s, want %s: %v", e.Kind, kind, e)
	}
	for _, f := range fragments {
		if !strings.Contains(e.Message, f) {
			t.Errorf("message %q does not contain %q", e.Message, f)
		}
	}
}

// The seed example, as written in a Catalog's spec.source, read from a real API server; when the
// ConfigMap changes, its new resourceVersion brings new content.
func TestSeedExampleConfigMap(t *testing.T) {
	var src rukpakv1alpha1.Source
	seed := `{type: ConfigMaps, configMaps: [{configMap: {name: my-catalog-content}, path: configs}]}`
	if err := yaml.Unmarshal([]byte(seed), &src); err != nil {
		t.Fatal(err)
	}
	catalog := read(t, filepath.Join(testdata, "catalog/catalog.json"))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "my-catalog-content"}, Data: map[string]string{"catalog.json": catalog}}
	create(t, cm)

	u := newUnpacker(t, k8sClient)
	opts := source.Options{ImageDir: "configs", Namespace: namespace}
	res, err := u.Unpack(testCtx(t), "catalog/seed", src, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(res.Dir, "configs", "catalog.json")); got != catalog {
		t.Errorf("configs/catalog.json = %q, want the ConfigMap's catalog.json", got)
	}
	rv := res.ResolvedSource.ConfigMaps[0]
	if rv.Name != "my-catalog-content" || rv.ResourceVersion != cm.ResourceVersion {
		t.Errorf("resolved %+v, want resourceVersion %s", rv, cm.ResourceVersion)
	}

	opts.Previous = &res.ResolvedSource
	same, err := u.Unpack(testCtx(t), "catalog/seed", src, opts)
	if err != nil || !same.Unchanged {
		t.Fatalf("unchanged ConfigMap: Unchanged=%v err=%v", same != nil && same.Unchanged, err)
	}

	cm.Data["catalog.json"] = read(t, filepath.Join(testdata, "catalog-v2/catalog.json"))
	if err := k8sClient.Update(testCtx(t), cm); err != nil {
		t.Fatal(err)
	}
	updated, err := u.Unpack(testCtx(t), "catalog/seed", src, opts)
	if err != nil {
		t.Fatal(err)
	}
	if updated.Unchanged || read(t, filepath.Join(updated.Dir, "configs", "catalog.json")) != cm.Data["catalog.json"] {
		t.Errorf("after the ConfigMap changed: Unchanged=%v, content not updated", updated.Unchanged)
	}
}

func TestConfigMapBinaryData(t *testing.T) {
	payload := []byte{0x1f, 0x8b, 0x00, 0xff, 0xfe}
	create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "binary-content"},
		Data: map[string]string{"README.md": "text"}, BinaryData: map[string][]byte{"blob.bin": payload}})
	src := rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeConfigMaps, ConfigMaps: []rukpakv1alpha1.ConfigMapSource{
		{ConfigMap: rukpakv1alpha1.ConfigMapReference{Name: "binary-content"}, Path: "manifests"},
	}}
	res, err := newUnpacker(t, k8sClient).Unpack(testCtx(t), "bundledeployment/binary", src, source.Options{Namespace: namespace})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(res.Dir, "manifests", "blob.bin")); got != string(payload) {
		t.Errorf("blob.bin = %x, want %x", got, payload)
	}
	if got := read(t, filepath.Join(res.Dir, "manifests", "README.md")); got != "text" {
		t.Errorf("README.md = %q", got)
	}
}

// A missing ConfigMap is a retryable NotFound that names it and the spec field; once it is
// created, the same spec unpacks.
func TestMissingConfigMap(t *testing.T) {
	src := rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeConfigMaps, ConfigMaps: []rukpakv1alpha1.ConfigMapSource{
		{ConfigMap: rukpakv1alpha1.ConfigMapReference{Name: "late-content"}, Path: "configs"},
	}}
	u := newUnpacker(t, k8sClient)
	_, err := u.Unpack(testCtx(t), "catalog/late", src, source.Options{Namespace: namespace})
	wantKind(t, err, source.KindNotFound, `ConfigMap "late-content" not found in namespace "olmv1-system"`, "spec.source.configMaps[0].configMap.name")
	if !source.IsRetryable(err) {
		t.Error("want retryable")
	}
	create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late-content"}, Data: map[string]string{"catalog.json": "{}"}})
	if _, err := u.Unpack(testCtx(t), "catalog/late", src, source.Options{Namespace: namespace}); err != nil {
		t.Fatal(err)
	}
}

// A controller whose RBAC does not allow reading ConfigMaps gets an Unauthorized error saying so.
func TestConfigMapForbidden(t *testing.T) {
	create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "guarded"}, Data: map[string]string{"a": "b"}})
	impersonated := rest.CopyConfig(cfg)
	impersonated.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:olmv1-system:no-rights"}
	c, err := client.New(impersonated, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	src := rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeConfigMaps, ConfigMaps: []rukpakv1alpha1.ConfigMapSource{
		{ConfigMap: rukpakv1alpha1.ConfigMapReference{Name: "guarded"}},
	}}
	_, err = newUnpacker(t, c).Unpack(testCtx(t), "catalog/guarded", src, source.Options{Namespace: namespace})
	wantKind(t, err, source.KindUnauthorized, `the controller may not read ConfigMap "guarded" in namespace "olmv1-system" (check its RBAC)`)
}

// A pull secret of type kubernetes.io/dockerconfigjson, as `kubectl create secret docker-registry`
// makes it, opens a registry that requires authentication.
func TestPullSecretFromDockerConfigJSON(t *testing.T) {
	reg := sourcetest.NewRegistry(t, sourcetest.WithBasicAuth("puller", "pa55"))
	img, err := imagebuild.CatalogImage(filepath.Join(testdata, "catalog"))
	if err != nil {
		t.Fatal(err)
	}
	digest := reg.Push(t, img, "private/catalog:v1")
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "registry-creds"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: reg.DockerConfigJSON("puller", "pa55")}})
	rotated := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "rotated-creds"}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: reg.DockerConfigJSON("puller", "old")}}
	create(t, rotated)

	u := newUnpacker(t, k8sClient)
	opts := source.Options{ImageDir: "configs", Namespace: namespace}
	src := func(secret string) rukpakv1alpha1.Source {
		return rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: reg.Ref("private/catalog:v1"), PullSecret: secret}}
	}

	_, err = u.Unpack(testCtx(t), "catalog/private", src(""), opts)
	wantKind(t, err, source.KindUnauthorized, "refused access", "set spec.source.image.pullSecret")

	res, err := u.Unpack(testCtx(t), "catalog/private", src("registry-creds"), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.ResolvedSource.Image.Ref != digest.String() {
		t.Errorf("resolved %s, want %s", res.ResolvedSource.Image.Ref, digest)
	}
	if got := read(t, filepath.Join(res.Dir, "catalog.json")); got != read(t, filepath.Join(testdata, "catalog/catalog.json")) {
		t.Error("catalog.json differs from the pushed catalog")
	}

	// A wrong password is reported; fixing the Secret (not the spec) fixes the unpack.
	_, err = u.Unpack(testCtx(t), "catalog/rotated", src("rotated-creds"), opts)
	wantKind(t, err, source.KindUnauthorized, `Secret "rotated-creds"`)
	if !source.IsRetryable(err) {
		t.Error("want retryable: the Secret can be fixed")
	}
	rotated.Data[corev1.DockerConfigJsonKey] = reg.DockerConfigJSON("puller", "pa55")
	if err := k8sClient.Update(testCtx(t), rotated); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Unpack(testCtx(t), "catalog/rotated", src("rotated-creds"), opts); err != nil {
		t.Fatal(err)
	}

	_, err = u.Unpack(testCtx(t), "catalog/private", src("no-such-secret"), opts)
	wantKind(t, err, source.KindNotFound, `Secret "no-such-secret" not found in namespace "olmv1-system"`, "spec.source.image.pullSecret")
}

// Git credentials (username and token) come from spec.source.git.authSecret.
func TestGitCredentialsFromSecret(t *testing.T) {
	repo := sourcetest.NewRepo(t)
	repo.WriteFile("bundle/manifests/cm.yaml", "kind: ConfigMap")
	commit := repo.Commit("bundle")
	repo.Tag("v1.0.0", true)
	srv := sourcetest.NewGitServer(t, sourcetest.WithGitBasicAuth("bot", "ghp_token"))
	url := srv.Add("bundles", repo)
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "git-creds"}, Type: corev1.SecretTypeBasicAuth,
		StringData: map[string]string{"username": "bot", "password": "ghp_token"}})

	src := rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeGit, Git: &rukpakv1alpha1.GitSource{
		Repository: url, Ref: rukpakv1alpha1.GitRef{Tag: "v1.0.0"}, Directory: "bundle", AuthSecret: "git-creds"}}
	res, err := newUnpacker(t, k8sClient).Unpack(testCtx(t), "bundledeployment/git", src, source.Options{Namespace: namespace})
	if err != nil {
		t.Fatal(err)
	}
	if res.ResolvedSource.Git.Commit != commit.String() {
		t.Errorf("commit %s, want %s", res.ResolvedSource.Git.Commit, commit)
	}
	if got := read(t, filepath.Join(res.Dir, "manifests", "cm.yaml")); got != "kind: ConfigMap" {
		t.Errorf("manifests/cm.yaml = %q", got)
	}
}

// An HTTPS server with a private CA, trusted through spec.source.http.caSecret.
func TestHTTPCAFromSecret(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"1"`)
		_, _ = w.Write([]byte(`{"schema":"olm.package","name":"demo"}`))
	}))
	t.Cleanup(srv.Close)
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "catalog-ca"},
		Data: map[string][]byte{"ca.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}})
	src := rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeHTTP, HTTP: &rukpakv1alpha1.HTTPSource{URL: srv.URL + "/catalog.json", CASecret: "catalog-ca"}}
	res, err := newUnpacker(t, k8sClient).Unpack(testCtx(t), "catalog/https", src, source.Options{Namespace: namespace})
	if err != nil {
		t.Fatal(err)
	}
	if res.ResolvedSource.HTTP.ETag != `"1"` {
		t.Errorf("etag %q", res.ResolvedSource.HTTP.ETag)
	}
	if got := read(t, filepath.Join(res.Dir, "catalog.json")); !strings.Contains(got, "olm.package") {
		t.Errorf("catalog.json = %q", got)
	}
}
