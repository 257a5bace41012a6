package localcluster

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	gcrname "github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// pauseImage is the name the node's containerd knows the pod sandbox image by (imported, never pulled).
const pauseImage = "olmv1.local/pause:" + pauseVersion

// containerdConfig is the node's containerd configuration: every path under the node's directory or
// the private /run and /var/lib, nothing imported from the host, NRI off, the runc shim with cgroupfs,
// OOM score adjustments restricted (no CAP_SYS_RESOURCE on these machines), the pause image pinned,
// and registry hosts from the node's certs.d (the local registry over plain HTTP).
func containerdConfig(n *RealNode, nb *NodeBinaries) string {
	return fmt.Sprintf(`version = 4
root = "/var/lib/containerd"
state = "/run/containerd"
imports = []

[plugins]
  [plugins.'io.containerd.server.v1.grpc']
    address = %q
  [plugins.'io.containerd.server.v1.ttrpc']
    address = %q
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = "overlayfs"
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = %q
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = %q
  [plugins.'io.containerd.cri.v1.runtime']
    restrict_oom_score_adj = true
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = "runc"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = %q
          SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = [%q]
      conf_dir = %q
  [plugins.'io.containerd.nri.v1.nri']
    disable = true
`, n.Socket, n.Socket+".ttrpc", pauseImage, filepath.Join(n.Dir, "certs.d"), nb.Runc, nb.CNIDir, filepath.Join(n.Dir, "cni", "net.d"))
}

// cniConfig is a bridge network with host-local addresses from the node's pod CIDR; the namespace's
// own stack is every pod's gateway.
func cniConfig() string {
	return `{
  "cniVersion": "1.0.0",
  "name": "olmv1",
  "plugins": [
    {
      "type": "bridge", "bridge": "` + realNodeBridge + `", "isGateway": true, "ipMasq": false, "hairpinMode": true,
      "ipam": {"type": "host-local", "ranges": [[{"subnet": "` + realNodePodCIDR + `"}]], "routes": [{"dst": "0.0.0.0/0"}]}
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`
}

// kubeletConfig: cgroup v1 allowed (failCgroupV1: false), cgroupfs under the node's own cgroup root,
// webhook authentication and authorization against the API server, the cluster DNS (coredns.go) as
// every pod's nameserver with no upstream resolvers (an empty resolv.conf), and eviction
// thresholds low enough for a shared development disk.
func kubeletConfig(n *RealNode, p pki) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
failSwapOn: false
cgroupDriver: cgroupfs
cgroupRoot: %q
cgroupsPerQOS: true
enforceNodeAllocatable: [pods]
containerRuntimeEndpoint: %q
address: %q
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %q}
authorization: {mode: Webhook}
resolvConf: %q
clusterDomain: %s
clusterDNS: [%s]
serializeImagePulls: false
rotateCertificates: false
serverTLSBootstrap: false
protectKernelDefaults: false
volumePluginDir: %q
podLogsDir: /var/log/pods
evictionHard: {memory.available: "100Mi", nodefs.available: "1%%", imagefs.available: "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
nodeStatusReportFrequency: 10s
maxPods: 110
`, n.CgroupRoot, "unix://"+n.Socket, realNodeIP, p.path(caCert), filepath.Join(n.Dir, "resolv.conf"), clusterDomain, ClusterDNSIP, filepath.Join(n.Dir, "volume-plugins"))
}

// kubeProxyConfig: iptables rules inside the cluster's namespace only; masquerade every Service
// connection (the bridge has no br_netfilter, so a pod reaching a Service backed by a pod on the same
// bridge needs its reply to come back through the namespace's stack); no conntrack sysctls (they are
// machine-wide).
func kubeProxyConfig(n *RealNode) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: %q}
hostnameOverride: %q
bindAddress: %q
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
mode: iptables
clusterCIDR: 10.244.0.0/16
iptables: {masqueradeAll: true, localhostNodePorts: false}
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
`, filepath.Join(n.Dir, "kube-proxy.kubeconfig"), n.Name, realNodeIP)
}

// registryHosts tells containerd the local registry at addr (host:port) speaks plain HTTP.
func registryHosts(addr string) string {
	return mirrorHosts("http://"+addr, addr)
}

// mirrorHosts is a containerd hosts.toml for the registry at server, pulled from the plain-HTTP
// registry at mirror (host:port) instead.
func mirrorHosts(server, mirror string) string {
	return fmt.Sprintf("server = %q\n\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", server, "http://"+mirror)
}

// MirrorRegistry makes the real node pull every image of the registry host (as an image reference
// names it: "registry.example.test", "quay.io", "docker.io") from the plain-HTTP registry at mirror,
// an address inside the cluster's network namespace (Registry.ClusterAddr), where the image must
// have the same repository path and tag or digest. Pods keep their image names, as with `kind load`;
// containerd reads these files on every pull, so the mirror applies at once.
func (c *Cluster) MirrorRegistry(host, mirror string) error {
	if c.Node == nil {
		return fmt.Errorf("localcluster: a registry mirror for %s needs a real node (Options.RealNodes)", host)
	}
	server := "https://" + host
	if host == "docker.io" || host == "index.docker.io" {
		server = "https://registry-1.docker.io"
	}
	dir := filepath.Join(c.Node.Dir, "certs.d", host)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(mirrorHosts(server, mirror)), 0o644)
}

// writeBinaryImage packs the static program bin as a one-layer image holding only /<name>, run as
// user, in a docker-archive tarball named tag, for `ctr images import`.
func writeBinaryImage(bin, name, user, tag, out string) error {
	img, err := binaryImage(bin, name, user)
	if err != nil {
		return err
	}
	t, err := gcrname.NewTag(tag)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(out, t, img)
}

// binaryImage is a one-layer image holding only the static program bin as /<name>, its entrypoint,
// run as user.
func binaryImage(bin, name, user string) (v1.Image, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", runtime.GOARCH
	cfg.Config = v1.Config{Entrypoint: []string{"/" + name}, User: user}
	return mutate.ConfigFile(img, cfg)
}
