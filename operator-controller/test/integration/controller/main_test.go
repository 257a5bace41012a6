// Package controller runs operator-controller's Operator reconciler against a real kube-apiserver and
// etcd (envtest) with the Operator, Catalog and BundleDeployment CRDs. There is no catalogd and no
// rukpak here: catalog content comes from FBC fixtures behind the reconciler's catalog reader, and the
// tests play rukpak by writing BundleDeployment status. Run it with `make test-integration`.
package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/catalogs"
	"github.com/olmv1/olmv1/operator-controller/internal/controller"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

var (
	k8s      client.Client
	fixtures = &fixtureReader{content: map[string]string{}}
	cache    *catalogs.Cache
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
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "FAIL: KUBEBUILDER_ASSETS is not set: these tests need a real kube-apiserver and etcd. "+
			"Run `make test-integration`, which builds them once and sets it (e.g. /root/.cache/olmv1/assets/v1.37.2).")
		return 1
	}
	logf.SetLogger(logr.Discard())
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, operatorsv1alpha1.AddToScheme, catalogdv1alpha1.AddToScheme, rukpakv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	root := filepath.Join("..", "..", "..", "..")
	env := &envtest.Environment{
		CRDDirectoryPaths: []string{
			filepath.Join(root, "operator-controller", "config", "crd", "bases"),
			filepath.Join(root, "catalogd", "config", "crd", "bases"),
			filepath.Join(root, "rukpak", "config", "crd", "bases"),
		},
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: starting kube-apiserver and etcd from KUBEBUILDER_ASSETS=%s: %v\n", os.Getenv("KUBEBUILDER_ASSETS"), err)
		return 1
	}
	defer func() { _ = env.Stop() }()

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  controller.CacheOptions(),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: creating the manager:", err)
		return 1
	}
	cache = &catalogs.Cache{Reader: fixtures}
	r := &controller.OperatorReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Catalogs: cache, Metrics: controller.NewMetrics(nil),
	}
	if err := r.SetupWithManager(mgr); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: setting up the reconciler:", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		<-done
	}()

	k8s, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: creating a client:", err)
		return 1
	}
	return m.Run()
}
