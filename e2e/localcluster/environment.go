package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// EnvOptions configure StartEnvironment.
type EnvOptions struct {
	// RepoRoot is the repository root (for the CRDs); BinDir holds the controller binaries.
	RepoRoot, BinDir string
	// Dir holds the cluster state and the controllers' logs. Required.
	Dir string
	// Kubeconfig names an existing cluster to use; empty starts the local control plane in Dir.
	Kubeconfig string
	// CacheDir is where the control plane binaries are cached (default DefaultCacheDir()).
	CacheDir string
	// RegistryAddr is the loopback address of the OCI registry (default 127.0.0.1:0, a free port).
	RegistryAddr string
	// ControllerArgs are extra flags per controller binary.
	ControllerArgs map[string][]string
	// ClusterArgs are extra flags of the local control plane's components (Options.ExtraArgs).
	ClusterArgs map[string][]string
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// Environment is a running OLM v1: a control plane (local or given), a local OCI registry, the CRDs,
// and the three controllers as separate processes.
type Environment struct {
	// Cluster is the local control plane, nil when EnvOptions.Kubeconfig named another cluster.
	Cluster     *Cluster
	Kubeconfig  string
	Config      *rest.Config
	Registry    *Registry
	Controllers []*Controller
	LogDir      string
}

// StartEnvironment starts everything and waits until the controllers are ready. On error it stops
// what it started.
func StartEnvironment(ctx context.Context, o EnvOptions) (e *Environment, err error) {
	if o.Dir == "" {
		return nil, errors.New("localcluster: EnvOptions.Dir is required")
	}
	if o.CacheDir == "" {
		o.CacheDir = DefaultCacheDir()
	}
	if o.RegistryAddr == "" {
		o.RegistryAddr = "127.0.0.1:0"
	}
	logw := o.Log
	if logw == nil {
		logw = io.Discard
	}
	e = &Environment{Kubeconfig: o.Kubeconfig, LogDir: filepath.Join(o.Dir, "logs")}
	defer func() {
		if err != nil {
			_ = e.Stop()
		}
	}()
	// The CRDs go in before kube-controller-manager starts when this starts the control plane.
	var crds []*apiextensionsv1.CustomResourceDefinition
	install := func(cfg *rest.Config) (err error) {
		crds, err = InstallCRDs(cfg, o.RepoRoot)
		return err
	}
	if e.Kubeconfig == "" {
		bins, err := CachedBinaries(o.CacheDir)
		if err != nil {
			return e, err
		}
		if e.Cluster, err = Up(ctx, Options{Dir: o.Dir, Binaries: bins, Log: logw, BeforeControllers: install, ExtraArgs: o.ClusterArgs}); err != nil {
			return e, err
		}
		e.Kubeconfig = e.Cluster.Kubeconfig
	}
	if e.Config, err = clientcmd.BuildConfigFromFlags("", e.Kubeconfig); err != nil {
		return e, err
	}
	if e.Registry, err = StartRegistry(o.RegistryAddr, nil); err != nil {
		return e, fmt.Errorf("starting the registry on %s: %w", o.RegistryAddr, err)
	}
	if crds == nil {
		if err := install(e.Config); err != nil {
			return e, err
		}
	}
	fmt.Fprintf(logw, "localcluster: %d CRDs installed; registry on %s\n", len(crds), e.Registry.Addr)
	e.Controllers, err = StartControllers(o.BinDir, e.Kubeconfig, e.LogDir, o.ControllerArgs)
	if err != nil {
		return e, err
	}
	if err := WaitControllersReady(ctx, e.Controllers, 2*time.Minute); err != nil {
		return e, err
	}
	fmt.Fprintf(logw, "localcluster: catalogd, rukpak and operator-controller ready (logs in %s)\n", e.LogDir)
	return e, nil
}

// Controller returns the running controller called name, or nil.
func (e *Environment) Controller(name string) *Controller {
	for _, c := range e.Controllers {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Stop stops the controllers, the registry and the local control plane, in that order.
func (e *Environment) Stop() error {
	var errs []error
	for i := len(e.Controllers) - 1; i >= 0; i-- {
		errs = append(errs, e.Controllers[i].Stop(5*time.Second))
	}
	e.Controllers = nil
	if e.Registry != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		errs = append(errs, e.Registry.Stop(ctx))
		cancel()
		e.Registry = nil
	}
	if e.Cluster != nil {
		errs = append(errs, e.Cluster.Stop())
		e.Cluster = nil
	}
	return errors.Join(errs...)
}

// RSS returns the resident set size of a process in bytes, from /proc.
func RSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		return 0, err
	}
	var size, resident int64
	if _, err := fmt.Sscanf(string(data), "%d %d", &size, &resident); err != nil {
		return 0, err
	}
	return resident * int64(os.Getpagesize()), nil
}
