// Package integration checks catalogd's CRD on a real kube-apiserver and etcd (envtest): every
// OpenAPI and CEL validation of Catalog (including the Source union it shares with rukpak's
// BundleDeployment), its defaults, printer columns and status subresource; and the CatalogMetadata
// API server, run as two replicas and restarted, against that kube-apiserver (metadata_test.go).
// Run it with `make test-integration`.
package integration

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/platform/apiservertest"
)

var suite *apiservertest.Suite

func TestMain(m *testing.M) {
	os.Exit(apiservertest.Main(m, "catalogd integration tests", apiservertest.Options{
		CRDDirs:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		AddToScheme: []func(*runtime.Scheme) error{catalogdv1alpha1.AddToScheme},
		// The validation tables send hundreds of requests at once.
		QPS: 500, Burst: 1000,
	}, func(s *apiservertest.Suite) error {
		suite = s
		return nil
	}))
}
