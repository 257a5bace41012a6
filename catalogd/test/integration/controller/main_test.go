// Package controller runs catalogd's Catalog reconciler against a real kube-apiserver and etcd
// (envtest) with rukpak's fake unpacker (unpackertest) as its "registry" of images, and checks
// every condition transition, stale serving after a failed update, the A/B/A content hash, polling
// and deletion.
// Run it with `make test-integration` (KUBEBUILDER_ASSETS must name the binaries; it fails if unset).
package controller

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/catalogd/internal/controller"
	"github.com/olmv1/olmv1/catalogd/internal/fbc"
	"github.com/olmv1/olmv1/catalogd/internal/replica"
	"github.com/olmv1/olmv1/catalogd/internal/serve"
	"github.com/olmv1/olmv1/catalogd/internal/storage"
	"github.com/olmv1/olmv1/platform/apiservertest"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
	"github.com/olmv1/olmv1/rukpak/pkg/source/unpackertest"
)

const namespace = "olmv1-system"

var env struct {
	suite    *apiservertest.Suite
	client   client.Client
	store    *storage.Store
	storeDir string
	registry *unpackertest.Unpacker // Image sources; the other types go to the real unpacker
	http     *httptest.Server
}

func TestMain(m *testing.M) {
	os.Exit(apiservertest.Main(m, "catalogd controller integration tests", apiservertest.Options{
		CRDDirs:     []string{filepath.Join("..", "..", "..", "config", "crd", "bases")},
		AddToScheme: []func(*runtime.Scheme) error{catalogdv1alpha1.AddToScheme},
		QPS:         500,
		Burst:       1000,
	}, setup))
}

// setup fills a store (with an orphan catalog), serves it over HTTP and starts a manager running the
// CatalogReconciler with the fake registry for Image sources.
func setup(s *apiservertest.Suite) error {
	env.suite = s
	env.client = s.Client

	tmp, err := os.MkdirTemp("", "catalogd-controller-")
	if err != nil {
		return err
	}
	s.Cleanup(func() error { return os.RemoveAll(tmp) })
	env.storeDir = filepath.Join(tmp, "storage")
	env.store, err = storage.New(env.storeDir)
	if err != nil {
		return err
	}
	// Content of a catalog that does not exist, as if its Catalog was removed while catalogd was down.
	orphan, err := fbc.Load(context.Background(), os.DirFS(filepath.Join("testdata", "orphan")))
	if err != nil {
		return err
	}
	if _, err := env.store.Put("orphan", orphan); err != nil {
		return err
	}
	// Image sources are served by the fake registry; ConfigMaps, HTTP and Git sources by the real
	// unpacker.
	env.registry = unpackertest.NewIn(filepath.Join(tmp, "unpacked"))
	real, err := source.New(source.Config{CacheDir: filepath.Join(tmp, "cache"), Client: s.Client})
	if err != nil {
		return err
	}
	env.registry.Route(real, rukpakv1alpha1.SourceTypeConfigMaps, rukpakv1alpha1.SourceTypeHTTP, rukpakv1alpha1.SourceTypeGit)
	if err := s.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return err
	}
	env.http = httptest.NewServer(&serve.Handler{Store: env.store})
	s.Cleanup(func() error { env.http.Close(); return nil })

	mgr, err := ctrl.NewManager(s.Config, ctrl.Options{
		Scheme:  s.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		return err
	}
	r := &controller.CatalogReconciler{
		Client:         mgr.GetClient(),
		Loader:         replica.NewLoader(env.registry, env.store, namespace),
		ContentBaseURL: env.http.URL,
		Recorder:       mgr.GetEventRecorder("catalogd"),
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	s.Cleanup(func() error {
		cancel()
		if err := <-done; err != nil {
			return fmt.Errorf("manager: %w", err)
		}
		return nil
	})
	return nil
}

// push makes the fake registry serve files as ref; its digest reference keeps the tag
// (ref@sha256:...), so that a status names the tag it was resolved from.
func push(ref string, files map[string]string) {
	env.registry.PushAs(ref, ref+"@"+unpackertest.Digest(files), files)
}
