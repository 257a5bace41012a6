// Package integration checks rukpak's CRDs on a real kube-apiserver and etcd (envtest): every
// OpenAPI and CEL validation of BundleDeployment (and of the Source union it shares with catalogd's
// Catalog), its defaults, printer columns and status subresource. Run it with `make test-integration`.
package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/test/integration/crdtest"
)

var suite *crdtest.Suite

func TestMain(m *testing.M) {
	s, err := crdtest.Start(filepath.Join("..", "..", "config", "crd", "bases"), rukpakv1alpha1.AddToScheme)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: rukpak integration tests: %v\n", err)
		os.Exit(1)
	}
	suite = s
	code := m.Run()
	if err := s.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping kube-apiserver and etcd: %v\n", err)
	}
	os.Exit(code)
}
