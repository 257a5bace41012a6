// Package integration checks operator-controller's CRD on a real kube-apiserver and etcd (envtest):
// every OpenAPI and CEL validation of Operator, its defaults, printer columns and status subresource.
// Run it with `make test-integration`.
package integration

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/test/integration/crdtest"
)

var suite *crdtest.Suite

func TestMain(m *testing.M) {
	os.Exit(crdtest.Main(m, "operator-controller integration tests", crdtest.Options{
		CRDDirs:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		AddToScheme: []func(*runtime.Scheme) error{operatorsv1alpha1.AddToScheme},
		// The validation tables send hundreds of requests at once.
		QPS: 500, Burst: 1000,
	}, func(s *crdtest.Suite) error {
		suite = s
		return nil
	}))
}
