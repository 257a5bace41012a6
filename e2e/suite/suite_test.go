// Package suite is the end-to-end tier: a real control plane (the local one built from source, or any
// cluster named by $KUBECONFIG), a local OCI registry, and the three OLM v1 controllers running as
// separate processes.
package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

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
	ownCluster  *localcluster.Cluster
	environment *localcluster.Environment
	// kindNode is set when the suite runs against a kind cluster (E2E_KIND_NODE): its pods pull the
	// fixtures' workload images from the suite's registry (useKindNode).
	kindNode *localcluster.KindNode
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
	dir, err := os.MkdirTemp("", "olmv1-e2e-")
	Expect(err).NotTo(HaveOccurred())
	if kc := os.Getenv("KUBECONFIG"); kc != "" {
		By("using the cluster named by KUBECONFIG=" + kc)
	} else {
		By("starting the local control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok)")
	}
	By("starting the local OCI registry, installing the CRDs, and starting catalogd, rukpak and operator-controller as separate processes from " + binDir)
	e, err := localcluster.StartEnvironment(ctx, localcluster.EnvOptions{
		RepoRoot: env.repoRoot, BinDir: binDir, Dir: dir, Kubeconfig: os.Getenv("KUBECONFIG"),
		ControllerArgs: controllerArgs, Log: GinkgoWriter,
	})
	DeferCleanup(func() {
		if e != nil {
			Expect(e.Stop()).To(Succeed())
		}
		// The directory (logs of every process) is kept for post-mortems; etcd data is small.
		fmt.Fprintf(GinkgoWriter, "e2e state and logs kept in %s\n", dir)
	})
	Expect(err).NotTo(HaveOccurred(), "logs in %s", dir)
	env.environment = e
	env.kubeconfig, env.cfg, env.registry, env.controllers, env.ownCluster = e.Kubeconfig, e.Config, e.Registry, e.Controllers, e.Cluster
	env.clientset, err = kubernetes.NewForConfig(env.cfg)
	Expect(err).NotTo(HaveOccurred())
	fmt.Fprintf(GinkgoWriter, "controller logs in %s\n", e.LogDir)
	if node := os.Getenv("E2E_KIND_NODE"); node != "" {
		useKindNode(ctx, node)
	}
})

// workloadRegistries are the registries of the images the fixtures' Deployments name: nobody can pull
// from them. On kwok no image is pulled; on kind the node pulls them from the suite's stand-in.
var workloadRegistries = []string{"registry.example.test", "registry.invalid"}

// useKindNode makes the pods of the kind cluster whose node is name run for real: the suite's
// registry also listens inside the node's network namespace (the host dials only loopback), serves a
// stand-in image (the pause program) for every workload image of workloadRegistries, and the node's
// containerd pulls those registries from it, so the operators the specs install have running pods and
// their Deployments become Available the way they do for users.
func useKindNode(ctx context.Context, name string) {
	By("kind node " + name + ": the registry inside its network namespace, and a stand-in image for the fixtures' workload images")
	node, err := localcluster.InspectKindNode(ctx, name)
	Expect(err).NotTo(HaveOccurred())
	Expect(node.ServeRegistry(ctx, env.registry)).To(Succeed())
	_, nb, err := localcluster.CachedNodeBinaries(localcluster.DefaultCacheDir())
	Expect(err).NotTo(HaveOccurred(), "the stand-in workload image is the pause program of `make node-binaries`")
	img, err := localcluster.StandInImage(nb)
	Expect(err).NotTo(HaveOccurred())
	Expect(env.registry.ServeStandIn(img)).To(Succeed())
	Expect(node.MirrorToStandIn(ctx, env.registry, workloadRegistries...)).To(Succeed())

	// The suite's catalogd registers the CatalogMetadata APIService as an ExternalName Service for
	// localhost (--metadata-apiservice=local): kind's kube-apiserver, in the node's network namespace,
	// then dials the same port on the node's loopback, which forwards to the catalogd process.
	var metadataAddr string
	for _, a := range env.environment.Controller("catalogd").Args() {
		if v, ok := strings.CutPrefix(a, "--metadata-bind-address="); ok {
			metadataAddr = v
		}
	}
	Expect(metadataAddr).NotTo(BeEmpty(), "the suite's catalogd serves the CatalogMetadata API (catalogmetadata_test.go)")
	By("kind node " + name + ": its loopback port " + metadataAddr + " forwards to catalogd's CatalogMetadata API, which kind's kube-apiserver calls")
	fwd, err := localcluster.ForwardOutOf(node.Netns, metadataAddr, metadataAddr)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(fwd.Close)
	env.kindNode = node
}
