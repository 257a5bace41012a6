package localcluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Versions of what a real node runs besides kubelet and kube-proxy (which come from the control plane's
// build, see kubernetesCommands). They are part of the cache key.
const (
	ContainerdVersion = "v2.4.2"
	CNIPluginsVersion = "v1.10.0"
	// CoreDNSVersion is the cluster DNS of real-node clusters (a build with the few plugins it needs).
	CoreDNSVersion = "v1.15.0"
	// pauseVersion names the pause image built here; it is this project's own program, not upstream's.
	pauseVersion = "olmv1-1"
)

// cniPlugins are the CNI plugins a node's bridge network uses.
var cniPlugins = []string{"main/bridge", "main/loopback", "ipam/host-local", "meta/portmap"}

// NodeBinaries are what a real node needs beyond the control plane's Binaries.
type NodeBinaries struct {
	Containerd, Shim, Ctr string
	// CNIDir holds the CNI plugins (bridge, loopback, host-local, portmap).
	CNIDir string
	// Runc is the OCI runtime: Debian's runc package (installed with the other commands a node needs
	// when missing, as root; see nodeCommands).
	Runc string
	// Pause is the static pause program; PauseImage packs it as an image (see pause.go).
	Pause string
	// CoreDNS is the cluster DNS server (see coredns.go).
	CoreDNS string
	// Kubelet and KubeProxy are the control plane build's.
	Kubelet, KubeProxy string
}

func nodeComponents(cacheDir string) []*component {
	src := filepath.Join(cacheDir, "src")
	names := make([]string, 0, len(cniPlugins))
	for _, p := range cniPlugins {
		names = append(names, filepath.Base(p))
	}
	return []*component{
		{name: "containerd", version: ContainerdVersion, srcDir: filepath.Join(src, "containerd-"+ContainerdVersion), outDir: filepath.Join(cacheDir, "containerd", ContainerdVersion), files: []string{"containerd", "containerd-shim-runc-v2", "ctr"}, build: buildContainerd},
		{name: "cni-plugins", version: CNIPluginsVersion, srcDir: filepath.Join(src, "cni-plugins-"+CNIPluginsVersion), outDir: filepath.Join(cacheDir, "cni-plugins", CNIPluginsVersion), files: names, build: buildCNIPlugins},
		{name: "coredns", version: CoreDNSVersion, srcDir: filepath.Join(src, "coredns-"+CoreDNSVersion), outDir: filepath.Join(cacheDir, "coredns", CoreDNSVersion), files: []string{"coredns"}, build: buildCoreDNS},
		{name: "pause", version: pauseVersion, srcDir: filepath.Join(src, "pause-"+pauseVersion), outDir: filepath.Join(cacheDir, "pause", pauseVersion), files: []string{"pause"}, build: buildPause},
	}
}

func nodeLayout(cacheDir string, b *Binaries) *NodeBinaries {
	c := filepath.Join(cacheDir, "containerd", ContainerdVersion)
	return &NodeBinaries{
		Containerd: filepath.Join(c, "containerd"),
		Shim:       filepath.Join(c, "containerd-shim-runc-v2"),
		Ctr:        filepath.Join(c, "ctr"),
		CNIDir:     filepath.Join(cacheDir, "cni-plugins", CNIPluginsVersion),
		Pause:      filepath.Join(cacheDir, "pause", pauseVersion, "pause"),
		CoreDNS:    filepath.Join(cacheDir, "coredns", CoreDNSVersion, "coredns"),
		Kubelet:    b.Kubelet,
		KubeProxy:  b.KubeProxy,
	}
}

// BuildNode builds (once, cached in cacheDir) what a real node runs: containerd, its runc shim and
// ctr, the CNI plugins, CoreDNS and the pause program; it installs the Debian packages of nodeCommands
// (runc, iptables, …) when the machine lacks them. It
// builds the control plane first (kubelet and kube-proxy are part of that build). Progress goes to log.
func BuildNode(ctx context.Context, cacheDir string, log io.Writer) (*Binaries, *NodeBinaries, error) {
	b, err := Build(ctx, cacheDir, log)
	if err != nil {
		return nil, nil, err
	}
	if err := buildComponents(ctx, nodeComponents(cacheDir), log); err != nil {
		return nil, nil, err
	}
	nb := nodeLayout(cacheDir, b)
	if nb.Runc, err = ensureNodeCommands(ctx, log); err != nil {
		return nil, nil, err
	}
	return b, nb, nil
}

// CachedNodeBinaries returns the node binaries in cacheDir, or an error naming what is missing.
func CachedNodeBinaries(cacheDir string) (*Binaries, *NodeBinaries, error) {
	b, err := CachedBinaries(cacheDir)
	if err != nil {
		return nil, nil, err
	}
	for _, c := range nodeComponents(cacheDir) {
		if !c.complete() {
			return nil, nil, fmt.Errorf("%s %s is not built in %s (run `make node-binaries` or `go run ./e2e/cmd/olmv1-dev build --real-nodes`)", c.name, c.version, cacheDir)
		}
	}
	nb := nodeLayout(cacheDir, b)
	for _, c := range nodeCommands {
		if _, err := exec.LookPath(c.command); err != nil {
			return nil, nil, fmt.Errorf("%s is not installed (run `make node-binaries`, which installs the Debian packages a node needs, or `apt-get install %s`)", c.command, c.pkg)
		}
	}
	nb.Runc, _ = exec.LookPath("runc")
	return b, nb, nil
}

// nodeCommands are the machine's commands a real node needs, with the Debian package of each: runc
// (the OCI runtime), iptables (kube-proxy's rules inside the cluster's namespace), iproute2 (the
// namespace and its addresses) and util-linux (nsenter, unshare, mount).
var nodeCommands = []struct{ command, pkg string }{
	{"runc", "runc"}, {"iptables-restore", "iptables"}, {"ip", "iproute2"}, {"nsenter", "util-linux"}, {"unshare", "util-linux"},
}

// ensureNodeCommands installs the Debian packages of nodeCommands that are missing (the machines of this
// project are Debian and run as root) and returns runc's path.
func ensureNodeCommands(ctx context.Context, log io.Writer) (string, error) {
	var missing []string
	for _, c := range nodeCommands {
		if _, err := exec.LookPath(c.command); err != nil && !slices.Contains(missing, c.pkg) {
			missing = append(missing, c.pkg)
		}
	}
	if len(missing) == 0 {
		return exec.LookPath("runc")
	}
	if os.Geteuid() != 0 {
		return "", fmt.Errorf("real nodes need Debian's packages %v and installing them needs root: run `sudo apt-get install %s`", missing, strings.Join(missing, " "))
	}
	fmt.Fprintf(log, "localcluster: installing Debian's packages %v\n", missing)
	for _, args := range [][]string{{"update"}, append([]string{"install", "-y", "--no-install-recommends"}, missing...)} {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("apt-get %v: %w", args, err)
		}
	}
	return exec.LookPath("runc")
}

