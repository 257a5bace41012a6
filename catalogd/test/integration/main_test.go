// Package integration checks catalogd's CRD on a real kube-apiserver and etcd (envtest): every
// OpenAPI and CEL validation of Catalog (including the Source union it shares with rukpak's
// BundleDeployment), its defaults, printer columns and status subresource; and the CatalogMetadata
// API server, run as two replicas and restarted, against that kube-apiserver (metadata_test.go).
// Run it with `make test-integration`.
package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/test/integration/crdtest"
)

var suite *crdtest.Suite

func TestMain(m *testing.M) {
	s, err := crdtest.Start(filepath.Join("..", "..", "config", "crd", "bases"), catalogdv1alpha1.AddToScheme)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: catalogd integration tests: %v\n", err)
		os.Exit(1)
	}
	suite = s
	code := m.Run()
	if err := s.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping kube-apiserver and etcd: %v\n", err)
	}
	os.Exit(code)
}
