// Package integration checks operator-controller's CRD on a real kube-apiserver and etcd (envtest):
// every OpenAPI and CEL validation of Operator, its defaults, printer columns and status subresource.
// Run it with `make test-integration`.
package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/test/integration/crdtest"
)

var suite *crdtest.Suite

func TestMain(m *testing.M) {
	s, err := crdtest.Start(filepath.Join("..", "..", "config", "crd", "bases"), operatorsv1alpha1.AddToScheme)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: operator-controller integration tests: %v\n", err)
		os.Exit(1)
	}
	suite = s
	code := m.Run()
	if err := s.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping kube-apiserver and etcd: %v\n", err)
	}
	os.Exit(code)
}
