package registryv1

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/platform/pki"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/provisionertest"
)

// testCA is one CA for the whole test run.
var testCA = func() *pki.CA {
	certPEM, keyPEM, err := pki.GenerateCA("rukpak-test-ca", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 365*24*time.Hour)
	if err != nil {
		panic(err)
	}
	ca, err := pki.ParseCA(certPEM, keyPEM)
	if err != nil {
		panic(err)
	}
	return ca
}()

// rendered indexes rendered objects by "Kind ns/name".
type rendered struct {
	t    *testing.T
	objs []client.Object
	idx  map[string]*unstructured.Unstructured
}

func newRendered(t *testing.T, objs []client.Object) *rendered {
	r := &rendered{t: t, objs: objs, idx: map[string]*unstructured.Unstructured{}}
	for _, o := range objs {
		u := o.(*unstructured.Unstructured)
		r.idx[u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName()] = u
	}
	return r
}

// get returns the object "Kind ns/name" or fails the test listing what there is.
func (r *rendered) get(key string) *unstructured.Unstructured {
	r.t.Helper()
	u, ok := r.idx[key]
	if !ok {
		r.t.Fatalf("no %s among rendered objects:\n%s", key, strings.Join(r.keys(), "\n"))
	}
	return u
}

func (r *rendered) has(key string) bool { _, ok := r.idx[key]; return ok }

func (r *rendered) keys() []string {
	out := make([]string, 0, len(r.idx))
	for k := range r.idx {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// count returns how many objects of kind there are.
func (r *rendered) count(kind string) int {
	n := 0
	for _, o := range r.objs {
		if o.GetObjectKind().GroupVersionKind().Kind == kind {
			n++
		}
	}
	return n
}

// names returns the "ns/name" of every object of kind, sorted.
func (r *rendered) names(kind string) []string {
	var out []string
	for _, o := range r.objs {
		if o.GetObjectKind().GroupVersionKind().Kind == kind {
			out = append(out, o.GetNamespace()+"/"+o.GetName())
		}
	}
	sort.Strings(out)
	return out
}

func str(u *unstructured.Unstructured, fields ...string) string {
	s, _, _ := unstructured.NestedString(u.Object, fields...)
	return s
}

func render(t *testing.T, dir string, installNS string, cfg *rukpakv1alpha1.BundleConfig, opts ...Option) (*rendered, error) {
	t.Helper()
	objs, err := New(opts...).Render(context.Background(), provisioner.Request{
		Content: os.DirFS(dir), Name: "bd", InstallNamespace: installNS, Config: cfg,
	})
	if err != nil {
		return nil, err
	}
	return newRendered(t, objs), nil
}

func mustRender(t *testing.T, dir string, installNS string, cfg *rukpakv1alpha1.BundleConfig, opts ...Option) *rendered {
	if len(opts) == 0 {
		opts = []Option{selfSigned}
	}
	t.Helper()
	r, err := render(t, dir, installNS, cfg, opts...)
	if err != nil {
		t.Fatalf("render %s: %v", dir, err)
	}
	return r
}

// wantInvalid asserts err is an InvalidBundleError with reason whose message contains every part.
func wantInvalid(t *testing.T, err error, reason string, parts ...string) {
	t.Helper()
	provisionertest.WantInvalid(t, err, reason, parts...)
}

func watch(ns ...string) *rukpakv1alpha1.BundleConfig {
	return &rukpakv1alpha1.BundleConfig{WatchNamespaces: ns}
}

// testdataBundles is the directory of the shared real bundles: $OLMV1_TESTDATA/bundles, by default
// ../../../../shared/testdata/bundles from this package. Tests skip when it is absent.
func testdataBundles(t *testing.T) string {
	t.Helper()
	root := os.Getenv("OLMV1_TESTDATA")
	if root == "" {
		root = filepath.Join("..", "..", "..", "..", "..", "shared", "testdata")
	}
	dir := filepath.Join(root, "bundles")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("real bundles not found at %s (set OLMV1_TESTDATA to the shared testdata directory): %v", dir, err)
	}
	return dir
}
