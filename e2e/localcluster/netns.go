package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// Netns is a network namespace this harness created (`ip netns add`). A real-node cluster runs all of
// its processes inside one: the node, pod and Service addresses exist only there, nothing routes out,
// and the host's own network, sysctls and iptables are never touched. From the host's network
// namespace only loopback is dialled; the harness reaches into the namespace with Dial and Listen,
// which create their sockets inside it.
type Netns struct {
	Name string `json:"name"`
	// NodeIP is the address of the namespace's own host (on its lo): the node's InternalIP.
	NodeIP string `json:"nodeIP"`
	// Inode identifies the namespace after its name is gone (for the leftovers check).
	Inode uint64 `json:"inode"`
	// File, when set, is the namespace's file instead of /run/netns/<Name>: a namespace this harness
	// did not name itself, such as a kind node container's (/proc/<pid>/ns/net; see KindNode).
	File string `json:"file,omitempty"`
}

// netnsDir is where iproute2 keeps named network namespaces.
const netnsDir = "/run/netns"

// Path is the namespace's file, as nsenter --net takes it.
func (n *Netns) Path() string {
	if n.File != "" {
		return n.File
	}
	return filepath.Join(netnsDir, n.Name)
}

// createNetns adds the namespace, brings its loopback up with nodeIP on it (this kernel may have no
// dummy device), routes serviceCIDR there (a connection from the namespace's own processes to a
// ClusterIP needs a route before kube-proxy's rules rewrite its destination; the namespace has no
// default route) and turns on forwarding inside it (pods reach Services through the namespace's own
// stack).
func createNetns(ctx context.Context, name, nodeIP, serviceCIDR string) (*Netns, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("real nodes need root (network and mount namespaces, cgroups): run as root")
	}
	n := &Netns{Name: name, NodeIP: nodeIP}
	steps := [][]string{
		{"ip", "netns", "add", name},
		{"ip", "-n", name, "link", "set", "lo", "up"},
		{"ip", "-n", name, "addr", "add", nodeIP + "/32", "dev", "lo"},
		{"ip", "-n", name, "route", "add", serviceCIDR, "dev", "lo"},
	}
	for _, s := range steps {
		if err := run(ctx, s...); err != nil {
			_ = n.delete(ctx)
			return nil, err
		}
	}
	n.Inode = nsInode(n.Path())
	// Written by a process inside the namespace: net.* sysctls are per namespace.
	if err := run(ctx, "nsenter", "--net="+n.Path(), "--", "sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward"); err != nil {
		_ = n.delete(ctx)
		return nil, err
	}
	return n, nil
}

// delete removes the namespace (it disappears once no process is left in it).
func (n *Netns) delete(ctx context.Context) error {
	if _, err := os.Stat(n.Path()); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return run(ctx, "ip", "netns", "delete", n.Name)
}

// inNetns runs f on an OS thread that has joined the namespace, and puts the thread back into its
// own namespace afterwards. Sockets made by f stay in the namespace for their whole life, whichever
// thread later uses them. The thread must survive: processes this program starts die with the thread
// that started them (Pdeathsig), and any thread may have started one. Only when the thread cannot be
// put back is it left locked, so that the Go runtime ends it rather than run other goroutines in the
// namespace.
func (n *Netns) inNetns(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		own, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("opening this thread's network namespace: %w", err)
			return
		}
		defer unix.Close(own)
		target, err := unix.Open(n.Path(), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("opening network namespace %s: %w", n.Path(), err)
			return
		}
		defer unix.Close(target)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("entering network namespace %s: %w", n.Name, err)
			return
		}
		ferr := f()
		if err := unix.Setns(own, unix.CLONE_NEWNET); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("leaving network namespace %s: %w", n.Name, err))
			return // still locked: the runtime ends this thread
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// Dial connects to addr inside the namespace.
func (n *Netns) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := n.inNetns(func() (err error) {
		var d net.Dialer
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// Listen listens on addr inside the namespace.
func (n *Netns) Listen(network, addr string) (net.Listener, error) {
	var l net.Listener
	err := n.inNetns(func() (err error) {
		l, err = net.Listen(network, addr)
		return err
	})
	return l, err
}

// nsenterArgs returns the command line that runs bin with args inside the namespace, and inside the
// mount namespace of mountPID when it is not 0.
func (n *Netns) nsenterArgs(mountPID int, bin string, args ...string) (string, []string) {
	pre := []string{"--net=" + n.Path()}
	if mountPID != 0 {
		pre = append(pre, fmt.Sprintf("--mount=/proc/%d/ns/mnt", mountPID))
	}
	return "nsenter", append(append(pre, "--", bin), args...)
}

// run runs a command, returning its output in the error when it fails.
func run(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
