package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/olmv1/olmv1/e2e/chart"
	"github.com/olmv1/olmv1/e2e/localcluster"
)

// runRealNodes is `olmv1-dev run --real-nodes 1` (`make run REAL_NODES=1`): the control plane and a
// real kubelet node in a network namespace of their own, the registry on 127.0.0.1 (pushes) and on
// the node's address (pulls), and OLM v1 installed by its Helm chart from the images of binDir, as real
// pods. It stops everything on Ctrl-C.
func runRealNodes(ctx context.Context, cf clusterFlags, binDir, repoRoot, registryAddr string, nodes int) error {
	bins, nodeBins, err := localcluster.BuildNode(ctx, cf.cacheDir, os.Stderr)
	if err != nil {
		return err
	}
	c, err := localcluster.Up(ctx, localcluster.Options{Dir: cf.absDir(), Binaries: bins, NodeBinaries: nodeBins, RealNodes: nodes, Log: os.Stderr})
	defer func() {
		if c != nil {
			fmt.Fprintln(os.Stderr, "olmv1-dev: stopping the node, the registry and the control plane")
			if err := c.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "olmv1-dev:", err)
			}
		}
	}()
	if err != nil {
		return err
	}
	reg, err := localcluster.StartRegistry(registryAddr, nil)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = reg.Stop(sctx)
	}()
	if err := reg.ServeIn(c.Netns); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "olmv1-dev: building the controller images and installing the Helm chart (real pods)")
	if _, _, err := chart.InstallFromBinaries(ctx, c.Kubeconfig, repoRoot, chart.FromBinaries{
		BinDir: binDir, PushRegistry: reg.Addr + "/olmv1", PullRegistry: reg.ClusterAddr + "/olmv1",
		Release: "olmv1", Values: map[string]any{"tls": map[string]any{"mode": "selfSigned"}},
	}, 3*time.Minute); err != nil {
		return err
	}
	catalogs, _, err := localcluster.PushExampleOperatorTo(ctx, repoRoot, reg.Addr, reg.ClusterAddr, "index")
	if err != nil {
		return fmt.Errorf("pushing the example-operator images: %w", err)
	}
	fmt.Printf(`
OLM v1 runs as real pods on the real node %s (logs in %s).

  export KUBECONFIG=%s
  export PATH=%s:$PATH
  kubectl get nodes -o wide            # a real kubelet
  kubectl get pods -n olmv1-system     # catalogd, rukpak, operator-controller
  kubectl logs -n olmv1-system deploy/catalogd

The cluster pulls from the registry at %s (inside the cluster's network namespace); push to it
from this machine at %s. Demo 1 of the README works with these catalog references:
  %s and %s

Press Ctrl-C to stop everything.
`, localcluster.RealNodeName, filepath.Join(c.Dir, "logs"), c.Kubeconfig, c.AssetsDir, reg.ClusterAddr, reg.Addr, catalogs["0.1.0"], catalogs["0.2.0"])
	<-ctx.Done()
	return nil
}
