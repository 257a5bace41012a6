// Command olmv1-dev is the local development tool: it builds the Kubernetes binaries from the Go module
// proxy, runs a real control plane on 127.0.0.1 (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kwok), serves a local OCI registry, and runs OLM v1 on top (`make run`).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/olmv1/olmv1/e2e/bundletest"
	"github.com/olmv1/olmv1/e2e/localcluster"
)

const usage = `olmv1-dev: a real Kubernetes control plane and OLM v1 on this machine, without Docker.

Commands:
  build     build (once) and cache kube-apiserver, kube-controller-manager, kube-scheduler,
            kubectl, kubelet, kube-proxy, etcd and kwok; prints their directory
            (--real-nodes: also containerd, the CNI plugins and the pause program)
  up        start a local control plane in the background (builds first if needed;
            --real-nodes 1: with a real kubelet node, all in a network namespace of its own; root)
  down      stop exactly the processes 'up' started
  env       print KUBECONFIG and KUBEBUILDER_ASSETS for a running cluster ('eval $(olmv1-dev env)')
  registry  serve an OCI registry on 127.0.0.1 (go-containerregistry's, in memory)
  forward   forward 127.0.0.1:PORT to an address inside a real-node cluster's network namespace
            (started by 'up --real-nodes'; --netns NAME --listen 127.0.0.1:PORT --to ADDR)
  run       build, start the control plane, the registry and the three controllers, install the CRDs,
            print what to try with kubectl, and stop everything on Ctrl-C
            (--real-nodes 1: a real kubelet node and OLM v1 as pods from its Helm chart; root)
  bundle-test  test a bundle's install modes, alm-examples, uninstall and upgrade on a throw-away
            local control plane (DIR|IMAGE [--upgrade-from DIR|IMAGE | --catalog IMAGE] [--junit FILE])

Flags common to the cluster commands:
  --cache-dir DIR  where binaries are cached (default $OLMV1_CACHE_DIR or ~/.cache/olmv1)
  --dir DIR        cluster state: certificates, etcd data, logs, kubeconfig (default .localcluster)

Examples:
  olmv1-dev up && eval "$(olmv1-dev env)" && kubectl get nodes
  olmv1-dev registry --addr 127.0.0.1:5001
  olmv1-dev run --bin-dir bin
`

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		fmt.Fprint(os.Stderr, usage)
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "build":
		err = buildCmd(ctx, args)
	case "up":
		err = upCmd(ctx, args)
	case "down":
		err = downCmd(args)
	case "env":
		err = envCmd(args)
	case "registry":
		err = registryCmd(ctx, args)
	case "run":
		err = runCmd(ctx, args)
	case "forward":
		err = forwardCmd(ctx, args)
	case "bundle-test":
		err = bundletest.Main(ctx, args, os.Stdout)
	default:
		err = fmt.Errorf("unknown command %q\n\n%s", cmd, usage)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "olmv1-dev:", err)
		os.Exit(1)
	}
}

type clusterFlags struct {
	cacheDir string
	dir      string
	nodes    int
}

func (c *clusterFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&c.cacheDir, "cache-dir", localcluster.DefaultCacheDir(), "where the Kubernetes, etcd and kwok binaries are cached")
	fs.StringVar(&c.dir, "dir", ".localcluster", "cluster state directory: certificates, etcd data, logs, kubeconfig")
	fs.IntVar(&c.nodes, "nodes", 2, "number of kwok fake nodes")
}

func (c *clusterFlags) absDir() string {
	d, err := filepath.Abs(c.dir)
	if err != nil {
		return c.dir
	}
	return d
}

func buildCmd(ctx context.Context, args []string) error {
	var cf clusterFlags
	fs := flag.NewFlagSet("build", flag.ExitOnError)
	cf.bind(fs)
	realNodes := fs.Bool("real-nodes", false, "also build what real nodes run: containerd, the CNI plugins and the pause program (kubelet and kube-proxy are always built)")
	_ = fs.Parse(args)
	build := func() (*localcluster.Binaries, error) { return localcluster.Build(ctx, cf.cacheDir, os.Stderr) }
	if *realNodes {
		build = func() (*localcluster.Binaries, error) {
			b, _, err := localcluster.BuildNode(ctx, cf.cacheDir, os.Stderr)
			return b, err
		}
	}
	b, err := build()
	if err != nil {
		return err
	}
	fmt.Println(b.AssetsDir)
	return nil
}

func upCmd(ctx context.Context, args []string) error {
	var cf clusterFlags
	fs := flag.NewFlagSet("up", flag.ExitOnError)
	cf.bind(fs)
	realNodes := fs.Int("real-nodes", 0, "real kubelet nodes (0 or 1; root): the cluster then runs in a network namespace of its own, reached through a forwarder process on 127.0.0.1")
	_ = fs.Parse(args)
	o := localcluster.Options{Dir: cf.absDir(), Nodes: cf.nodes, Detached: true, Log: os.Stderr, RealNodes: *realNodes}
	var err error
	if *realNodes > 0 {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		o.Forwarder = []string{self, "forward"}
		o.Binaries, o.NodeBinaries, err = localcluster.BuildNode(ctx, cf.cacheDir, os.Stderr)
		if err != nil {
			return err
		}
	} else if o.Binaries, err = localcluster.Build(ctx, cf.cacheDir, os.Stderr); err != nil {
		return err
	}
	c, err := localcluster.Up(ctx, o)
	if err != nil {
		return err
	}
	printEnv(c)
	fmt.Fprintf(os.Stderr, "stop it with: olmv1-dev down --dir %s\n", c.Dir)
	return nil
}

func downCmd(args []string) error {
	var cf clusterFlags
	fs := flag.NewFlagSet("down", flag.ExitOnError)
	cf.bind(fs)
	_ = fs.Parse(args)
	c, err := localcluster.Load(cf.absDir())
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(os.Stderr, "no local cluster is running from %s\n", cf.absDir())
		return nil
	}
	if err != nil {
		return err
	}
	return c.Stop()
}

func envCmd(args []string) error {
	var cf clusterFlags
	fs := flag.NewFlagSet("env", flag.ExitOnError)
	cf.bind(fs)
	_ = fs.Parse(args)
	c, err := localcluster.Load(cf.absDir())
	if err != nil {
		return fmt.Errorf("no local cluster state in %s (start one with `olmv1-dev up`): %w", cf.absDir(), err)
	}
	printEnv(c)
	return nil
}

func printEnv(c *localcluster.Cluster) {
	fmt.Printf("export KUBECONFIG=%s\n", c.Kubeconfig)
	fmt.Printf("export KUBEBUILDER_ASSETS=%s\n", c.AssetsDir)
	// kubectl v1.37.2 lives beside kube-apiserver and etcd.
	fmt.Printf("export PATH=%s:$PATH\n", c.AssetsDir)
}

// forwardCmd is the forwarder process of a detached real-node cluster: it accepts on a loopback
// address of this machine and dials the target inside the cluster's network namespace.
func forwardCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("forward", flag.ExitOnError)
	netns := fs.String("netns", "", "the cluster's network namespace (a name under /run/netns)")
	listen := fs.String("listen", "", "loopback address to accept on, 127.0.0.1:PORT")
	to := fs.String("to", "", "address to dial inside the namespace")
	_ = fs.Parse(args)
	if *netns == "" || *listen == "" || *to == "" {
		return errors.New("forward needs --netns, --listen and --to")
	}
	f, err := localcluster.ForwardFrom(*listen, &localcluster.Netns{Name: *netns}, *to)
	if err != nil {
		return err
	}
	<-ctx.Done()
	return f.Close()
}
