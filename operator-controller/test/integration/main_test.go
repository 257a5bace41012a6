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
	"github.com/olmv1/olmv1/platform/apiservertest"
)

var suite *apiservertest.Suite

func TestMain(m *testing.M) {
	os.Exit(apiservertest.Main(m, "operator-controller integration tests", apiservertest.Options{
		CRDDirs:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		AddToScheme: []func(*runtime.Scheme) error{operatorsv1alpha1.AddToScheme},
		// The validation tables send hundreds of requests at once.
		QPS: 500, Burst: 1000,
	}, func(s *apiservertest.Suite) error {
		suite = s
		return nil
	}))
}
