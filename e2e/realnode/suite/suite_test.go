// Package suite is the real-node e2e tier: the local control plane and one real kubelet node, all in a
// network namespace the harness creates (docs/real-nodes.md), with OLM v1 installed by its Helm chart
// from the images `make images` builds, running as real pods. A pass here is a proof on a real kubelet,
// not a claim on kwok.
package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/olmv1/olmv1/e2e/localcluster"
)

// env is what every spec may use.
var env struct {
	// cluster is the real-node cluster (nil on kind); kindNode the kind node (nil on a real node).
	cluster  *localcluster.Cluster
	kindNode *localcluster.KindNode
	// nodeName is the one node's name, netns the network namespace of its node, pod and Service
	// addresses, containerProcesses the PIDs of its pods' processes as this machine sees them.
	nodeName           string
	netns              *localcluster.Netns
	containerProcesses func() []int
	cfg                *rest.Config
	kubeconfig         string
	clientset          kubernetes.Interface
	registry           *localcluster.Registry
	repoRoot           string
	binDir             string
	dir                string
}

func TestRealNode(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	RunSpecs(t, "OLM v1 real-node e2e")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	root := os.Getenv("E2E_REPO_ROOT")
	if root == "" {
		root = filepath.Join("..", "..", "..")
	}
	var err error
	env.repoRoot, err = filepath.Abs(root)
	Expect(err).NotTo(HaveOccurred())
	env.binDir = os.Getenv("E2E_BIN_DIR")
	if env.binDir == "" {
		env.binDir = filepath.Join(env.repoRoot, "bin")
	}
	iptablesBefore := hostIPTables()
	dockerBefore := dockerAnswers()
	DeferCleanup(func() {
		Expect(hostIPTables()).To(Equal(iptablesBefore), "the host's iptables rules are untouched")
		Expect(dockerAnswers()).To(Equal(dockerBefore), "the machine's Docker engine answers as before")
	})
	if node := os.Getenv("E2E_KIND_NODE"); node != "" {
		upKind(ctx, node)
	} else {
		upRealNode(ctx)
	}
	env.clientset, err = kubernetes.NewForConfig(env.cfg)
	Expect(err).NotTo(HaveOccurred())
	if env.kindNode != nil {
		setAsideE2ESuiteLeftovers(ctx)
	}

	By("serving the OCI registry on 127.0.0.1 (pushes) and on the node's address inside its network namespace (pulls)")
	env.registry, err = localcluster.StartRegistry("127.0.0.1:0", nil)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = env.registry.Stop(sctx)
	})
	if env.kindNode != nil {
		Expect(env.kindNode.ServeRegistry(ctx, env.registry)).To(Succeed())
	} else {
		Expect(env.registry.ServeIn(env.netns)).To(Succeed())
	}
}, NodeTimeout(5*time.Minute))

// upRealNode starts the local control plane and one real kubelet node in a network namespace of
// their own (docs/real-nodes.md), and tears them down after the suite.
func upRealNode(ctx SpecContext) {
	bins, nodeBins, err := localcluster.CachedNodeBinaries(localcluster.DefaultCacheDir())
	Expect(err).NotTo(HaveOccurred(), "the real-node tier needs the node binaries: run `make node-binaries`")
	env.dir, err = os.MkdirTemp("", "olmv1-realnode-")
	Expect(err).NotTo(HaveOccurred())

	By("starting the control plane and a real kubelet node in a network namespace of their own")
	start := time.Now()
	c, err := localcluster.Up(ctx, localcluster.Options{Dir: env.dir, Binaries: bins, NodeBinaries: nodeBins, RealNodes: 1, Log: GinkgoWriter})
	DeferCleanup(func() {
		if c == nil {
			return
		}
		By("tearing the cluster down: no process, namespace, cgroup or mount may be left")
		Expect(c.Stop()).To(Succeed())
		Expect(c.Leftovers()).To(BeEmpty())
		fmt.Fprintf(GinkgoWriter, "real-node state and logs kept in %s\n", env.dir)
	})
	Expect(err).NotTo(HaveOccurred(), "logs in %s", filepath.Join(env.dir, "logs"))
	fmt.Fprintf(GinkgoWriter, "real-node cluster up in %s\n", time.Since(start).Round(100*time.Millisecond))
	env.cluster, env.kubeconfig = c, c.Kubeconfig
	env.nodeName, env.netns, env.containerProcesses = localcluster.RealNodeName, c.Netns, c.ContainerProcesses
	env.cfg, err = c.RESTConfig()
	Expect(err).NotTo(HaveOccurred())
}

