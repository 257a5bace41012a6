package bundletest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/olmv1/olmv1/e2e/localcluster"
)

// Usage is the help of `olmv1-dev bundle-test` (and of `kubectl olmv1 bundle test`, which runs it).
const Usage = `usage: olmv1-dev bundle-test DIR|IMAGE [--upgrade-from DIR|IMAGE | --catalog IMAGE]
         [--install-modes AllNamespaces,OwnNamespace,SingleNamespace,MultiNamespace] [--junit FILE] [--keep]
         [--pods auto|real|simulated] [--load-image REF=FILE ...]

Test a registry+v1 bundle without a cluster: start a throw-away local control plane, a registry and
OLM v1; push the bundle and a catalog with it; for each install mode install it with an Operator
(Installed and Healthy), create and delete every alm-examples custom resource, uninstall it and
check that nothing but the kept CRDs is left; with --upgrade-from (or the channel head of --catalog)
install the previous version and upgrade to the bundle along the catalog's edge.
With real pods (--pods real, or auto as root with the real-node binaries cached) the control plane
and a real kubelet run in a network namespace of their own, OLM v1 runs as pods from its Helm chart,
and the operator's containers really run: --load-image gives the node each image they need from a
tarball or OCI layout, under its own name. Otherwise pods are simulated by kwok and the operator's
containers never run; the report says which. Exits 1 when a step fails.

Flags:
`

// ErrFailed is returned by Main when a step failed (the report says which).
var ErrFailed = errors.New("bundle test failed")

// Main is `olmv1-dev bundle-test ARGS`: it parses the flags, runs the test and returns ErrFailed
// (wrapped) when a step failed.
func Main(ctx context.Context, args []string, out io.Writer) error {
	var o Options
	var modes string
	fs := flag.NewFlagSet("bundle-test", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprint(out, Usage)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.UpgradeFrom, "upgrade-from", "", "the previous version of the bundle (directory or image): test the upgrade from it")
	fs.StringVar(&o.Catalog, "catalog", "", "a catalog image: test the upgrade from the head of the bundle's channel in it")
	fs.StringVar(&modes, "install-modes", "", "comma-separated install modes to test (default: every mode the CSV supports)")
	fs.StringVar(&o.JUnit, "junit", "", "write a JUnit XML report (one testcase per step) to this file")
	fs.BoolVar(&o.Keep, "keep", false, "keep the control plane running after the report (until Ctrl-C) and keep its directory")
	fs.BoolVar(&o.Insecure, "insecure", false, "pull the source images over plain HTTP")
	fs.StringVar(&o.BinDir, "bin-dir", executableDir(), "directory with catalogd, rukpak, operator-controller and kubectl-olmv1 (make build)")
	fs.StringVar(&o.RepoRoot, "repo", "", "repository root, for the OLM v1 CRDs (default: the current directory if it is one, else the parent of --bin-dir)")
	fs.StringVar(&o.CacheDir, "cache-dir", localcluster.DefaultCacheDir(), "where the Kubernetes, etcd and kwok binaries are cached")
	fs.StringVar(&o.Dir, "dir", "", "state directory (default: a new temporary directory, removed when every step passed)")
	fs.DurationVar(&o.Timeout, "timeout", 3*time.Minute, "how long each wait may take")
	fs.StringVar(&o.Pods, "pods", PodsAuto, "how the operator's pods run: real (a real kubelet; root), simulated (kwok), or auto (real as root with the real-node binaries cached)")
	fs.Func("load-image", "REF=FILE: with real pods, the node pulls image REF from the test's registry, loaded from FILE (a `docker save` tarball or an OCI layout); repeatable", func(v string) error {
		li, err := ParseLoadImage(v)
		if err == nil {
			o.LoadImages = append(o.LoadImages, li)
		}
		return err
	})
	var positional []string
	for {
		if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
			return nil
		} else if err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		positional, args = append(positional, fs.Arg(0)), fs.Args()[1:]
	}
	if len(positional) != 1 {
		fs.Usage()
		return fmt.Errorf("want one bundle directory or image, got %d arguments", len(positional))
	}
	o.Bundle, o.Out = positional[0], out
	var err error
	if o.InstallModes, err = ParseInstallModes(modes); err != nil {
		return err
	}
	if o.RepoRoot == "" {
		o.RepoRoot = repoRoot(o.BinDir)
	}
	r, err := Run(ctx, o)
	if err != nil {
		return err
	}
	if r.Failed() {
		return fmt.Errorf("%w: %d of %d steps failed (see the summary above)", ErrFailed, r.Count(Failed), len(r.Steps))
	}
	return nil
}

// executableDir is the directory of the running program (bin/ after make build).
func executableDir() string {
	exe, err := os.Executable()
	if err != nil {
		return "bin"
	}
	if p, err := filepath.EvalSymlinks(exe); err == nil {
		exe = p
	}
	return filepath.Dir(exe)
}

// repoRoot is the current directory when it holds the OLM v1 CRDs, else the parent of binDir.
func repoRoot(binDir string) string {
	has := func(dir string) bool {
		_, err := os.Stat(filepath.Join(dir, localcluster.CRDDirs[0]))
		return err == nil
	}
	if wd, err := os.Getwd(); err == nil && has(wd) {
		return wd
	}
	return filepath.Dir(binDir)
}
