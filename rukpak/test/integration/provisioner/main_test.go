// Package provisioner checks that what the registry+v1 and plain provisioners render is accepted by a
// real kube-apiserver: every object of the shared real bundles is created with server-side dry-run
// (CRDs first, then the rest, in namespaces created for the test), so the API server's own validation
// (schemas, RBAC rules, webhook configurations, annotation sizes, CRD structural schemas) judges them.
// Run it with `make test-integration`; it needs KUBEBUILDER_ASSETS and fails without it.
package provisioner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

var (
	cfg *rest.Config
	cl  client.Client
)

func TestMain(m *testing.M) {
	if err := checkAssets(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: rukpak provisioner integration tests: %v\n", err)
		os.Exit(1)
	}
	logf.SetLogger(logr.Discard())
	env := &envtest.Environment{}
	c, err := env.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: starting kube-apiserver and etcd from KUBEBUILDER_ASSETS=%s: %v\n", os.Getenv("KUBEBUILDER_ASSETS"), err)
		os.Exit(1)
	}
	c.QPS, c.Burst = 500, 1000
	cfg = c
	cl, err = client.New(cfg, client.Options{})
	if err != nil {
		_ = env.Stop()
		fmt.Fprintf(os.Stderr, "FAIL: creating a client: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping kube-apiserver and etcd: %v\n", err)
	}
	os.Exit(code)
}

func checkAssets() error {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		return errors.New("KUBEBUILDER_ASSETS is not set: these tests need a real kube-apiserver and etcd; run `make test-integration` " +
			"or set KUBEBUILDER_ASSETS to a directory holding kube-apiserver and etcd (e.g. /root/.cache/olmv1/assets/v1.37.2)")
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return fmt.Errorf("KUBEBUILDER_ASSETS=%s does not hold %s: %v", dir, bin, err)
		}
	}
	return nil
}
