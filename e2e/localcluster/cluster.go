package localcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ServiceCIDR is a loopback range, so anything that dials a ClusterIP stays on this machine and fails
// fast instead of sending traffic into a private network.
const ServiceCIDR = "127.96.0.0/16"

// FakeNodeAnnotation marks the nodes kwok manages.
const FakeNodeAnnotation = "kwok.x-k8s.io/node"

// Options configure Up.
type Options struct {
	// Dir holds certificates, etcd data, logs, the kubeconfig and the state file. Required.
	Dir string
	// Binaries to run; see Build.
	Binaries *Binaries
	// Nodes is the number of kwok fake nodes (default 2).
	Nodes int
	// Detached processes outlive this program (for `olmv1-dev up`); otherwise they die with it.
	Detached bool
	// Log receives progress lines; nil discards them.
	Log io.Writer
	// RealNodes is the number of real kubelet nodes (0 or 1; see docs/real-nodes.md). With one, the
	// whole cluster runs in a network namespace of its own with a real node instead of kwok nodes, and
	// NodeBinaries is required. The host reaches a real-node cluster's API server through a
	// forwarder: in this program, or, when Detached, in a process of its own started as
	// `Forwarder... --netns NAME --listen 127.0.0.1:PORT --to ADDR` (olmv1-dev's `forward` command).
	RealNodes    int
	NodeBinaries *NodeBinaries
	Forwarder    []string
	// BeforeControllers, when set, runs once kube-apiserver answers and before
	// kube-controller-manager starts: CRDs created there are in the garbage collector's first
	// discovery (created later, it sees them only at its 30 s rediscovery, and objects owned by their
	// kinds wait that long to be collected).
	BeforeControllers func(*rest.Config) error
	// ExtraArgs are flags added to a control-plane component's own, by its name
	// ("kube-apiserver", "kube-controller-manager", "kube-scheduler"): a benchmark's way to try
	// another setting (or to turn on kube-apiserver's audit log and see who sends what).
	ExtraArgs map[string][]string
}

// Cluster is a running local control plane.
type Cluster struct {
	Dir        string     `json:"dir"`
	Kubeconfig string     `json:"kubeconfig"`
	APIServer  string     `json:"apiServer"`
	Processes  []*Process `json:"processes"`
	AssetsDir  string     `json:"assetsDir"`
	// Netns and Node are set for a real-node cluster.
	Netns *Netns    `json:"netns,omitempty"`
	Node  *RealNode `json:"node,omitempty"`

	forwarder *Forwarder
}

const stateFile = "state.json"

// Up starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok on 127.0.0.1 with
// free ports, writes a kubeconfig and waits until the fake nodes are Ready. On error it stops whatever
// it started.
func Up(ctx context.Context, o Options) (c *Cluster, err error) {
	if o.Dir == "" || o.Binaries == nil {
		return nil, errors.New("localcluster: Options.Dir and Options.Binaries are required")
	}
	if o.Nodes == 0 {
		o.Nodes = 2
	}
	if o.RealNodes > 0 {
		return upRealNode(ctx, o)
	}
	logw := o.Log
	if logw == nil {
		logw = io.Discard
	}
	dir, err := freshDir(o.Dir)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	p, err := generatePKI(filepath.Join(dir, "pki"))
	if err != nil {
		return nil, fmt.Errorf("generating certificates: %w", err)
	}
	ports, err := pickPorts()
	if err != nil {
		return nil, err
	}
	c = &Cluster{
		Dir:        dir,
		Kubeconfig: filepath.Join(dir, "kubeconfig"),
		APIServer:  "https://127.0.0.1:" + strconv.Itoa(ports.apiServer),
		AssetsDir:  o.Binaries.AssetsDir,
	}
	defer func() {
		if err != nil {
			_ = c.Stop()
		}
	}()

	cs, err := c.startAPIServer(ctx, o, p, ports)
	if err != nil {
		return c, err
	}
	fmt.Fprintf(logw, "localcluster: kube-apiserver ready at %s after %s\n", c.APIServer, time.Since(start).Round(100*time.Millisecond))
	if err := c.beforeControllers(o); err != nil {
		return c, err
	}
	if err := c.startControllersAndKwok(o, p, ports); err != nil {
		return c, err
	}
	if err := createFakeNodes(ctx, cs, o.Nodes); err != nil {
		return c, err
	}
	if err := c.waitNodesReady(ctx, cs, o.Nodes, 90*time.Second); err != nil {
		return c, err
	}
	fmt.Fprintf(logw, "localcluster: control plane with %d kwok nodes ready in %s (kubeconfig %s)\n", o.Nodes, time.Since(start).Round(100*time.Millisecond), c.Kubeconfig)
	return c, nil
}

