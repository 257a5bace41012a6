package localcluster

import (
	"context"
	"crypto/rand"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	olmpki "github.com/olmv1/olmv1/platform/pki"
)

// Addresses of a real-node cluster. They exist only inside the cluster's own network namespace (see
// Netns): nothing on the host routes to them, and the host side never dials them.
const (
	realNodeIP          = "10.200.0.1"
	realNodeServiceCIDR = "10.96.0.0/16"
	realNodeServiceIP   = "10.96.0.1" // the kubernetes Service
	realNodePodCIDR     = "10.244.0.0/24"
	realNodeBridge      = "olmv1br0"
	// RealNodeName is the name of the (single) real node.
	RealNodeName = "realnode-0"
	// RealNodeRegistryPort is where the harness serves the registry inside the namespace (on NodeIP). A
	// namespace the harness just created has no other listener, so a fixed port cannot collide.
	RealNodeRegistryPort = 5000
)

// RealNode is a kubelet node running real containers: containerd, kubelet and kube-proxy in a private
// mount namespace (held by a pause process) inside the cluster's network namespace.
type RealNode struct {
	Name   string `json:"name"`
	Dir    string `json:"dir"`
	Socket string `json:"socket"`
	// CgroupRoot is the node's cgroup parent in every hierarchy, removed at teardown.
	CgroupRoot string `json:"cgroupRoot"`
	// Holder keeps the mount namespace alive; Processes are containerd, kubelet and kube-proxy.
	Holder    *Process   `json:"holder"`
	Processes []*Process `json:"processes"`
}

// upRealNode starts a real-node cluster: a network namespace of its own holding etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and one real node (containerd, kubelet, kube-proxy). The
// host's kubeconfig points at a forwarder on 127.0.0.1.
func upRealNode(ctx context.Context, o Options) (c *Cluster, err error) {
	switch {
	case o.RealNodes != 1:
		return nil, fmt.Errorf("localcluster: %d real nodes asked for; one is supported (see docs/real-nodes.md)", o.RealNodes)
	case o.Detached && len(o.Forwarder) == 0:
		return nil, errors.New("localcluster: a detached real-node cluster needs Options.Forwarder (its API server is reached through a forwarder process)")
	case o.NodeBinaries == nil:
		return nil, errors.New("localcluster: Options.NodeBinaries is required for real nodes (see BuildNode)")
	}
	logw := logTo(o.Log)
	dir, err := freshDir(o.Dir)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	suffix := make([]byte, 4)
	if _, err := rand.Read(suffix); err != nil {
		return nil, err
	}
	ns, err := createNetns(ctx, "olmv1-"+hex.EncodeToString(suffix), realNodeIP, realNodeServiceCIDR)
	if err != nil {
		return nil, err
	}
	c = &Cluster{Dir: dir, Kubeconfig: filepath.Join(dir, "kubeconfig"), AssetsDir: o.Binaries.AssetsDir, Netns: ns}
	defer func() {
		if err != nil {
			_ = c.Stop()
		}
	}()
	if err := c.save(); err != nil {
		return c, err
	}
	p, err := generatePKI(filepath.Join(dir, "pki"), net.ParseIP(realNodeIP), net.ParseIP(realNodeServiceIP))
	if err != nil {
		return c, fmt.Errorf("generating certificates: %w", err)
	}
	ports, err := pickPorts()
	if err != nil {
		return c, err
	}
	cs, err := c.startAPIServer(ctx, o, p, ports)
	if err != nil {
		return c, err
	}
	fmt.Fprintf(logw, "localcluster: kube-apiserver ready in network namespace %s, reached at %s, after %s\n", ns.Name, c.APIServer, time.Since(start).Round(100*time.Millisecond))
	if err := c.beforeControllers(o); err != nil {
		return c, err
	}
	if err := c.startControllersAndKwok(o, p, ports); err != nil {
		return c, err
	}
	if err := c.startRealNode(ctx, o, p, cs, "https://127.0.0.1:"+strconv.Itoa(ports.apiServer)); err != nil {
		return c, err
	}
	fmt.Fprintf(logw, "localcluster: control plane with real node %s Ready in %s (kubeconfig %s)\n", RealNodeName, time.Since(start).Round(100*time.Millisecond), c.Kubeconfig)
	return c, nil
}

