// Package controller runs rukpak's BundleDeployment controller against a real kube-apiserver and etcd
// (envtest): install, upgrade, a failed upgrade rolled back, drift reverted, prune, health,
// uninstall and the CRD upgrade-safety preflight. Bundles are plain bundles served as images by
// rukpak's fake unpacker (unpackertest); rendering and applying are the real ones.
package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
	"github.com/olmv1/olmv1/rukpak/pkg/source/unpackertest"
)

const systemNamespace = "olmv1-system"

var (
	// reconciler is the BundleDeploymentReconciler the manager runs.
	reconciler *controller.BundleDeploymentReconciler
	k8s        client.Client
	restConfig *rest.Config
	clientset  kubernetes.Interface
	// bundles serves the bundles of writeBundle as images.
	bundles *unpackertest.Unpacker
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
	dir, err := os.MkdirTemp("", "rukpak-controller-bundles-")
	if err != nil {
		return err
	}
	s.Cleanup(func() error { return os.RemoveAll(dir) })
	bundles = unpackertest.NewIn(dir)
	// Image sources with a signature policy are pulled from a real registry (signature_test.go).
	verifying, err := source.New(source.Config{CacheDir: filepath.Join(dir, "verified"), Client: s.Client})
	if err != nil {
		return err
	}
	bundles.RouteVerified(verifying)
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

// writeBundle makes ref serve a plain bundle whose manifests/ holds the given files. Its digest
// reference keeps the tag (ref@sha256:...), so that a status names the tag it was resolved from.
func writeBundle(t *testing.T, ref string, files map[string]string) {
	t.Helper()
	bundle := make(map[string]string, len(files))
	for name, content := range files {
		bundle["manifests/"+name] = content
	}
	bundles.PushAs(ref, ref+"@"+unpackertest.Digest(bundle), bundle)
}
