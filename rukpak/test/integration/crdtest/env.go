// Package crdtest checks generated CRDs against a real kube-apiserver and etcd (controller-runtime's
// envtest): that each OpenAPI and CEL validation accepts good objects and rejects bad ones with the
// rule's message, that printer columns are served, that the status subresource exists and that every
// field is documented. The integration tests of rukpak, catalogd and operator-controller use it.
package crdtest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// AssetsEnv is the environment variable naming the directory that holds kube-apiserver, etcd and kubectl.
const AssetsEnv = "KUBEBUILDER_ASSETS"

// Suite is a running API server with the CRDs under test installed.
type Suite struct {
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// Client reads and writes typed objects (for the schemes given to Start) and unstructured ones.
	Client client.Client

	env *envtest.Environment
}

// Start starts etcd and kube-apiserver from $KUBEBUILDER_ASSETS, installs the CRDs found in crdDir
// (failing when there are none) and returns a Suite whose client knows the kinds that addToScheme
// registers. Call Stop when done.
func Start(crdDir string, addToScheme ...func(*runtime.Scheme) error) (*Suite, error) {
	if err := checkAssets(); err != nil {
		return nil, err
	}
	// envtest and the client log through controller-runtime's logger; the tests report on their own.
	logf.SetLogger(logr.Discard())

	scheme := runtime.NewScheme()
	for _, add := range append([]func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme}, addToScheme...) {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("building the scheme: %w", err)
		}
	}

	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{crdDir},
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s=%s with the CRDs of %s: %w",
			AssetsEnv, os.Getenv(AssetsEnv), crdDir, err)
	}
	if len(env.CRDs) == 0 {
		_ = env.Stop()
		return nil, fmt.Errorf("no CRDs found in %s: run `make generate`", crdDir)
	}
	// The validation tables send hundreds of requests; client-go's default 5 QPS would make them slow.
	cfg.QPS, cfg.Burst = 500, 1000
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("creating a client: %w", err)
	}
	return &Suite{Config: cfg, Client: c, env: env}, nil
}

// Stop stops kube-apiserver and etcd.
func (s *Suite) Stop() error {
	return s.env.Stop()
}

func checkAssets() error {
	dir := os.Getenv(AssetsEnv)
	if dir == "" {
		return errors.New(AssetsEnv + " is not set: the integration tests need a real kube-apiserver and etcd. " +
			"Run `make test-integration`, which builds them (once) and sets " + AssetsEnv + ", " +
			"or set " + AssetsEnv + " to a directory that holds kube-apiserver, etcd and kubectl")
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return fmt.Errorf("%s=%s does not hold %s (%v): run `make test-integration`, which builds the binaries",
				AssetsEnv, dir, bin, err)
		}
	}
	return nil
}
