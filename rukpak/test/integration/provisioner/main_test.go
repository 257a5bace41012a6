// Package provisioner checks that what the registry+v1 and plain provisioners render is accepted by a
// real kube-apiserver: every object of the shared real bundles is created with server-side dry-run
// (CRDs first, then the rest, in namespaces created for the test), so the API server's own validation
// (schemas, RBAC rules, webhook configurations, annotation sizes, CRD structural schemas) judges them.
// Run it with `make test-integration`; it needs KUBEBUILDER_ASSETS and fails without it.
package provisioner

import (
	"os"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/platform/apiservertest"
)

var (
	cfg *rest.Config
	cl  client.Client
)

func TestMain(m *testing.M) {
	// No CRDs installed up front: the tests create those of the bundles under test.
	os.Exit(apiservertest.Main(m, "rukpak provisioner integration tests", apiservertest.Options{QPS: 500, Burst: 1000}, func(s *apiservertest.Suite) error {
		cfg, cl = s.Config, s.Client
		return nil
	}))
}
