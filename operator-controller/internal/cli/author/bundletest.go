package author

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/olmv1/olmv1/operator-controller/internal/cli/command"
)

// devBinaryEnv names the olmv1-dev binary that `bundle test` runs.
const devBinaryEnv = "OLMV1_DEV"

// newBundleTestCommand is `kubectl olmv1 bundle test`: it runs `olmv1-dev bundle-test` (the e2e
// module's local control plane), so that this module does not build the test harness in.
func newBundleTestCommand(o *options) *cobra.Command {
	var (
		devBinary, upgradeFrom, catalog, junit, installModes, pods string
		loadImages                                                 []string
		keep, insecure                                             bool
	)
	cmd := &cobra.Command{
		Use:   "test (BUNDLE_DIR | BUNDLE_IMAGE)",
		Short: "Test a bundle's install, examples, uninstall and upgrade on a throw-away local cluster (authors)",
		Long: `Test a registry+v1 bundle without a cluster. A throw-away local control plane (kube-apiserver,
etcd and kwok fake nodes), a local OCI registry and OLM v1 are started; the bundle (built from the
directory as 'bundle push' builds it, or copied from the image) and a catalog made with
'catalog add-bundle' are pushed there. For each install mode the bundle supports (or --install-modes)
an Operator installs it and must become Installed and Healthy; every alm-examples custom resource is
created (the API server validates it against the CRD) and deleted; the uninstall must leave nothing
but the CRDs, which OLM keeps. With --upgrade-from (or the head of the bundle's channel in --catalog)
the previous version is installed and upgraded to the bundle along the catalog's upgrade edge, and
rukpak's CRD upgrade-safety check must accept the new CRDs.

--pods says how the operator's pods run: real (a real kubelet with containerd and runc in a network
namespace of the test's own, OLM v1 installed by its Helm chart as pods; needs root), simulated
(kwok marks them Running and Ready: the operator's containers never run), or auto (the default:
real as root with the real-node binaries cached, else simulated); the output says which. With real
pods, --load-image REF=FILE gives the node an image the CSV runs (a 'docker save' tarball or an OCI
layout) under its own name. A summary table ends the output; --junit writes a JUnit XML report with
one testcase per step. Exits 1 when a step fails.

This runs the olmv1-dev binary (built by 'make build' next to kubectl-olmv1): --dev-binary, else
$OLMV1_DEV, else olmv1-dev next to this executable, else on PATH.`,
		Example: `  kubectl olmv1 bundle test ./bundle --upgrade-from ./bundle-0.1.0 --junit report.xml
  kubectl olmv1 bundle test quay.io/me/my-operator-bundle:v1.2.0 --catalog quay.io/me/my-catalog:latest
  kubectl olmv1 bundle test ./bundle --install-modes AllNamespaces,OwnNamespace
  kubectl olmv1 bundle test ./bundle --pods real --load-image quay.io/me/my-operator:v1.2.0=my-operator.tar`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bin, err := findDevBinary(devBinary)
			if err != nil {
				return err
			}
			dev := []string{"bundle-test", args[0]}
			for _, f := range []struct{ name, value string }{
				{"--upgrade-from", upgradeFrom}, {"--catalog", catalog}, {"--junit", junit}, {"--install-modes", installModes},
			} {
				if f.value != "" {
					dev = append(dev, f.name, f.value)
				}
			}
			if cmd.Flags().Changed("pods") {
				dev = append(dev, "--pods", pods)
			}
			for _, li := range loadImages {
				dev = append(dev, "--load-image", li)
			}
			if keep {
				dev = append(dev, "--keep")
			}
			if insecure {
				dev = append(dev, "--insecure")
			}
			run := exec.CommandContext(cmd.Context(), bin, dev...)
			run.Stdin, run.Stdout, run.Stderr = o.In, o.Out, o.ErrOut
			err = run.Run()
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				// olmv1-dev printed the summary and why it failed.
				return &command.SilentError{Err: fmt.Errorf("%s exited with %d", bin, exit.ExitCode())}
			}
			if err != nil {
				return fmt.Errorf("running %s: %w", bin, err)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&upgradeFrom, "upgrade-from", "", "the previous version of the bundle (directory or image): test the upgrade from it")
	f.StringVar(&catalog, "catalog", "", "a catalog image: test the upgrade from the head of the bundle's channel in it")
	f.StringVar(&installModes, "install-modes", "", "comma-separated install modes to test (default: every mode the CSV supports)")
	f.StringVar(&junit, "junit", "", "write a JUnit XML report (one testcase per step) to this file")
	f.BoolVar(&keep, "keep", false, "keep the local cluster running after the report (until Ctrl-C)")
	f.BoolVar(&insecure, "insecure", false, "pull the source images over plain HTTP")
	f.StringVar(&pods, "pods", "auto", "how the operator's pods run: real (a real kubelet; root), simulated (kwok), or auto (real as root with the real-node binaries cached)")
	f.StringArrayVar(&loadImages, "load-image", nil, "REF=FILE: with real pods, the node pulls image REF from the test's registry, loaded from FILE (a 'docker save' tarball or an OCI layout); repeatable")
	f.StringVar(&devBinary, "dev-binary", "", "the olmv1-dev binary to run (default $OLMV1_DEV, next to kubectl-olmv1, or on PATH)")
	cmd.MarkFlagsMutuallyExclusive("upgrade-from", "catalog")
	return cmd
}

// findDevBinary finds olmv1-dev: flag, $OLMV1_DEV, next to this executable, then PATH.
func findDevBinary(flag string) (string, error) {
	var tried []string
	try := func(p, from string) bool {
		if p == "" {
			return false
		}
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return true
		}
		tried = append(tried, fmt.Sprintf("%s (%s)", p, from))
		return false
	}
	if flag != "" {
		if try(flag, "--dev-binary") {
			return flag, nil
		}
		return "", fmt.Errorf("--dev-binary %s does not exist: build it with `make build` (bin/olmv1-dev)", flag)
	}
	if env := os.Getenv(devBinaryEnv); try(env, "$"+devBinaryEnv) {
		return env, nil
	}
	if exe, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(exe), "olmv1-dev"); try(p, "next to "+filepath.Base(exe)) {
			return p, nil
		}
	}
	if p, err := exec.LookPath("olmv1-dev"); err == nil {
		return p, nil
	}
	tried = append(tried, "PATH")
	return "", fmt.Errorf("bundle test needs the olmv1-dev binary, which was not found (tried %s): run `make build` in the OLM v1 repository and use its bin/, or pass --dev-binary",
		strings.Join(tried, ", "))
}
