// Package source tests the ConfigMap- and Secret-based paths of rukpak/pkg/source against a real
// kube-apiserver and etcd (envtest): ConfigMaps sources (the seed example, binaryData, a missing
// ConfigMap, RBAC), image pull secrets of type kubernetes.io/dockerconfigjson against a registry
// that requires authentication, git credentials and HTTP CA certificates read from Secrets.
// Run it with `make test-integration`.
package source

import (
	"context"
	"fmt"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/platform/apiservertest"
)

// namespace is where the tests put ConfigMaps and Secrets: the controller's namespace.
const namespace = "olmv1-system"

var (
	cfg       *rest.Config
	k8sClient client.Client
	scheme    *runtime.Scheme
)

func TestMain(m *testing.M) {
	os.Exit(apiservertest.Main(m, "rukpak source integration tests", apiservertest.Options{}, func(s *apiservertest.Suite) error {
		cfg, k8sClient, scheme = s.Config, s.Client, s.Scheme
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
		if err := k8sClient.Create(context.Background(), ns); err != nil {
			return fmt.Errorf("creating namespace %s: %w", namespace, err)
		}
		return nil
	}))
}
