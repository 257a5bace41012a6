// Package controller runs rukpak's BundleDeployment controller against a real kube-apiserver and etcd
// (envtest): install, upgrade, a failed upgrade rolled back, drift reverted, prune, health,
// uninstall and the CRD upgrade-safety preflight. Bundles are plain bundles served as images by
// rukpak's fake unpacker (unpackertest); rendering and applying are the real ones.
package controller

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/platform/apiservertest"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/controller"
	"github.com/olmv1/olmv1/rukpak/pkg/preflight"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
	"github.com/olmv1/olmv1/rukpak/pkg/source/unpackertest"
	"github.com/olmv1/olmv1/rukpak/test/integration/rukpaktest"
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
	mgr, err := rukpaktest.NewManager(restConfig, s.Scheme)
	if err != nil {
		return err
	}
	clientset = kubernetes.NewForConfigOrDie(restConfig)
	if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: systemNamespace}}); err != nil {
		return err
	}
	r := rukpaktest.PlainReconciler(mgr, k8s, bundles, systemNamespace)
	r.EndpointReader = k8s
	r.Preflight = preflight.CRDUpgradeSafety(k8s)
	r.Recorder = mgr.GetEventRecorder("rukpak")
	// As rukpak runs by default: several BundleDeployments at once (TestConcurrentInstalls).
	r.MaxConcurrentReconciles = 8
	// controller-runtime's back-off, except for the BundleDeployments a test slows down
	// (release_watch_test.go).
	r.RateLimiter = retries
	reconciler = r
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	s.Cleanup(rukpaktest.Start(mgr))
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
