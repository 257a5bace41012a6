// Package bundletest tests that a registry+v1 bundle installs, works with its examples, uninstalls
// cleanly and upgrades, on a throw-away local control plane (e2e/localcluster): no cluster needed.
//
// Run starts the control plane (kube-apiserver, etcd, kube-controller-manager, kube-scheduler and
// kwok fake nodes, from the binaries cached by `olmv1-dev build`, built first when missing), a local
// OCI registry and the three OLM v1 controllers. It then goes through named steps, each recorded
// with its result, duration and message in a Report:
//
//   - read bundle: the bundle directory (or the image, pulled) is read and validated as
//     `kubectl olmv1 bundle push` validates it;
//   - push bundles: the image is built in Go (rukpak/pkg/imagebuild, as `bundle push` builds it) or
//     copied, into the throw-away registry;
//   - build catalog: a file-based catalog with the bundle (and, for an upgrade, the previous bundle,
//     the new one replacing it) is made by `kubectl-olmv1 catalog add-bundle` — the same code authors
//     run — pushed, and served by a Catalog;
//   - for each install mode: an Operator installs the bundle and must become Installed and Healthy
//     with every object the bundle renders to present; every alm-examples custom resource is created
//     (the API server validates it against the CRD) and deleted; deleting the Operator must remove
//     every object, except the CRDs, which rukpak keeps on uninstall (deletionPolicy Delete without
//     core.rukpak.io/delete-crds-on-uninstall) and releases;
//   - upgrade: an Operator installs the previous version, whose alm-examples are created and kept,
//     then is moved to the bundle's version along the catalog's upgrade edge (upgradeConstraintPolicy
//     Enforce); rukpak's CRD upgrade-safety check, which validates the existing custom resources
//     against the new CRDs, must let them through.
//
// The test deletes the CRDs that each uninstall keeps, so that every install starts as a first one.
//
// The operator's pods run on a real kubelet when Options.Pods asks for it (or, with "auto", when
// this runs as root with the real-node binaries cached): the control plane and one real node then
// run in a network namespace of their own, OLM v1 is installed by its Helm chart as pods, and the
// images in Options.LoadImages are served to the node under their own names (RealPodsNote).
// Otherwise pods never run: kwok marks them Running and Ready (KwokNote). The controllers' logs are
// kept when a step fails.
package bundletest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/e2e/localcluster"
	rukpaksource "github.com/olmv1/olmv1/rukpak/pkg/source"
)

// Options configure a bundle test.
type Options struct {
	// Bundle is the bundle under test: a registry+v1 bundle directory or an image reference.
	Bundle string
	// UpgradeFrom is the previous version (a directory or an image); Catalog is a catalog image
	// whose channel head is the previous version. At most one is set; neither skips the upgrade.
	UpgradeFrom, Catalog string
	// InstallModes are the install modes to test; empty: every mode the bundle supports.
	InstallModes []string
	// JUnit is where to write the JUnit XML report; empty writes none.
	JUnit string
	// Keep leaves the control plane, registry and controllers running after the report until ctx
	// ends, and keeps Dir.
	Keep bool
	// Insecure pulls the source images over plain HTTP.
	Insecure bool
	// BinDir holds catalogd, rukpak, operator-controller and kubectl-olmv1 (`make build`).
	BinDir string
	// RepoRoot is the repository root, for the CRDs of the three components.
	RepoRoot string
	// CacheDir holds the control plane's binaries (default localcluster.DefaultCacheDir()).
	CacheDir string
	// Dir is the state directory (default: a new temporary directory, removed after a passing test).
	Dir string
	// Timeout bounds each wait (default 3m).
	Timeout time.Duration
	// Pods is PodsAuto (default), PodsReal or PodsSimulated.
	Pods string
	// LoadImages are images the bundle's pods run that the real node gets from the test's registry
	// (with real pods only).
	LoadImages []LoadImage
	// Out receives the progress lines and the summary (default os.Stdout).
	Out io.Writer
}

// tester is one bundle test in progress.
type tester struct {
	o      Options
	out    io.Writer
	report *Report
	work   string // scratch directory under Dir
	env    *localcluster.Environment
	c      client.Client
	// bundle and prev are the bundle under test and the previous version (nil: no upgrade);
	// their Ref is where the throw-away registry has them.
	bundle, prev *source
	// catalog is the FBC content taken from Options.Catalog (nil without it).
	catalog *fromCatalog
	// unpacker pulls the images the test reads (made by the first pull).
	unpacker *rukpaksource.DiskUnpacker
	// realPods: the pods run on a real kubelet; pullAddr is then the registry's address inside the
	// cluster's network namespace (empty: the cluster pulls from Registry.Addr).
	realPods bool
	pullAddr string
}