// upKind uses the running kind cluster whose node container is node (`make kind-e2e` creates it
// with the node image built here, and deletes it after): $KUBECONFIG is its kubeconfig. The same
// specs then run with the pods on kind's kubelet, inside a Docker container.
func upKind(ctx SpecContext, node string) {
	env.kubeconfig = os.Getenv("KUBECONFIG")
	Expect(env.kubeconfig).NotTo(BeEmpty(), "E2E_KIND_NODE needs KUBECONFIG: the kind cluster's kubeconfig (bin/kind-kubeconfig)")
	var err error
	By("using kind node " + node + " (pods on kind's kubelet in a Docker container)")
	env.kindNode, err = localcluster.InspectKindNode(ctx, node)
	Expect(err).NotTo(HaveOccurred())
	env.nodeName, env.netns, env.containerProcesses = node, env.kindNode.Netns, env.kindNode.ContainerProcesses
	env.cfg, err = clientcmd.BuildConfigFromFlags("", env.kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	fmt.Fprintf(GinkgoWriter, "kind node %s: address %s, init pid %d\n", node, env.netns.NodeIP, env.kindNode.PID)
}

// hostIPTables is this machine's own iptables rule set (iptables-save without the packet counters,
// which traffic changes), or the error that reading it gave. The rules the Docker engine keeps for its
// own networks and containers are left out: `make test` runs the kind tier beside this one, and kind's
// node container (created, and deleted, while this suite runs) comes and goes with its DNAT, ACCEPT
// and MASQUERADE rules; those are the engine's, not this harness's, and comparing them made the check
// fail whenever the kind tier created or deleted its cluster between the two readings.
func hostIPTables() string {
	out, err := exec.Command("iptables-save").CombinedOutput()
	if err != nil {
		return "iptables-save: " + err.Error()
	}
	subnets := dockerSubnets()
	var keep []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "#") || dockersRule(line, subnets) {
			continue
		}
		keep = append(keep, counters.ReplaceAllString(line, ""))
	}
	return strings.Join(keep, "\n")
}

var (
	counters = regexp.MustCompile(`\[\d+:\d+\]`)
	// dockerNames are the chains and bridge interfaces the Docker engine names in its rules.
	dockerNames = regexp.MustCompile(`DOCKER|docker0|\bbr-[0-9a-f]{12}\b`)
	addresses   = regexp.MustCompile(`(?:^|\s)(?:-s|-d|--to-destination)\s+([0-9.]+)`)
)

// dockersRule reports whether an iptables-save line is one of the Docker engine's: it names a Docker
// chain or bridge, or its source or destination lies in a subnet of a Docker network.
func dockersRule(line string, subnets []*net.IPNet) bool {
	if dockerNames.MatchString(line) {
		return true
	}
	for _, m := range addresses.FindAllStringSubmatch(line, -1) {
		ip := net.ParseIP(strings.SplitN(m[1], "/", 2)[0])
		for _, n := range subnets {
			if ip != nil && n.Contains(ip) {
				return true
			}
		}
	}
	return false
}

// dockerSubnets are the IPv4 subnets of the Docker engine's networks (none when it does not answer).
func dockerSubnets() []*net.IPNet {
	resp, err := dockerClient().Get("http://docker/networks")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var networks []struct {
		IPAM struct {
			Config []struct{ Subnet string }
		}
	}
	if json.NewDecoder(resp.Body).Decode(&networks) != nil {
		return nil
	}
	var subnets []*net.IPNet
	for _, n := range networks {
		for _, c := range n.IPAM.Config {
			if _, s, err := net.ParseCIDR(c.Subnet); err == nil {
				subnets = append(subnets, s)
			}
		}
	}
	return subnets
}

// dockerClient talks to the machine's Docker engine on its socket.
func dockerClient() *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", "/var/run/docker.sock")
		},
	}}
}

// dockerAnswers reports whether the machine's Docker engine answers its ping (false when there is none).
func dockerAnswers() bool {
	resp, err := dockerClient().Get("http://docker/_ping")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// setAsideE2ESuiteLeftovers removes what the e2e suite's own run on this kind cluster (make kind-e2e
// runs its chart specs first, with OLM v1's controllers as processes of that suite) leaves behind: the
// APIService its catalogd process registered, which points at a process that is gone (until it goes,
// discovery is stale and no namespace can be deleted), and the namespace those processes used. Each
// spec here then waits for the namespace to be gone before it installs the chart.
func setAsideE2ESuiteLeftovers(ctx SpecContext) {
	dc, err := dynamic.NewForConfig(env.cfg)
	Expect(err).NotTo(HaveOccurred())
	const name = "v1alpha1.metadata.catalogd.operatorframework.io"
	as, err := dc.Resource(apiServiceGVR).Get(ctx, name, metav1.GetOptions{})
	if err == nil && condition(as, "Available")["status"] != "True" {
		By("deleting APIService " + name + " left by the e2e suite's catalogd process (not Available)")
		err = dc.Resource(apiServiceGVR).Delete(ctx, name, metav1.DeleteOptions{})
	}
	if err != nil && !apierrors.IsNotFound(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	err = env.clientset.CoreV1().Namespaces().Delete(ctx, namespace, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		Expect(err).NotTo(HaveOccurred())
	}
}