func buildContainerd(ctx context.Context, c *component, log io.Writer) error {
	const mod = "github.com/containerd/containerd/v2"
	main := "//go:build tools\n\n// Generated by olmv1 localcluster: pins containerd for `go build`.\npackage tools\n\nimport (\n" +
		"\t_ \"" + mod + "/cmd/containerd\"\n\t_ \"" + mod + "/cmd/containerd-shim-runc-v2\"\n\t_ \"" + mod + "/cmd/ctr\"\n)\n"
	if err := writeModule(c.srcDir, "olmv1.local/containerdbin", []string{mod + " " + ContainerdVersion}, nil, main); err != nil {
		return err
	}
	if err := goCmd(ctx, c.srcDir, log, "mod", "tidy").Run(); err != nil {
		return fmt.Errorf("go mod tidy: %w", err)
	}
	// No btrfs, devmapper or zfs snapshotters (they need cgo); overlayfs and native remain.
	ldflags := "-s -w -X " + mod + "/version.Version=" + ContainerdVersion
	args := []string{"build", "-trimpath", "-tags=no_btrfs no_devmapper no_zfs", "-ldflags=" + ldflags, "-o", c.outDir + string(filepath.Separator)}
	for _, cmd := range c.files {
		args = append(args, mod+"/cmd/"+cmd)
	}
	return goCmd(ctx, c.srcDir, log, args...).Run()
}

func buildCNIPlugins(ctx context.Context, c *component, log io.Writer) error {
	const mod = "github.com/containernetworking/plugins"
	main := "//go:build tools\n\n// Generated by olmv1 localcluster: pins the CNI plugins for `go build`.\npackage tools\n\nimport (\n"
	for _, p := range cniPlugins {
		main += "\t_ \"" + mod + "/plugins/" + p + "\"\n"
	}
	main += ")\n"
	if err := writeModule(c.srcDir, "olmv1.local/cnibin", []string{mod + " " + CNIPluginsVersion}, nil, main); err != nil {
		return err
	}
	if err := goCmd(ctx, c.srcDir, log, "mod", "tidy").Run(); err != nil {
		return fmt.Errorf("go mod tidy: %w", err)
	}
	args := []string{"build", "-trimpath", "-ldflags=-s -w", "-o", c.outDir + string(filepath.Separator)}
	for _, p := range cniPlugins {
		args = append(args, mod+"/plugins/"+p)
	}
	return goCmd(ctx, c.srcDir, log, args...).Run()
}