// startRealNode starts the node's containerd, kubelet and kube-proxy against the API server at
// apiServer (an address inside ns) and waits for the node to be Ready.
func (c *Cluster) startRealNode(ctx context.Context, o Options, p pki, cs kubernetes.Interface, apiServer string) error {
	nb := o.NodeBinaries
	dir := filepath.Join(c.Dir, "node")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	n := &RealNode{Name: RealNodeName, Dir: dir, Socket: filepath.Join(dir, "containerd.sock"), CgroupRoot: "/" + c.Netns.Name}
	c.Node = n
	if err := createCgroupRoot(n.CgroupRoot); err != nil {
		return err
	}
	if err := c.startMountNamespace(o, nb); err != nil {
		return err
	}
	if err := writeNodeFiles(n, nb, p, apiServer); err != nil {
		return err
	}
	env := []string{"PATH=" + filepath.Dir(nb.Containerd) + ":" + filepath.Dir(nb.Runc) + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	if err := c.launchInNode(o.Detached, env, "containerd", nb.Containerd, "--config="+filepath.Join(dir, "containerd.toml")); err != nil {
		return err
	}
	if err := c.waitFile(ctx, n.Socket, 30*time.Second); err != nil {
		return err
	}
	if err := c.importImages(ctx, nb); err != nil {
		return err
	}
	if err := c.launchInNode(o.Detached, env, "kubelet", nb.Kubelet,
		"--config="+filepath.Join(dir, "kubelet.yaml"), "--kubeconfig="+filepath.Join(dir, "kubelet.kubeconfig"),
		"--hostname-override="+n.Name, "--node-ip="+c.Netns.NodeIP, "--root-dir=/var/lib/kubelet",
		"--cert-dir="+filepath.Join(dir, "kubelet-pki"), "--v=1",
	); err != nil {
		return err
	}
	if err := c.launchInNode(o.Detached, env, "kube-proxy", nb.KubeProxy, "--config="+filepath.Join(dir, "kube-proxy.yaml"), "--v=1"); err != nil {
		return err
	}
	if err := c.waitRealNodeReady(ctx, cs, 2*time.Minute); err != nil {
		return err
	}
	return deployClusterDNS(ctx, cs)
}

// startMountNamespace starts the pause program in a new private mount namespace and gives that
// namespace its own /run, /var/lib and /var/log (so nothing of the host's containerd, Docker or kubelet
// state is seen or touched) and shields the /proc/sys files kubelet would otherwise rewrite for the
// whole machine.
func (c *Cluster) startMountNamespace(o Options, nb *NodeBinaries) error {
	n := c.Node
	bin, args := c.Netns.nsenterArgs(0, "unshare", "--mount", "--propagation", "private", "--", nb.Pause)
	holder, err := startProcess("node-holder", filepath.Join(c.Dir, "logs"), o.Detached, nil, bin, args...)
	if err != nil {
		return err
	}
	n.Holder = holder
	if err := c.save(); err != nil {
		return err
	}
	// unshare has exec'd pause once the namespace differs from ours.
	self, _ := os.Readlink("/proc/self/ns/mnt")
	if err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		if holder.Exited() {
			return false, fmt.Errorf("the node's mount namespace holder exited: %s", tail(holder.Log, 1000))
		}
		got, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", holder.PID))
		return err == nil && got != self, nil
	}); err != nil {
		return fmt.Errorf("waiting for the node's mount namespace: %w", err)
	}
	in := func(args ...string) error {
		return run(context.Background(), append([]string{"nsenter", fmt.Sprintf("--mount=/proc/%d/ns/mnt", holder.PID), "--"}, args...)...)
	}
	for _, d := range []string{"/run", "/var/lib", "/var/log"} {
		if err := in("mount", "-t", "tmpfs", "-o", "mode=0755", "olmv1-node", d); err != nil {
			return err
		}
	}
	// Kernel tunables kubelet sets when protectKernelDefaults is false: each is bound to a private file
	// holding the machine's value, so kubelet's writes land there.
	shield := filepath.Join(n.Dir, "sysctl")
	if err := os.MkdirAll(shield, 0o755); err != nil {
		return err
	}
	for _, f := range []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops", "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"} {
		cur, err := os.ReadFile("/proc/sys/" + f)
		if err != nil {
			continue
		}
		priv := filepath.Join(shield, strings.ReplaceAll(f, "/", "."))
		if err := os.WriteFile(priv, cur, 0o644); err != nil {
			return err
		}
		if err := in("mount", "--bind", priv, "/proc/sys/"+f); err != nil {
			return err
		}
	}
	return nil
}

// launchInNode starts a node process inside the cluster's network namespace and the node's mount
// namespace.
func (c *Cluster) launchInNode(detached bool, env []string, name, bin string, args ...string) error {
	nbin, nargs := c.Netns.nsenterArgs(c.Node.Holder.PID, bin, args...)
	proc, err := startProcess(name, filepath.Join(c.Dir, "logs"), detached, env, nbin, nargs...)
	if err != nil {
		return err
	}
	c.Node.Processes = append(c.Node.Processes, proc)
	return c.save()
}

