// Package apiservertest runs the integration suites of rukpak, catalogd and operator-controller against a
// real kube-apiserver and etcd (controller-runtime's envtest) and checks generated CRDs there.
//
// Starting the API server: a suite's TestMain calls Main, which starts etcd and kube-apiserver from
// $KUBEBUILDER_ASSETS with the CRDs and scheme of its Options, runs the suite's setup (managers,
// namespaces), runs the tests and stops everything; a suite of a single test calls StartForTest.
// Without $KUBEBUILDER_ASSETS (or with a directory that does not hold the binaries) the suite fails
// with one message saying how to get them; it is never skipped.
//
// Checking CRDs: each OpenAPI and CEL validation accepts good objects and rejects bad ones with the
// rule's message (CheckCases), printer columns are served, the status subresource exists and every
// field is documented.
package apiservertest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

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

// Options say what the API server serves and how the Suite's client reaches it.
type Options struct {
	// CRDDirs hold the CRDs to install. Every directory must exist and together they must hold at
	// least one CRD. Empty: the API server serves the built-in kinds only.
	CRDDirs []string
	// AddToScheme registers the kinds the client knows besides client-go's and apiextensions' ones.
	AddToScheme []func(*runtime.Scheme) error
	// QPS and Burst of Suite.Config; zero keeps envtest's (1000 and 2000).
	QPS   float32
	Burst int
}

// Suite is a running API server with the CRDs under test installed.
type Suite struct {
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// Scheme knows client-go's kinds, apiextensions' and those of Options.AddToScheme.
	Scheme *runtime.Scheme
	// Client reads and writes typed objects (for Scheme) and unstructured ones.
	Client client.Client

	env      *envtest.Environment
	cleanups []func() error
}

// Start starts etcd and kube-apiserver from $KUBEBUILDER_ASSETS as opts say. Call Stop when done.
// A TestMain calls Main instead, a single test StartForTest.
func Start(opts Options) (*Suite, error) {
	if err := checkAssets(); err != nil {
		return nil, err
	}
	// envtest and the client log through controller-runtime's logger; the tests report on their own.
	logf.SetLogger(logr.Discard())

	scheme := runtime.NewScheme()
	for _, add := range append([]func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme}, opts.AddToScheme...) {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("building the scheme: %w", err)
		}
	}

	env := &envtest.Environment{
		CRDDirectoryPaths:     slices.Clone(opts.CRDDirs),
		ErrorIfCRDPathMissing: len(opts.CRDDirs) > 0,
		Scheme:                scheme,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s=%s%s: %w",
			AssetsEnv, os.Getenv(AssetsEnv), withCRDs(opts.CRDDirs), err)
	}
	if len(opts.CRDDirs) > 0 && len(env.CRDs) == 0 {
		_ = env.Stop()
		return nil, fmt.Errorf("no CRDs found in %v: run `make generate`", opts.CRDDirs)
	}
	if opts.QPS != 0 {
		cfg.QPS = opts.QPS
	}
	if opts.Burst != 0 {
		cfg.Burst = opts.Burst
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("creating a client: %w", err)
	}
	return &Suite{Config: cfg, Scheme: scheme, Client: c, env: env}, nil
}

func withCRDs(dirs []string) string {
	if len(dirs) == 0 {
		return ""
	}
	return fmt.Sprintf(" with the CRDs of %v", dirs)
}

// Cleanup registers f to run when the suite ends, before the API server stops; cleanups run in the
// reverse order of registration (like testing.T.Cleanup). Main fails the suite when f returns an error.
func (s *Suite) Cleanup(f func() error) {
	s.cleanups = append(s.cleanups, f)
}

// runCleanups runs the registered cleanups, last first, and forgets them.
func (s *Suite) runCleanups() error {
	var errs []error
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		errs = append(errs, s.cleanups[i]())
	}
	s.cleanups = nil
	return errors.Join(errs...)
}

// Stop runs the registered cleanups, then stops kube-apiserver and etcd.
func (s *Suite) Stop() error {
	return errors.Join(s.runCleanups(), s.env.Stop())
}

func checkAssets() error {
	dir := os.Getenv(AssetsEnv)
	if dir == "" {
		return errors.New(AssetsEnv + " is not set: the integration tests need a real kube-apiserver and etcd. " +
			"Run `make test-integration`, which builds them (once) and sets " + AssetsEnv + ", " +
			"or export " + AssetsEnv + "=$(bin/olmv1-dev build) (a directory that holds kube-apiserver, etcd and kubectl)")
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return fmt.Errorf("%s=%s does not hold %s (%v): run `make test-integration`, which builds the binaries",
				AssetsEnv, dir, bin, err)
		}
	}
	return nil
}
