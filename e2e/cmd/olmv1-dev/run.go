package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/olmv1/olmv1/e2e/localcluster"
)

func registryCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("registry", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:5001", "loopback address to listen on")
	quiet := fs.Bool("quiet", false, "do not log requests")
	_ = fs.Parse(args)
	logw := os.Stderr
	if *quiet {
		logw = nil
	}
	r, err := localcluster.StartRegistry(*addr, logw)
	if err != nil {
		return err
	}
	fmt.Printf("OCI registry serving on http://%s (push with insecure/plain-HTTP; Ctrl-C to stop)\n", r.Addr)
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = r.Stop(sctx)
	}()
	return r.Wait()
}

// runCmd is `make run`: a working OLM v1 on a local control plane, in the foreground.
func runCmd(ctx context.Context, args []string) error {
	var cf clusterFlags
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	cf.bind(fs)
	binDir := fs.String("bin-dir", "bin", "directory with the catalogd, rukpak and operator-controller binaries")
	repoRoot := fs.String("repo", ".", "repository root (for the CRDs)")
	registryAddr := fs.String("registry-addr", "127.0.0.1:5001", "loopback address of the local OCI registry")
	_ = fs.Parse(args)

	b, err := localcluster.Build(ctx, cf.cacheDir, os.Stderr)
	if err != nil {
		return err
	}
	c, err := localcluster.Up(ctx, localcluster.Options{Dir: cf.absDir(), Binaries: b, Nodes: cf.nodes, Log: os.Stderr})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(os.Stderr, "olmv1-dev: stopping the control plane")
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "olmv1-dev:", err)
		}
	}()
	reg, err := localcluster.StartRegistry(*registryAddr, nil)
	if err != nil {
		return fmt.Errorf("starting the registry on %s: %w", *registryAddr, err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = reg.Stop(sctx)
	}()
	cfg, err := c.RESTConfig()
	if err != nil {
		return err
	}
	crds, err := localcluster.InstallCRDs(cfg, *repoRoot)
	if err != nil {
		return err
	}
	absBin, err := filepath.Abs(*binDir)
	if err != nil {
		return err
	}
	ctrls, err := localcluster.StartControllers(absBin, c.Kubeconfig, filepath.Join(c.Dir, "logs"), map[string][]string{"catalogd": {"--storage-dir=" + filepath.Join(c.Dir, "catalogd", "storage"), "--cache-dir=" + filepath.Join(c.Dir, "catalogd", "cache")}})
	defer func() {
		for i := len(ctrls) - 1; i >= 0; i-- {
			_ = ctrls[i].Stop(5 * time.Second)
		}
	}()
	if err != nil {
		return err
	}
	if err := localcluster.WaitControllersReady(ctx, ctrls, 2*time.Minute); err != nil {
		return err
	}
	fmt.Printf(`
OLM v1 is running on a local control plane (%d CRDs installed; logs in %s).

  export KUBECONFIG=%s
  export PATH=%s:$PATH        # kubectl %s, built with the control plane
  kubectl get crds
  kubectl get nodes                 # kwok fake nodes: Deployments become Available
  kubectl get catalogs,bundledeployments,operators

Local OCI registry: %s (plain HTTP). Controllers:
`, len(crds), filepath.Join(c.Dir, "logs"), c.Kubeconfig, c.AssetsDir, localcluster.KubernetesVersion, reg.Addr)
	for _, ctl := range ctrls {
		fmt.Printf("  %-20s pid %-7d ready %s  metrics https://%s/metrics\n", ctl.Name, ctl.PID, ctl.HealthURL, ctl.MetricsAddr)
	}
	fmt.Println("\nPress Ctrl-C to stop everything.")
	<-ctx.Done()
	return nil
}
