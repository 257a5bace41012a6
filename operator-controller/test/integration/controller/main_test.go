// Package controller runs operator-controller's Operator reconciler against a real kube-apiserver and
// etcd (envtest) with the Operator, Catalog and BundleDeployment CRDs. There is no catalogd and no
// rukpak here: catalog content comes from FBC fixtures behind the reconciler's catalog reader, and the
// tests play rukpak by writing BundleDeployment status. Run it with `make test-integration`.
package controller

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/deppy/pkg/cluster"
	"github.com/olmv1/olmv1/deppy/pkg/olm"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/catalogs"
	"github.com/olmv1/olmv1/operator-controller/internal/controller"
	"github.com/olmv1/olmv1/platform/apiservertest"
	"github.com/olmv1/olmv1/platform/objmeta"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
)

var (
	k8s      client.Client
	fixtures = &fixtureReader{content: map[string]string{}}
	cache    *catalogs.Cache
	// disc reads the API server's discovery (its version).
	disc discovery.DiscoveryInterface
	// restConfig is the API server's admin config (copied to impersonate a ServiceAccount).
	restConfig *rest.Config
	// registryHost is the host:port of the suite's OCI registry (direct bundle images).
	registryHost string
)

// fixtureReader serves catalog content from FBC strings the tests set.
type fixtureReader struct {
	mu      sync.Mutex
	content map[string]string
}

func (f *fixtureReader) set(name, fbc string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.content[name] = fbc
}

func (f *fixtureReader) ReadCatalog(_ context.Context, name string) (*declcfg.DeclarativeConfig, error) {
	f.mu.Lock()
	fbc, ok := f.content[name]
	f.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("catalog %q has no fixture", name)
	}
	return declcfg.LoadReader(strings.NewReader(fbc))
}

func TestMain(m *testing.M) {
	root := filepath.Join("..", "..", "..", "..")
	os.Exit(apiservertest.Main(m, "operator-controller controller integration tests", apiservertest.Options{
		CRDDirs: []string{
			filepath.Join(root, "operator-controller", "config", "crd", "bases"),
			filepath.Join(root, "catalogd", "config", "crd", "bases"),
			filepath.Join(root, "rukpak", "config", "crd", "bases"),
		},
		AddToScheme: []func(*runtime.Scheme) error{operatorsv1alpha1.AddToScheme, catalogdv1alpha1.AddToScheme, rukpakv1alpha1.AddToScheme, operatorsv2.AddToScheme},
	}, setup))
}

// setup starts a manager running the OperatorReconciler over the fixture catalogs.
func setup(s *apiservertest.Suite) error {
	mgr, err := ctrl.NewManager(s.Config, ctrl.Options{
		Scheme:                 s.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  controller.CacheOptions(),
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	cache = &catalogs.Cache{Reader: fixtures}
	if disc, err = discovery.NewDiscoveryClientForConfig(s.Config); err != nil {
		return err
	}
	// As operator-controller's main wires it: the API server's version from discovery.
	versions := &cluster.VersionCache{TTL: time.Minute, Read: func(ctx context.Context) (*olm.Cluster, error) {
		return cluster.ReadClusterVersion(ctx, disc, nil)
	}}
	// Direct bundles' content is read from a registry on 127.0.0.1 with rukpak's unpacker, as main
	// wires it; the registry stops with the suite.
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	s.Cleanup(func() error { reg.Close(); return nil })
	registryHost = strings.TrimPrefix(reg.URL, "http://")
	cacheDir, err := os.MkdirTemp("", "oc-direct-")
	if err != nil {
		return err
	}
	s.Cleanup(func() error { return os.RemoveAll(cacheDir) })
	unpacker, err := source.New(source.Config{CacheDir: cacheDir, Client: s.Client})
	if err != nil {
		return err
	}
	r := &controller.OperatorReconciler{
		Client: operatorLists.wrap(mgr.GetClient()), APIReader: mgr.GetAPIReader(), Catalogs: cache, Metrics: controller.NewMetrics(nil),
		ClusterVersion: versions.Get,
		DirectBundles: &controller.DirectBundleReader{Unpacker: unpacker, Namespace: "default", Recheck: time.Second,
			ServesKind: controller.DiscoveryServesKind(controller.DiscoveryKinds(disc))},
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the reconciler: %w", err)
	}
	if err := playRukpakFinalizer(mgr); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	s.Cleanup(func() error {
		cancel()
		<-done
		return nil
	})
	k8s, restConfig = s.Client, s.Config
	return nil
}

// playRukpakFinalizer removes rukpak's finalizer (which operator-controller sets on the
// BundleDeployments it creates) from a deleted BundleDeployment, as rukpak does once it has
// uninstalled it: there is no rukpak here, and nothing was installed.
func playRukpakFinalizer(mgr ctrl.Manager) error {
	c := mgr.GetClient()
	return ctrl.NewControllerManagedBy(mgr).Named("test-rukpak-finalizer").For(&rukpakv1alpha1.BundleDeployment{}).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			bd := &rukpakv1alpha1.BundleDeployment{}
			if err := c.Get(ctx, req.NamespacedName, bd); err != nil || bd.DeletionTimestamp.IsZero() {
				return reconcile.Result{}, client.IgnoreNotFound(err)
			}
			return reconcile.Result{}, client.IgnoreNotFound(objmeta.RemoveFinalizer(ctx, c, bd, "BundleDeployment", rukpakv1alpha1.UninstallFinalizer))
		}))
}