// Run runs the bundle test and returns its report (also printed to Out, and written to JUnit). The
// error is for what stopped the test from running at all; a failed step is in the report only.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Bundle == "" {
		return nil, errors.New("a bundle directory or image is required")
	}
	if o.UpgradeFrom != "" && o.Catalog != "" {
		return nil, errors.New("--upgrade-from and --catalog both name the previous version: pass one")
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.Timeout == 0 {
		o.Timeout = 3 * time.Minute
	}
	if o.CacheDir == "" {
		o.CacheDir = localcluster.DefaultCacheDir()
	}
	removeDir := false
	if o.Dir == "" {
		d, err := os.MkdirTemp("", "olmv1-bundle-test-")
		if err != nil {
			return nil, err
		}
		o.Dir, removeDir = d, !o.Keep
	}
	t := &tester{o: o, out: o.Out, report: &Report{Name: "bundle-test " + o.Bundle}, work: filepath.Join(o.Dir, "work")}
	if err := os.MkdirAll(t.work, 0o755); err != nil {
		return nil, err
	}
	real, why, err := podsMode(o)
	if err != nil {
		return nil, err
	}
	t.realPods, t.report.Note = real, KwokNote
	if real {
		t.report.Note = RealPodsNote
	}
	started := time.Now()
	fmt.Fprintf(t.out, "bundle test of %s (state and logs in %s)\n", o.Bundle, o.Dir)
	fmt.Fprintf(t.out, "note: %s (%s)\n", t.report.Note, why)
	if !real && len(o.LoadImages) > 0 {
		fmt.Fprintf(t.out, "note: --load-image is not used: the pods are simulated\n")
	}
	t.run(ctx)
	if t.bundle != nil && t.bundle.Bundle != nil {
		t.report.Name = fmt.Sprintf("bundle-test %s %s", t.bundle.Package, t.bundle.Version)
	}
	fmt.Fprintln(t.out)
	if err := t.report.WriteSummary(t.out); err != nil {
		return t.report, err
	}
	var errs []error
	if o.JUnit != "" {
		if err := t.report.WriteJUnitFile(o.JUnit, started); err != nil {
			errs = append(errs, err)
		} else {
			fmt.Fprintf(t.out, "JUnit report written to %s\n", o.JUnit)
		}
	}
	if o.Keep && t.env != nil {
		fmt.Fprintf(t.out, "\n--keep: the control plane is still running; Ctrl-C stops it.\n  export KUBECONFIG=%s\n", t.env.Kubeconfig)
		if t.env.Cluster != nil {
			fmt.Fprintf(t.out, "  export PATH=%s:$PATH        # kubectl %s\n", t.env.Cluster.AssetsDir, localcluster.KubernetesVersion)
		}
		<-ctx.Done()
	}
	if t.env != nil {
		errs = append(errs, t.env.Stop())
	}
	if removeDir && (!t.report.Failed() || t.env == nil) {
		_ = os.RemoveAll(o.Dir)
	} else {
		fmt.Fprintf(t.out, "state and controller logs kept in %s\n", o.Dir)
	}
	return t.report, errors.Join(errs...)
}

// run goes through the steps; a failed step that later ones need skips them.
func (t *tester) run(ctx context.Context) {
	if !t.step("read bundle "+t.o.Bundle, func() (string, error) { return t.readBundle(ctx) }) {
		return
	}
	modes, err := t.modes()
	if err != nil {
		t.fail("install modes", err)
		return
	}
	if t.o.UpgradeFrom != "" && !t.step("read previous bundle "+t.o.UpgradeFrom, func() (string, error) { return t.readPrevious(ctx) }) {
		return
	}
	if !t.step("start local control plane", func() (string, error) { return t.start(ctx) }) {
		return
	}
	if !t.step("push bundles", func() (string, error) { return t.pushBundles(ctx) }) {
		return
	}
	if t.o.Catalog != "" && !t.step("read catalog "+t.o.Catalog, func() (string, error) { return t.readCatalog(ctx) }) {
		return
	}
	if !t.step("build and serve catalog", func() (string, error) { return t.buildCatalog(ctx) }) {
		return
	}
	for _, mode := range modes {
		t.installMode(ctx, mode)
	}
	if t.prev != nil {
		t.upgrade(ctx, modes)
	}
}

