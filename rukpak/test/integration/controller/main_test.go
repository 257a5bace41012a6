// Package controller runs rukpak's BundleDeployment controller against a real kube-apiserver and etcd
// (envtest): install, upgrade, a failed upgrade rolled back, drift reverted, prune, health,
// uninstall and the CRD upgrade-safety preflight. Bundles are plain bundles in temporary
// directories, served by a test Unpacker; rendering and applying are the real ones.
package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/olmv1/olmv1/platform/apiservertest"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/apply"
	"github.com/olmv1/olmv1/rukpak/internal/controller"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/plain"
	"github.com/olmv1/olmv1/rukpak/pkg/preflight"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
)

const systemNamespace = "olmv1-system"

var (
	// reconciler is the BundleDeploymentReconciler the manager runs.
	reconciler *controller.BundleDeploymentReconciler
	k8s        client.Client
	restConfig *rest.Config
	clientset  kubernetes.Interface
	bundles    = &dirUnpacker{refs: map[string]string{}}
)

func TestMain(m *testing.M) {
	os.Exit(apiservertest.Main(m, "rukpak controller integration tests", apiservertest.Options{
		CRDDirs:     []string{filepath.Join("..", "..", "..", "config", "crd", "bases")},
		AddToScheme: []func(*runtime.Scheme) error{rukpakv1alpha1.AddToScheme},
		QPS:         200,
		Burst:       400,
	}, setup))
}

// setup creates the system namespace and starts a manager running the BundleDeploymentReconciler.
func setup(s *apiservertest.Suite) error {
	restConfig, k8s = s.Config, s.Client
	scheme := s.Scheme
	mgr, err := ctrl.NewManager(restConfig, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  controller.CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return err
	}
	clientset = kubernetes.NewForConfigOrDie(restConfig)
	if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: systemNamespace}}); err != nil {
		return err
	}
	r := &controller.BundleDeploymentReconciler{
		Client:         mgr.GetClient(),
		EndpointReader: k8s,
		Unpacker:       bundles,
		Renderers: map[rukpakv1alpha1.ProvisionerClassName]provisioner.Renderer{
			rukpakv1alpha1.ProvisionerPlain: plain.New(),
		},
		Engine: &apply.Engine{
			Client:  k8s,
			Scheme:  scheme,
			Storage: apply.NewSecretsStorage(clientset, systemNamespace, 10),
		},
		Preflight: preflight.CRDUpgradeSafety(k8s),
		Namespace: systemNamespace,
		Recorder:  mgr.GetEventRecorder("rukpak"),
		// As rukpak runs by default: several BundleDeployments at once (TestConcurrentInstalls).
		MaxConcurrentReconciles: 8,
		// controller-runtime's back-off, except for the BundleDeployments a test slows down
		// (release_watch_test.go).
		RateLimiter: retries,
	}
	reconciler = r
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.Cleanup(func() error { cancel(); return nil })
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	return nil
}

// dirUnpacker serves image refs from local directories: the test writes a bundle directory and
// points an image ref at it.
type dirUnpacker struct {
	mu   sync.Mutex
	refs map[string]string
	errs map[string]error
}

func (d *dirUnpacker) set(ref, dir string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.refs[ref] = dir
}

func (d *dirUnpacker) Unpack(_ context.Context, _ string, src rukpakv1alpha1.Source, _ source.Options) (*source.Result, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if src.Image == nil {
		return nil, fmt.Errorf("test unpacker: only Image sources")
	}
	dir, ok := d.refs[src.Image.Ref]
	if !ok {
		return nil, fmt.Errorf("image %q not found in registry (check spec.source.image.ref)", src.Image.Ref)
	}
	return &source.Result{Dir: dir, ResolvedSource: rukpakv1alpha1.ResolvedSource{
		Type:  rukpakv1alpha1.SourceTypeImage,
		Image: &rukpakv1alpha1.ResolvedImageSource{Ref: src.Image.Ref + "@sha256:" + strings.Repeat("0", 64)},
	}}, nil
}

func (d *dirUnpacker) Cleanup(context.Context, string) error { return nil }

// writeBundle writes a plain bundle whose manifests/ holds the given files and serves it as ref.
func writeBundle(t *testing.T, ref string, files map[string]string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "manifests"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, "manifests", name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bundles.set(ref, dir)
}
