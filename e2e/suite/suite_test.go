// Package suite is the end-to-end tier: a real control plane (the local one built from source, or any
// cluster named by $KUBECONFIG), a local OCI registry, and the three OLM v1 controllers running as
// separate processes.
package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/olmv1/olmv1/e2e/localcluster"
)

// env is what every spec may use.
var env struct {
	cfg         *rest.Config
	kubeconfig  string
	clientset   kubernetes.Interface
	registry    *localcluster.Registry
	controllers []*localcluster.Controller
	repoRoot    string
	// ownCluster is set when the suite started the local control plane (not a $KUBECONFIG cluster).
	ownCluster *localcluster.Cluster
}

// controllerArgs are extra flags per controller binary ("catalogd", "rukpak", "operator-controller").
// A spec file that needs a controller configured in a particular way adds to it from an init function.
var controllerArgs = map[string][]string{}

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "OLM v1 e2e")
}

var _ = BeforeSuite(func() {
	ctx := context.Background()
	root := os.Getenv("E2E_REPO_ROOT")
	if root == "" {
		root = filepath.Join("..", "..")
	}
	var err error
	env.repoRoot, err = filepath.Abs(root)
	Expect(err).NotTo(HaveOccurred())
	binDir := os.Getenv("E2E_BIN_DIR")
	if binDir == "" {
		binDir = filepath.Join(env.repoRoot, "bin")
	}

	if kc := os.Getenv("KUBECONFIG"); kc != "" {
		By("using the cluster named by KUBECONFIG=" + kc)
		env.kubeconfig = kc
	} else {
		By("starting the local control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok)")
		bins, err := localcluster.CachedBinaries(localcluster.DefaultCacheDir())
		Expect(err).NotTo(HaveOccurred(), "run `make test-e2e`, which builds the cluster binaries first")
		dir, err := os.MkdirTemp("", "olmv1-e2e-")
		Expect(err).NotTo(HaveOccurred())
		env.ownCluster, err = localcluster.Up(ctx, localcluster.Options{Dir: dir, Binaries: bins, Log: GinkgoWriter})
		Expect(err).NotTo(HaveOccurred())
		env.kubeconfig = env.ownCluster.Kubeconfig
		DeferCleanup(func() {
			Expect(env.ownCluster.Stop()).To(Succeed())
			_ = os.RemoveAll(dir)
		})
	}
	env.cfg, err = clientcmd.BuildConfigFromFlags("", env.kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	env.clientset, err = kubernetes.NewForConfig(env.cfg)
	Expect(err).NotTo(HaveOccurred())

	By("starting the local OCI registry on 127.0.0.1")
	env.registry, err = localcluster.StartRegistry("127.0.0.1:0", nil)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = env.registry.Stop(sctx)
	})

	By("installing the CRDs")
	_, err = localcluster.InstallCRDs(env.cfg, env.repoRoot)
	Expect(err).NotTo(HaveOccurred())

	By("starting catalogd, rukpak and operator-controller as separate processes from " + binDir)
	logDir, err := os.MkdirTemp("", "olmv1-e2e-controllers-")
	Expect(err).NotTo(HaveOccurred())
	env.controllers, err = localcluster.StartControllers(binDir, env.kubeconfig, logDir, controllerArgs)
	DeferCleanup(func() {
		for i := len(env.controllers) - 1; i >= 0; i-- {
			_ = env.controllers[i].Stop(5 * time.Second)
		}
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(localcluster.WaitControllersReady(ctx, env.controllers, 2*time.Minute)).To(Succeed())
	fmt.Fprintf(GinkgoWriter, "controller logs in %s\n", logDir)
})
