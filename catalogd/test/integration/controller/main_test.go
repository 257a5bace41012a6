// Package controller runs catalogd's Catalog reconciler against a real kube-apiserver and etcd
// (envtest) with a small in-memory "registry" as its source unpacker, and checks every condition
// transition, stale serving after a failed update, the A/B/A content hash, polling and deletion.
// Run it with `make test-integration` (KUBEBUILDER_ASSETS must name the binaries; it fails if unset).
package controller

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/catalogd/internal/controller"
	"github.com/olmv1/olmv1/catalogd/internal/fbc"
	"github.com/olmv1/olmv1/catalogd/internal/replica"
	"github.com/olmv1/olmv1/catalogd/internal/serve"
	"github.com/olmv1/olmv1/catalogd/internal/storage"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
	"github.com/olmv1/olmv1/rukpak/test/integration/crdtest"
)

const namespace = "olmv1-system"

var env struct {
	suite    *crdtest.Suite
	client   client.Client
	store    *storage.Store
	storeDir string
	registry *fakeRegistry
	http     *httptest.Server
}

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: catalogd controller integration tests: %v\n", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	s, err := crdtest.Start(filepath.Join("..", "..", "..", "config", "crd", "bases"), catalogdv1alpha1.AddToScheme)
	if err != nil {
		return 0, err
	}
	defer func() { _ = s.Stop() }()
	env.suite = s
	env.client = s.Client

	tmp, err := os.MkdirTemp("", "catalogd-controller-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	env.storeDir = filepath.Join(tmp, "storage")
	env.store, err = storage.New(env.storeDir)
	if err != nil {
		return 0, err
	}
	// Content of a catalog that does not exist, as if its Catalog was removed while catalogd was down.
	orphan, err := fbc.Load(context.Background(), os.DirFS(filepath.Join("testdata", "orphan")))
	if err != nil {
		return 0, err
	}
	if _, err := env.store.Put("orphan", orphan); err != nil {
		return 0, err
	}
	env.registry = newFakeRegistry(filepath.Join(tmp, "unpacked"))
	// ConfigMaps sources go to the real unpacker; Image sources to the fake registry.
	real, err := source.New(source.Config{CacheDir: filepath.Join(tmp, "cache"), Client: s.Client})
	if err != nil {
		return 0, err
	}
	if err := s.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return 0, err
	}
	env.http = httptest.NewServer(&serve.Handler{Store: env.store})
	defer env.http.Close()

	ctrl.SetLogger(logr.Discard())
	mgr, err := ctrl.NewManager(s.Config, ctrl.Options{
		Scheme:  s.Client.Scheme(),
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		return 0, err
	}
	r := &controller.CatalogReconciler{
		Client:         mgr.GetClient(),
		Loader:         replica.NewLoader(routingUnpacker{image: env.registry, other: real}, env.store, namespace),
		ContentBaseURL: env.http.URL,
		Recorder:       mgr.GetEventRecorder("catalogd"),
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		return code, fmt.Errorf("manager: %w", err)
	}
	return code, nil
}