// freshDir makes dir (made absolute) ready for a new cluster: it refuses one that a running
// cluster uses, and removes the etcd data, certificates and logs of an earlier run.
func freshDir(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if prev, err := Load(dir); err == nil && prev.running() {
		return "", fmt.Errorf("a local cluster is already running from %s (stop it with `olmv1-dev down --dir %s`)", dir, dir)
	}
	// Fresh data every time: a stale etcd would carry objects from an earlier run.
	for _, sub := range []string{"etcd", "pki", "logs", "node"} {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, nil
}

// clusterPorts are the free ports the control plane listens on.
type clusterPorts struct {
	etcdClient, etcdPeer, apiServer, controllerManager, scheduler int
}

// pickPorts finds free ports for the control plane.
func pickPorts() (clusterPorts, error) {
	ports, err := freePorts(5)
	if err != nil {
		return clusterPorts{}, err
	}
	return clusterPorts{etcdClient: ports[0], etcdPeer: ports[1], apiServer: ports[2], controllerManager: ports[3], scheduler: ports[4]}, nil
}

// launch starts a process of the cluster, logging to the cluster's logs directory, and records it
// in the state file.
func (c *Cluster) launch(detached bool, name, bin string, args ...string) error {
	if c.Netns != nil {
		bin, args = c.Netns.nsenterArgs(0, bin, args...)
	}
	proc, err := startProcess(name, filepath.Join(c.Dir, "logs"), detached, nil, bin, args...)
	if err != nil {
		return err
	}
	c.Processes = append(c.Processes, proc)
	return c.save()
}

// startAPIServer starts etcd and kube-apiserver, writes the admin kubeconfig and waits until the
// API server is ready; it returns a client of it.
func (c *Cluster) startAPIServer(ctx context.Context, o Options, p pki, ports clusterPorts) (*kubernetes.Clientset, error) {
	b := o.Binaries
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports.etcdClient)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports.etcdPeer)
	if err := c.launch(o.Detached, "etcd", b.Etcd,
		"--name=local", "--data-dir="+filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=local="+peerURL, "--unsafe-no-fsync=true",
		"--listen-metrics-urls=", "--log-level=warn",
	); err != nil {
		return nil, err
	}
	if err := c.launch(o.Detached, "kube-apiserver", b.APIServer, append(append(c.apiServerNetworkFlags(p),
		"--etcd-servers="+etcdURL,
		"--secure-port="+strconv.Itoa(ports.apiServer),
		"--tls-cert-file="+p.path(servingCert), "--tls-private-key-file="+p.path(servingKey),
		"--client-ca-file="+p.path(caCert),
		"--authorization-mode=Node,RBAC",
		"--requestheader-client-ca-file="+p.path(frontProxyCACert),
		"--requestheader-allowed-names="+frontProxyUserName,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file="+p.path(frontProxyCert), "--proxy-client-key-file="+p.path(frontProxyKey),
		"--enable-aggregator-routing=false",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+p.path(serviceAccountPub),
		"--service-account-signing-key-file="+p.path(serviceAccountKey),
		"--allow-privileged=true",
	), o.ExtraArgs["kube-apiserver"]...)...); err != nil {
		return nil, err
	}
	if c.Netns != nil {
		// The host reaches the API server only through a forwarder on its own loopback.
		if err := c.startForwarder(o, "127.0.0.1:"+strconv.Itoa(ports.apiServer)); err != nil {
			return nil, err
		}
		if err := writeKubeconfig(c.internalKubeconfig(), "https://127.0.0.1:"+strconv.Itoa(ports.apiServer), p); err != nil {
			return nil, err
		}
	}
	return c.connect(ctx, p)
}