// modes returns the install modes to test: those asked for (each must be supported), else every
// mode the bundle supports.
func (t *tester) modes() ([]string, error) {
	b := t.bundle.Bundle
	if len(b.InstallModes) == 0 {
		return nil, fmt.Errorf("CSV %s supports no install mode (spec.installModes)", b.Name)
	}
	if len(t.o.InstallModes) == 0 {
		return b.InstallModes, nil
	}
	for _, m := range t.o.InstallModes {
		if !contains(b.InstallModes, m) {
			return nil, fmt.Errorf("CSV %s does not support install mode %s (it supports %s): fix --install-modes or spec.installModes",
				b.Name, m, strings.Join(b.InstallModes, ","))
		}
	}
	return t.o.InstallModes, nil
}

// start builds the control plane's binaries when missing and starts the environment.
func (t *tester) start(ctx context.Context) (string, error) {
	for _, name := range localcluster.ControllerNames {
		if _, err := os.Stat(filepath.Join(t.o.BinDir, name)); err != nil {
			return "", fmt.Errorf("the %s binary is not in %s: run `make build` in the OLM v1 repository, or pass --bin-dir", name, t.o.BinDir)
		}
	}
	if _, err := findCLI(t.o.BinDir); err != nil {
		return "", err
	}
	if t.realPods {
		msg, err := t.startReal(ctx)
		if err != nil {
			return "", err
		}
		if t.c, err = client.New(t.env.Config, client.Options{}); err != nil {
			return "", err
		}
		return msg, nil
	}
	if _, err := localcluster.Build(ctx, t.o.CacheDir, prefixWriter{t.out}); err != nil {
		return "", err
	}
	port, err := localcluster.FreePort()
	if err != nil {
		return "", err
	}
	cd := filepath.Join(t.o.Dir, "catalogd")
	t.env, err = localcluster.StartEnvironment(ctx, localcluster.EnvOptions{
		RepoRoot: t.o.RepoRoot, BinDir: t.o.BinDir, Dir: filepath.Join(t.o.Dir, "cluster"), CacheDir: t.o.CacheDir, Log: prefixWriter{t.out},
		ControllerArgs: map[string][]string{"catalogd": {
			"--storage-dir=" + filepath.Join(cd, "storage"), "--cache-dir=" + filepath.Join(cd, "cache"),
			"--metadata-bind-address=127.0.0.1:" + strconv.Itoa(port), "--metadata-cert-dir=" + filepath.Join(cd, "metadata-certs"),
			"--metadata-apiservice=local",
		}},
	})
	if err != nil {
		return "", fmt.Errorf("%w (binaries from %s: run `make build`)", err, t.o.BinDir)
	}
	if t.c, err = client.New(t.env.Config, client.Options{}); err != nil {
		return "", err
	}
	return fmt.Sprintf("Kubernetes %s on 127.0.0.1 with kwok nodes, registry %s, controllers from %s",
		localcluster.KubernetesVersion, t.env.Registry.Addr, t.o.BinDir), nil
}

// step runs fn as the step name, prints its progress and records it; it reports whether it passed.
func (t *tester) step(name string, fn func() (string, error)) bool {
	fmt.Fprintf(t.out, "==> %s\n", name)
	start := time.Now()
	msg, err := fn()
	s := Step{Name: name, Result: Passed, Duration: time.Since(start), Message: msg}
	if err != nil {
		s.Result, s.Message = Failed, err.Error()
	}
	t.record(s)
	return err == nil
}

func (t *tester) fail(name string, err error) {
	fmt.Fprintf(t.out, "==> %s\n", name)
	t.record(Step{Name: name, Result: Failed, Message: err.Error()})
}

func (t *tester) skip(name, why string) {
	t.record(Step{Name: name, Result: Skipped, Message: why})
}

func (t *tester) record(s Step) {
	t.report.Steps = append(t.report.Steps, s)
	fmt.Fprintf(t.out, "    %s (%s)", strings.ToUpper(s.Result), formatDuration(s.Duration))
	if s.Message != "" {
		fmt.Fprintf(t.out, ": %s", strings.ReplaceAll(strings.TrimSpace(s.Message), "\n", "\n      "))
	}
	fmt.Fprintln(t.out)
}

// prefixWriter indents the harness's own progress lines under the current step.
type prefixWriter struct{ w io.Writer }

func (p prefixWriter) Write(b []byte) (int, error) {
	s := strings.TrimRight(string(b), "\n")
	if _, err := fmt.Fprintf(p.w, "    %s\n", strings.ReplaceAll(s, "\n", "\n    ")); err != nil {
		return 0, err
	}
	return len(b), nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
