package kindnode

import "fmt"

// PodSubnet is the node's pod network (the baked bridge configuration uses its first /24).
const PodSubnet = "10.244.0.0/16"

// KindConfig is the kind cluster configuration the node image needs: kind's default CNI off (the
// bridge is baked in), cgroup v1 allowed and the cgroupfs driver (containerd's runc shim runs with
// cgroupfs; these engines run cgroup v1), the pods' upstream resolver the entrypoint writes, the etcd and CoreDNS built here by their tags, and Service
// traffic masqueraded (pods on one bridge reach each other's Services).
func KindConfig() string {
	return fmt.Sprintf(`kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
networking:
  disableDefaultCNI: true
  podSubnet: %q
nodes:
- role: control-plane
kubeadmConfigPatches:
- |
  kind: ClusterConfiguration
  etcd:
    local:
      imageTag: %q
  dns:
    imageTag: %q
- |
  kind: KubeletConfiguration
  cgroupDriver: cgroupfs
  failCgroupV1: false
  resolvConf: /kind/pod-resolv.conf
- |
  kind: KubeProxyConfiguration
  masqueradeAll: true
`, PodSubnet, EtcdTag, CoreDNSTag)
}