// startForwarder forwards a free port of 127.0.0.1 to target inside the cluster's namespace, in this
// program or (Detached) in a forwarder process recorded with the cluster's processes.
func (c *Cluster) startForwarder(o Options, target string) error {
	if !o.Detached {
		fwd, err := Forward(c.Netns, target)
		if err != nil {
			return err
		}
		c.forwarder = fwd
		c.APIServer = "https://" + fwd.Addr
		return nil
	}
	port, err := FreePort()
	if err != nil {
		return err
	}
	listen := "127.0.0.1:" + strconv.Itoa(port)
	args := append(append([]string{}, o.Forwarder[1:]...), "--netns", c.Netns.Name, "--listen", listen, "--to", target)
	proc, err := startProcess("forwarder", filepath.Join(c.Dir, "logs"), true, nil, o.Forwarder[0], args...)
	if err != nil {
		return err
	}
	c.Processes = append(c.Processes, proc)
	c.APIServer = "https://" + listen
	return c.save()
}

// apiServerNetworkFlags are the flags of kube-apiserver that differ between the loopback cluster and
// a real-node cluster in its own network namespace.
func (c *Cluster) apiServerNetworkFlags(p pki) []string {
	if c.Netns == nil {
		// Loopback only: no endpoint reconciler (a loopback advertise address is fatal otherwise).
		return []string{"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none",
			"--service-cluster-ip-range=" + ServiceCIDR}
	}
	return []string{"--bind-address=0.0.0.0", "--advertise-address=" + c.Netns.NodeIP,
		"--service-cluster-ip-range=" + realNodeServiceCIDR,
		"--kubelet-client-certificate=" + p.path(kubeletClientCert), "--kubelet-client-key=" + p.path(kubeletClientKey),
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		"--enable-admission-plugins=NodeRestriction"}
}

// internalKubeconfig is the kubeconfig of the control plane's own components: the host's for the
// loopback cluster, one with the API server's address inside the namespace for a real-node cluster.
func (c *Cluster) internalKubeconfig() string {
	if c.Netns == nil {
		return c.Kubeconfig
	}
	return filepath.Join(c.Dir, "kubeconfig-internal")
}

// connect writes the admin kubeconfig and waits until the API server answers /readyz.
func (c *Cluster) connect(ctx context.Context, p pki) (*kubernetes.Clientset, error) {
	if err := writeKubeconfig(c.Kubeconfig, c.APIServer, p); err != nil {
		return nil, err
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if err := c.waitReady(ctx, cs, 90*time.Second); err != nil {
		return nil, err
	}
	return cs, nil
}

// startControllersAndKwok starts kube-controller-manager, kube-scheduler and kwok against the
// running API server.
func (c *Cluster) startControllersAndKwok(o Options, p pki, ports clusterPorts) error {
	b := o.Binaries
	kc := c.internalKubeconfig()
	common := []string{"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc, "--bind-address=127.0.0.1", "--leader-elect=false"}
	serviceCIDR := ServiceCIDR
	if c.Netns != nil {
		serviceCIDR = realNodeServiceCIDR
	}
	kcm := append(append([]string(nil), common...),
		"--secure-port="+strconv.Itoa(ports.controllerManager),
		"--service-account-private-key-file="+p.path(serviceAccountKey),
		"--root-ca-file="+p.path(caCert),
		"--service-cluster-ip-range="+serviceCIDR,
	)
	if err := c.launch(o.Detached, "kube-controller-manager", b.ControllerManager, append(kcm, o.ExtraArgs["kube-controller-manager"]...)...); err != nil {
		return err
	}
	scheduler := append(append([]string(nil), common...), "--secure-port="+strconv.Itoa(ports.scheduler))
	if err := c.launch(o.Detached, "kube-scheduler", b.Scheduler, append(scheduler, o.ExtraArgs["kube-scheduler"]...)...); err != nil {
		return err
	}
	if c.Netns != nil {
		return nil // a real node instead of kwok
	}
	return c.launch(o.Detached, "kwok", b.Kwok,
		"--kubeconfig="+c.Kubeconfig, "--config="+b.KwokStages,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+FakeNodeAnnotation+"=fake",
		"--cidr=10.0.0.1/24", "--node-ip=10.0.0.1", "--node-lease-duration-seconds=40",
	)
}

// beforeControllers runs o.BeforeControllers, when set, against the API server that answers.
func (c *Cluster) beforeControllers(o Options) error {
	if o.BeforeControllers == nil {
		return nil
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		return err
	}
	return o.BeforeControllers(cfg)
}

// RESTConfig returns a client configuration for the admin user.
func (c *Cluster) RESTConfig() (*rest.Config, error) {
	return clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
}

// Stop stops every process this cluster started, in reverse start order, and removes the state file.
func (c *Cluster) Stop() error {
	var errs []error
	if c.Node != nil {
		errs = append(errs, c.Node.stop())
	}
	for i := len(c.Processes) - 1; i >= 0; i-- {
		if err := c.Processes[i].Stop(5 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	c.Processes = nil
	if c.forwarder != nil {
		errs = append(errs, c.forwarder.Close())
		c.forwarder = nil
	}
	errs = append(errs, c.deleteNetns())
	if err := os.Remove(filepath.Join(c.Dir, stateFile)); err != nil && !os.IsNotExist(err) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Load reads the state of a cluster started (possibly by another process) in dir.
func Load(dir string) (*Cluster, error) {
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, err
	}
	c := &Cluster{}
	if err := json.Unmarshal(data, c); err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, stateFile), err)
	}
	return c, nil
}

func (c *Cluster) running() bool {
	procs := slices.Clone(c.Processes)
	if c.Node != nil {
		procs = append(append(procs, c.Node.Processes...), c.Node.Holder)
	}
	for _, p := range procs {
		if p == nil {
			continue
		}
		if alive(p.PID) {
			return true
		}
	}
	return false
}

func (c *Cluster) save() error {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(c.Dir, stateFile), data, 0o644)
}

