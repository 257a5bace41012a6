package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/olmv1/olmv1/e2e/localcluster"
	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
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
	realNodes := fs.Int("real-nodes", 0, "real kubelet nodes (0 or 1; root): OLM v1 then runs as real pods, installed by its Helm chart (docs/real-nodes.md)")
	_ = fs.Parse(args)
	if *realNodes > 0 {
		absBin, err := filepath.Abs(*binDir)
		if err != nil {
			return err
		}
		return runRealNodes(ctx, cf, absBin, *repoRoot, *registryAddr, *realNodes)
	}

	e, err := startRunEnvironment(ctx, cf, *binDir, *repoRoot, *registryAddr)
	defer stopRunEnvironment(e)
	if err != nil {
		return err
	}
	demoRef, err := pushDemoImages(ctx, *repoRoot, e.Registry.Addr)
	if err != nil {
		return err
	}
	printRunning(e, demoRef)
	<-ctx.Done()
	return nil
}

// startRunEnvironment builds the control plane's binaries when they are not cached and starts the
// control plane, the local registry and the controllers (binaries in binDir, CRDs from repoRoot).
// It may return an Environment together with an error: stop it with stopRunEnvironment.
func startRunEnvironment(ctx context.Context, cf clusterFlags, binDir, repoRoot, registryAddr string) (*localcluster.Environment, error) {
	if _, err := localcluster.Build(ctx, cf.cacheDir, os.Stderr); err != nil {
		return nil, err
	}
	absBin, err := filepath.Abs(binDir)
	if err != nil {
		return nil, err
	}
	dir := cf.absDir()
	metadataPort, err := localcluster.FreePort()
	if err != nil {
		return nil, err
	}
	return localcluster.StartEnvironment(ctx, localcluster.EnvOptions{
		RepoRoot: repoRoot, BinDir: absBin, Dir: dir, CacheDir: cf.cacheDir, RegistryAddr: registryAddr, Log: os.Stderr,
		ControllerArgs: map[string][]string{
			"catalogd": {
				"--storage-dir=" + filepath.Join(dir, "catalogd", "storage"), "--cache-dir=" + filepath.Join(dir, "catalogd", "cache"),
				"--metadata-bind-address=127.0.0.1:" + strconv.Itoa(metadataPort), "--metadata-cert-dir=" + filepath.Join(dir, "catalogd", "metadata-certs"),
				"--metadata-apiservice=local",
			},
		},
	})
}

// stopRunEnvironment stops what startRunEnvironment started (nothing when e is nil).
func stopRunEnvironment(e *localcluster.Environment) {
	if e == nil {
		return
	}
	fmt.Fprintln(os.Stderr, "olmv1-dev: stopping the controllers, the registry and the control plane")
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "olmv1-dev:", err)
	}
}

// pushDemoImages pushes the demo catalog image and the example-operator images to the registry at
// registryAddr; it returns the demo catalog's reference.
func pushDemoImages(ctx context.Context, repoRoot, registryAddr string) (string, error) {
	demoRef := registryAddr + "/catalogs/demo:v1"
	if err := pushDemoCatalog(ctx, filepath.Join(repoRoot, "e2e", "testdata", "catalogs", "demo"), demoRef); err != nil {
		return "", err
	}
	// The seed's demo 1: example-operator bundles 0.1.0 and 0.2.0, catalog images index:0.1.0 and index:0.2.0.
	if _, _, err := localcluster.PushExampleOperator(ctx, repoRoot, registryAddr, "index"); err != nil {
		return "", fmt.Errorf("pushing the example-operator images: %w", err)
	}
	return demoRef, nil
}

// printRunning tells the user how to use the running environment e: the kubeconfig, the demo
// catalog (demoRef), the registry and the controllers.
func printRunning(e *localcluster.Environment, demoRef string) {
	c, reg, ctrls := e.Cluster, e.Registry, e.Controllers
	fmt.Printf(`
OLM v1 is running on a local control plane (logs in %s).

  export KUBECONFIG=%s
  export PATH=%s:$PATH        # kubectl %s, built with the control plane
  kubectl get crds
  kubectl get nodes                 # kwok fake nodes: Deployments become Available
  kubectl get catalogs,bundledeployments,operators

A demo catalog image is in the local registry; serve it and browse it with kubectl:

  kubectl apply -f - <<EOF
  apiVersion: catalogd.operatorframework.io/v1alpha1
  kind: Catalog
  metadata: {name: demo}
  spec: {source: {type: Image, image: {ref: %s}}}
  EOF
  kubectl wait catalog/demo --for=condition=Serving --timeout=60s
  kubectl get catalogmetadata -l catalog=demo,schema=olm.package

The README's demo 1 (an Operator installed from a catalog, then upgraded by a catalog update) uses
%[6]s/catalogs/index:0.1.0 and :0.2.0, already pushed.

Local OCI registry: %[6]s (plain HTTP). Controllers:
`, e.LogDir, c.Kubeconfig, c.AssetsDir, localcluster.KubernetesVersion, demoRef, reg.Addr)
	for _, ctl := range ctrls {
		fmt.Printf("  %-20s pid %-7d ready %s  metrics https://%s/metrics\n", ctl.Name, ctl.PID, ctl.HealthURL, ctl.MetricsAddr)
	}
	fmt.Println("\nPress Ctrl-C to stop everything.")
}

// pushDemoCatalog builds the demo catalog image from the repository's testdata and pushes it.
func pushDemoCatalog(ctx context.Context, dir, ref string) error {
	img, err := imagebuild.CatalogImage(dir)
	if err != nil {
		return err
	}
	_, err = imagebuild.Push(ctx, img, ref, imagebuild.WithInsecure())
	return err
}