// coreDNSPlugins are the CoreDNS plugins the cluster DNS uses (the full set pulls in every cloud
// provider's SDK); the Corefile in coredns.go uses only these.
var coreDNSPlugins = []string{"errors", "health", "ready", "kubernetes", "cache", "log"}

func buildCoreDNS(ctx context.Context, c *component, log io.Writer) error {
	return buildCoreDNSWith(ctx, c, coreDNSPlugins, log)
}

// buildCoreDNSWith builds CoreDNS with only plugins compiled in.
func buildCoreDNSWith(ctx context.Context, c *component, plugins []string, log io.Writer) error {
	const mod = "github.com/coredns/coredns"
	main := "// Generated by olmv1 localcluster: CoreDNS with the plugins the real-node cluster DNS uses.\npackage main\n\nimport (\n\t\"" + mod + "/coremain\"\n"
	for _, p := range plugins {
		main += "\t_ \"" + mod + "/plugin/" + p + "\"\n"
	}
	main += ")\n\nfunc main() { coremain.Run() }\n"
	if err := writeModule(c.srcDir, "olmv1.local/corednsbin", []string{mod + " " + CoreDNSVersion}, nil, main); err != nil {
		return err
	}
	if err := goCmd(ctx, c.srcDir, log, "mod", "tidy").Run(); err != nil {
		return fmt.Errorf("go mod tidy: %w", err)
	}
	return goCmd(ctx, c.srcDir, log, "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(c.outDir, "coredns"), ".").Run()
}

// pauseSource is the pod sandbox's program: it holds the pod's namespaces, reaps the zombies of a
// shared PID namespace, and exits on SIGINT or SIGTERM.
const pauseSource = `// Generated by olmv1 localcluster: the pod sandbox program.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
`

func buildPause(ctx context.Context, c *component, log io.Writer) error {
	if err := writeModule(c.srcDir, "olmv1.local/pause", nil, nil, pauseSource); err != nil {
		return err
	}
	return goCmd(ctx, c.srcDir, log, "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(c.outDir, "pause"), ".").Run()
}

// buildComponents builds every component that is not complete, with progress lines.
func buildComponents(ctx context.Context, comps []*component, log io.Writer) error {
	for _, c := range comps {
		if c.complete() {
			continue
		}
		// Another build (a second `olmv1-dev build`, a test binary) may be writing the same cache:
		// wait for it instead of building the same files twice at once.
		unlock, err := lockCache(filepath.Dir(c.outDir), c.name, log)
		if err != nil {
			return err
		}
		defer unlock()
	}
	for _, c := range comps {
		if c.complete() {
			fmt.Fprintf(log, "localcluster: %s %s cached in %s\n", c.name, c.version, c.outDir)
			continue
		}
		start := time.Now()
		fmt.Fprintf(log, "localcluster: building %s %s from the Go module proxy (once; cached in %s)\n", c.name, c.version, c.outDir)
		stop := progress(log, c.name, start)
		err := func() error {
			if err := os.MkdirAll(c.srcDir, 0o755); err != nil {
				return err
			}
			if err := os.MkdirAll(c.outDir, 0o755); err != nil {
				return err
			}
			return c.build(ctx, c, log)
		}()
		stop()
		if err != nil {
			return fmt.Errorf("building %s %s: %w", c.name, c.version, err)
		}
		if err := os.WriteFile(filepath.Join(c.outDir, stampFile), []byte(c.version+"\n"), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(log, "localcluster: built %s %s in %s\n", c.name, c.version, time.Since(start).Round(time.Second))
	}
	return nil
}

// lockCache takes an exclusive lock on dir/.build.lock (creating dir), printing that it waits when
// another process holds it; unlock releases it. The lock is released by the kernel when the process
// dies, so a killed build never leaves the cache locked.
func lockCache(dir, name string, log io.Writer) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, ".build.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		fmt.Fprintf(log, "localcluster: another process is building %s into %s; waiting for it\n", name, dir)
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", f.Name(), err)
		}
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}