// exitedProcess returns a started process that has died, with the end of its log.
func (c *Cluster) exitedProcess() error {
	procs := c.Processes
	if c.Node != nil {
		procs = append(slices.Clone(procs), c.Node.Processes...)
	}
	for _, p := range procs {
		if p.Exited() {
			return fmt.Errorf("%s exited; last lines of %s:\n%s", p.Name, p.Log, tail(p.Log, 2000))
		}
	}
	return nil
}

func (c *Cluster) waitReady(ctx context.Context, cs kubernetes.Interface, timeout time.Duration) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.exitedProcess(); err != nil {
			return false, err
		}
		_, last = cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("kube-apiserver did not become ready (last error: %v): %w", last, err)
	}
	return nil
}

func createFakeNodes(ctx context.Context, cs kubernetes.Interface, n int) error {
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("kwok-node-%d", i)
		capacity := corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("32"),
			corev1.ResourceMemory: resource.MustParse("256Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		}
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Annotations: map[string]string{FakeNodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"},
				Labels: map[string]string{
					"type": "kwok", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
					"kubernetes.io/arch": "amd64", "kubernetes.io/role": "agent",
				},
			},
			// No taint: workloads installed by bundles schedule here without extra tolerations.
			Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
		}
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating fake node %s: %w", name, err)
		}
	}
	return nil
}

func (c *Cluster) waitNodesReady(ctx context.Context, cs kubernetes.Interface, n int, timeout time.Duration) error {
	var ready int
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.exitedProcess(); err != nil {
			return false, err
		}
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // keep polling through transient errors
		}
		ready = 0
		for _, node := range nodes.Items {
			for _, cond := range node.Status.Conditions {
				if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready >= n, nil
	})
	if err != nil {
		return fmt.Errorf("%d of %d kwok nodes became Ready (see %s): %w", ready, n, filepath.Join(c.Dir, "logs", "kwok.log"), err)
	}
	return nil
}

// writeKubeconfig writes a kubeconfig for the admin user of p.
func writeKubeconfig(path, server string, p pki) error {
	return writeClientKubeconfig(path, server, p.path(caCert), p.path(adminCert), p.path(adminKey))
}

// writeClientKubeconfig writes a kubeconfig that reaches server, trusting ca, as the client
// certificate cert with its key.
func writeClientKubeconfig(path, server, ca, cert, key string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["olmv1-local"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: ca}
	cfg.AuthInfos["olmv1-admin"] = &clientcmdapi.AuthInfo{ClientCertificate: cert, ClientKey: key}
	cfg.Contexts["olmv1-local"] = &clientcmdapi.Context{Cluster: "olmv1-local", AuthInfo: "olmv1-admin"}
	cfg.CurrentContext = "olmv1-local"
	return clientcmd.WriteToFile(*cfg, path)
}
