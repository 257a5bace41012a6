package localcluster

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ControllerNames are the three OLM v1 controller binaries, each run as its own process.
var ControllerNames = []string{"catalogd", "rukpak", "operator-controller"}

// CRDDirs are the generated CRD directories of the three components, relative to the repository root.
var CRDDirs = []string{
	"catalogd/config/crd/bases",
	"rukpak/config/crd/bases",
	"operator-controller/config/crd/bases",
}

// InstallCRDs creates or updates the three components' CRDs and waits until they are Established.
func InstallCRDs(cfg *rest.Config, repoRoot string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	paths := make([]string, 0, len(CRDDirs))
	for _, d := range CRDDirs {
		paths = append(paths, filepath.Join(repoRoot, d))
	}
	crds, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true, MaxTime: time.Minute})
	if err != nil {
		return nil, fmt.Errorf("installing CRDs from %v: %w", paths, err)
	}
	return crds, nil
}

// Controller is one running OLM v1 controller process.
type Controller struct {
	*Process
	// HealthURL is the controller's readiness endpoint on 127.0.0.1.
	HealthURL string
	// MetricsAddr is where the controller serves metrics over HTTPS.
	MetricsAddr string

	// bin, args and logDir are how the process was started, so that Restart can start it again the
	// same way (restart.go); restarts counts the restarts.
	bin      string
	args     []string
	logDir   string
	restarts int
}

// StartControllers runs bin/catalogd, bin/rukpak and bin/operator-controller against kubeconfig, each
// as a separate process with its own free probe and metrics ports, logging into logDir.
func StartControllers(binDir, kubeconfig, logDir string, extraArgs map[string][]string) ([]*Controller, error) {
	var out []*Controller
	for _, name := range ControllerNames {
		ports, err := freePorts(2)
		if err != nil {
			return out, err
		}
		health := "127.0.0.1:" + strconv.Itoa(ports[0])
		metrics := "127.0.0.1:" + strconv.Itoa(ports[1])
		args := append([]string{
			"--kubeconfig=" + kubeconfig,
			"--health-probe-bind-address=" + health,
			"--metrics-bind-address=" + metrics,
			"--leader-elect=false",
		}, extraArgs[name]...)
		if args, err = withFreeListeners(name, args); err != nil {
			return out, err
		}
		bin := filepath.Join(binDir, name)
		p, err := startProcess(name, logDir, false, nil, bin, args...)
		if err != nil {
			return out, err
		}
		out = append(out, &Controller{Process: p, HealthURL: "http://" + health + "/readyz", MetricsAddr: metrics,
			bin: bin, args: args, logDir: logDir})
	}
	return out, nil
}

// listenerFlags are the flags of each controller's other listeners, whose defaults are fixed ports.
var listenerFlags = map[string][]string{"catalogd": {"--http-bind-address", "--metadata-bind-address"}}

// withFreeListeners adds a free 127.0.0.1 port for every listener flag of controller name that args
// do not set, so that a harness never collides with a developer's running make run (or another
// harness) on a default port.
func withFreeListeners(name string, args []string) ([]string, error) {
	for _, flag := range listenerFlags[name] {
		set := false
		for _, a := range args {
			set = set || a == flag || strings.HasPrefix(a, flag+"=")
		}
		if set {
			continue
		}
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		args = append(args, flag+"=127.0.0.1:"+strconv.Itoa(port))
	}
	return args, nil
}

// WaitControllersReady polls every controller's /readyz until it answers 200, failing early with the
// end of its log when a controller exits.
func WaitControllersReady(ctx context.Context, cs []*Controller, timeout time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second}
	for _, c := range cs {
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			if c.Exited() {
				return false, fmt.Errorf("%s exited; last lines of %s:\n%s", c.Name, c.Log, tail(c.Log, 3000))
			}
			resp, err := client.Get(c.HealthURL)
			if err != nil {
				return false, nil //nolint:nilerr // not listening yet
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK, nil
		})
		if err != nil {
			return fmt.Errorf("%s did not become ready at %s (log %s): %w", c.Name, c.HealthURL, c.Log, err)
		}
	}
	return nil
}