// waitFile waits until path exists, failing early when a node process has exited.
func (c *Cluster) waitFile(ctx context.Context, path string, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if err := c.exitedProcess(); err != nil {
			return false, err
		}
		_, err := os.Stat(path)
		return err == nil, nil
	})
}

// importImages imports the pause image (what every pod sandbox runs) and the CoreDNS image into the
// node's containerd; neither is ever pulled.
func (c *Cluster) importImages(ctx context.Context, nb *NodeBinaries) error {
	for _, img := range []struct{ bin, name, user, tag string }{
		{nb.Pause, "pause", "65535:65535", pauseImage},
		{nb.CoreDNS, "coredns", "65532:65532", coreDNSImage},
	} {
		tarPath := filepath.Join(c.Node.Dir, img.name+".tar")
		if err := writeBinaryImage(img.bin, img.name, img.user, img.tag, tarPath); err != nil {
			return err
		}
		bin, args := c.Netns.nsenterArgs(c.Node.Holder.PID, nb.Ctr, "--address", c.Node.Socket, "-n", "k8s.io", "images", "import", tarPath)
		if err := run(ctx, append([]string{bin}, args...)...); err != nil {
			return fmt.Errorf("importing the %s image: %w", img.name, err)
		}
	}
	return nil
}

func (c *Cluster) waitRealNodeReady(ctx context.Context, cs kubernetes.Interface, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.exitedProcess(); err != nil {
			return false, err
		}
		node, err := cs.CoreV1().Nodes().Get(ctx, c.Node.Name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				last = cond.Reason + ": " + cond.Message
				return cond.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("node %s did not become Ready (last: %s; see %s): %w", c.Node.Name, last, filepath.Join(c.Dir, "logs", "kubelet.log"), err)
	}
	return nil
}

// writeNodeFiles writes the node's credentials and the configuration of containerd, CNI, kubelet and
// kube-proxy.
func writeNodeFiles(n *RealNode, nb *NodeBinaries, p pki, apiServer string) error {
	now := time.Now()
	nodePKI := pki{dir: filepath.Join(n.Dir, "pki")}
	if err := os.MkdirAll(nodePKI.dir, 0o700); err != nil {
		return err
	}
	ca, err := loadCA(p)
	if err != nil {
		return err
	}
	kubeletReq := olmpki.ClientRequest(pkix.Name{CommonName: "system:node:" + n.Name, Organization: []string{"system:nodes"}}, now.Add(-backdate), now.Add(leafValidity))
	if _, err := nodePKI.issue("kubelet.crt", "kubelet.key", kubeletReq, ca); err != nil {
		return err
	}
	proxyReq := olmpki.ClientRequest(pkix.Name{CommonName: "system:kube-proxy", Organization: []string{"system:node-proxier"}}, now.Add(-backdate), now.Add(leafValidity))
	if _, err := nodePKI.issue("kube-proxy.crt", "kube-proxy.key", proxyReq, ca); err != nil {
		return err
	}
	if err := writeClientKubeconfig(filepath.Join(n.Dir, "kubelet.kubeconfig"), apiServer, p.path(caCert), nodePKI.path("kubelet.crt"), nodePKI.path("kubelet.key")); err != nil {
		return err
	}
	if err := writeClientKubeconfig(filepath.Join(n.Dir, "kube-proxy.kubeconfig"), apiServer, p.path(caCert), nodePKI.path("kube-proxy.crt"), nodePKI.path("kube-proxy.key")); err != nil {
		return err
	}
	files := map[string]string{
		"containerd.toml":             containerdConfig(n, nb),
		"cni/net.d/10-olmv1.conflist": cniConfig(),
		"kubelet.yaml":                kubeletConfig(n, p),
		"kube-proxy.yaml":             kubeProxyConfig(n),
		"resolv.conf":                 "# no upstream resolvers: the cluster's network namespace has no way out (docs/real-nodes.md)\n",
		"certs.d/" + realNodeIP + ":" + strconv.Itoa(RealNodeRegistryPort) + "/hosts.toml": registryHosts(realNodeIP + ":" + strconv.Itoa(RealNodeRegistryPort)),
	}
	for name, content := range files {
		path := filepath.Join(n.Dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func loadCA(p pki) (*olmpki.KeyPair, error) {
	certPEM, err := os.ReadFile(p.path(caCert))
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(p.path(caKey))
	if err != nil {
		return nil, err
	}
	return olmpki.ParseKeyPair(certPEM, keyPEM)
}

// logTo is a writer for progress lines; nil discards them.
func logTo(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
