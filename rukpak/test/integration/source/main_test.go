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
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

const assetsEnv = "KUBEBUILDER_ASSETS"

// namespace is where the tests put ConfigMaps and Secrets: the controller's namespace.
const namespace = "olmv1-system"

var (
	cfg       *rest.Config
	k8sClient client.Client
	scheme    = runtime.NewScheme()
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if err := checkAssets(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: rukpak source integration tests: %v\n", err)
		return 1
	}
	logf.SetLogger(logr.Discard())
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env := &envtest.Environment{Scheme: scheme}
	var err error
	if cfg, err = env.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: starting kube-apiserver and etcd from %s=%s: %v\n", assetsEnv, os.Getenv(assetsEnv), err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping kube-apiserver and etcd: %v\n", err)
		}
	}()
	if k8sClient, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: creating a client: %v\n", err)
		return 1
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := k8sClient.Create(context.Background(), ns); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: creating namespace %s: %v\n", namespace, err)
		return 1
	}
	return m.Run()
}

func checkAssets() error {
	dir := os.Getenv(assetsEnv)
	if dir == "" {
		return fmt.Errorf("%s is not set: these tests need a real kube-apiserver and etcd. Run `make test-integration`, "+
			"which builds them (once) and sets %s, or set it to a directory holding kube-apiserver and etcd", assetsEnv, assetsEnv)
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return fmt.Errorf("%s=%s does not hold %s (%v): run `make test-integration`, which builds the binaries", assetsEnv, dir, bin, err)
		}
	}
	return nil
}
