package localcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
)

// KindNode is a node of a kind cluster this harness created: a container on the machine's Docker
// engine. Its network namespace is the container's, which the harness enters from the host (Dial and
// Listen create their sockets inside it) the way it enters a real-node cluster's namespace: the host's
// own network namespace still dials only loopback.
type KindNode struct {
	// Name is the container's and the Kubernetes node's name (kind names them alike).
	Name string
	// ID is the container's full ID.
	ID string
	// PID is the container's init process (systemd) as this machine sees it.
	PID int
	// Netns is the container's network namespace; NodeIP is the node's address on its Docker network.
	Netns *Netns
}

// dockerInspect is the part of `docker inspect` a KindNode needs.
type dockerInspect struct {
	ID    string `json:"Id"`
	State struct {
		Pid     int  `json:"Pid"`
		Running bool `json:"Running"`
	} `json:"State"`
	NetworkSettings struct {
		Networks map[string]struct {
			IPAddress string `json:"IPAddress"`
		} `json:"Networks"`
	} `json:"NetworkSettings"`
}

// InspectKindNode finds the running kind node container named name (for a one-node cluster
// "<cluster>-control-plane").
func InspectKindNode(ctx context.Context, name string) (*KindNode, error) {
	out, err := exec.CommandContext(ctx, "docker", "inspect", "--type", "container", name).Output()
	if err != nil {
		return nil, fmt.Errorf("docker inspect %s: %w (is the kind cluster up? `make kind-cluster`)", name, exitText(err))
	}
	return parseKindNode(name, out)
}

func parseKindNode(name string, out []byte) (*KindNode, error) {
	var got []dockerInspect
	if err := json.Unmarshal(out, &got); err != nil {
		return nil, fmt.Errorf("docker inspect %s: %w", name, err)
	}
	if len(got) != 1 {
		return nil, fmt.Errorf("docker inspect %s: %d containers, want 1", name, len(got))
	}
	c := got[0]
	if !c.State.Running || c.State.Pid == 0 {
		return nil, fmt.Errorf("kind node %s is not running", name)
	}
	var ip string
	nets := make([]string, 0, len(c.NetworkSettings.Networks))
	for n := range c.NetworkSettings.Networks {
		nets = append(nets, n)
	}
	if len(nets) != 1 {
		return nil, fmt.Errorf("kind node %s is on %d Docker networks (%s), want 1", name, len(nets), strings.Join(nets, ", "))
	}
	ip = c.NetworkSettings.Networks[nets[0]].IPAddress
	if net.ParseIP(ip) == nil {
		return nil, fmt.Errorf("kind node %s has no IPv4 address on network %s", name, nets[0])
	}
	return &KindNode{
		Name: name, ID: c.ID, PID: c.State.Pid,
		Netns: &Netns{Name: "kind node " + name, NodeIP: ip, File: fmt.Sprintf("/proc/%d/ns/net", c.State.Pid)},
	}, nil
}

// ContainerProcesses lists the PIDs (as this machine sees them) of every process in the node's pods:
// the kubelet's cgroup root inside the node is /kubelet (the node image's entrypoint creates it), which
// is the container's own cgroup + /kubelet on the machine.
func (k *KindNode) ContainerProcesses() []int {
	var pids []int
	seen := map[int]bool{}
	for _, root := range []string{filepath.Join("docker", k.ID, "kubelet", "kubepods"), filepath.Join("system.slice", "docker-"+k.ID+".scope", "kubelet", "kubepods")} {
		for _, p := range cgroupProcs(root) {
			if !seen[p] {
				seen[p] = true
				pids = append(pids, p)
			}
		}
	}
	return pids
}

// ServeRegistry serves r inside the node's network namespace on the node's address and
// RealNodeRegistryPort (r.ClusterAddr becomes that address: the node's containerd and its pods pull
// from there) and tells the node's containerd that this registry speaks plain HTTP.
func (k *KindNode) ServeRegistry(ctx context.Context, r *Registry) error {
	if err := r.ServeIn(k.Netns); err != nil {
		return err
	}
	addr := r.ClusterAddr
	dir := "/etc/containerd/certs.d/" + addr
	cmd := exec.CommandContext(ctx, "docker", "exec", "-i", k.Name, "sh", "-c", `mkdir -p "$1" && cat > "$1/hosts.toml"`, "sh", dir)
	cmd.Stdin = strings.NewReader(registryHosts(addr))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("writing %s/hosts.toml in kind node %s: %w: %s", dir, k.Name, err, out)
	}
	return nil
}

// exitText adds a failed command's stderr to its error.
func exitText(err error) error {
	if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
	}
	return err
}
