package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests run `kubectl olmv1` in a child process — this test binary, re-executed into
// TestHelperKubectlOLMv1, which does what the kubectl-olmv1 main does — so that the wall time and
// the peak resident set (getrusage's ru_maxrss, KiB on Linux) of the command are its own.

// helperEnv makes TestHelperKubectlOLMv1 run the CLI with the arguments after "--".
const helperEnv = "OLMV1_CLI_HELPER_PROCESS"

// TestHelperKubectlOLMv1 is not a test: it is the kubectl-olmv1 entry point for runCLIProcess.
func TestHelperKubectlOLMv1(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("the kubectl-olmv1 entry point of the subprocess tests")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	err := Execute(context.Background(), Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, args)
	if err != nil {
		if !IsSilent(err) {
			fmt.Fprintln(os.Stderr, "error:", err)
		}
		os.Exit(1)
	}
	os.Exit(0)
}

// cliRun is what a kubectl-olmv1 child process did.
type cliRun struct {
	stdout, stderr string
	exitCode       int
	wall           time.Duration
	maxRSSKiB      int64
}

// runCLIProcess runs `kubectl olmv1 args...` in a child process and measures it.
func runCLIProcess(t testing.TB, args ...string) cliRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], append([]string{"-test.run=^TestHelperKubectlOLMv1$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := cliRun{stdout: stdout.String(), stderr: stderr.String(), wall: time.Since(start)}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && ctx.Err() == nil:
		r.exitCode = exit.ExitCode()
	default:
		t.Fatalf("kubectl olmv1 %s: %v\nstderr:\n%s", strings.Join(args, " "), err, r.stderr)
	}
	r.maxRSSKiB = cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss
	return r
}

// Issue 18's bound: a catalog made of nested YAML aliases is refused by `kubectl olmv1 catalog
// validate` in under 5 s with under 200 MB of memory.
const (
	bombWallBound   = 5 * time.Second
	bombMaxRSSBound = 200 * 1000 * 1000 / 1024 // KiB
)

// nestedLaughs is the classic billion laughs as a catalog blob: 9 levels of 9 aliases, 9^9 strings.
func nestedLaughs(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "schema: olm.package\nname: %s\nl0: &l0 \"lol\"\n", name)
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", i-1), 9), ","))
	}
	return b.String()
}

// longStringLaughs references a 1 MiB string 999 times (999 MiB of JSON from 1 MiB of YAML).
func longStringLaughs(name string) string {
	return fmt.Sprintf("schema: olm.package\nname: %s\ns: &s \"%s\"\nl: [%s]\n", name, strings.Repeat("x", 1<<20), strings.TrimSuffix(strings.Repeat("*s,", 999), ","))
}

// ratioLaughs keeps the share of aliased nodes under go-yaml's own guard with 12,000 real nodes.
func ratioLaughs(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "schema: olm.package\nname: %s\nfill: [%s]\na0: &a0 {k: v}\n", name, strings.TrimSuffix(strings.Repeat("{a: 1},", 4000), ","))
	for l := 1; l <= 5; l++ {
		fmt.Fprintf(&b, "a%d: &a%d [%s]\n", l, l, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d,", l-1), 10), ","))
	}
	return b.String()
}

func writeCatalogFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestCatalogValidateRefusesAliasBombsWithinBounds: `kubectl olmv1 catalog validate` on catalogs
// made of nested YAML aliases exits 1 with "invalid catalog" and a message naming the file and the
// YAML aliases, in under 5 s and 200 MB (the bound; measured numbers are logged).
func TestCatalogValidateRefusesAliasBombsWithinBounds(t *testing.T) {
	valid := "schema: olm.package\nname: fine\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: fine\nname: stable\nentries:\n- name: fine.v1.0.0\n---\nschema: olm.bundle\npackage: fine\nname: fine.v1.0.0\nimage: example.com/fine:1\nproperties:\n- type: olm.package\n  value: {packageName: fine, version: 1.0.0}\n"
	mixed := map[string]string{"fine/catalog.yaml": valid}
	for i := range 24 {
		name := fmt.Sprintf("laughs-%02d", i)
		switch i % 3 {
		case 0:
			mixed[name+"/catalog.yaml"] = nestedLaughs(name)
		case 1:
			mixed[name+"/catalog.yaml"] = ratioLaughs(name)
		default:
			mixed[name+"/catalog.yaml"] = valid + "---\n" + nestedLaughs(name)
		}
	}
	for i := range 4 {
		name := fmt.Sprintf("strings-%d", i)
		mixed[name+"/catalog.yaml"] = longStringLaughs(name)
	}
	for name, files := range map[string]map[string]string{
		"nested aliases":                   {"laughs/catalog.yaml": nestedLaughs("laughs")},
		"1 MiB string aliased 999 times":   {"laughs/catalog.yaml": longStringLaughs("laughs")},
		"under go-yaml's own alias ratio":  {"laughs/catalog.yaml": ratioLaughs("laughs")},
		"28 bomb files next to a good one": mixed,
	} {
		t.Run(name, func(t *testing.T) {
			dir := writeCatalogFiles(t, files)
			r := runCLIProcess(t, "catalog", "validate", dir)
			t.Logf("kubectl olmv1 catalog validate, %s: exit %d in %v, peak RSS %.1f MiB (bound %v, %.0f MiB)",
				name, r.exitCode, r.wall.Round(time.Millisecond), float64(r.maxRSSKiB)/1024, bombWallBound, float64(bombMaxRSSBound)/1024)
			if r.exitCode != 1 {
				t.Fatalf("exit code %d, want 1\nstdout:\n%s\nstderr:\n%s", r.exitCode, r.stdout, r.stderr)
			}
			for _, want := range []string{dir + ": invalid catalog: file \"", "catalog.yaml\": YAML document starting at line", "refused: its YAML aliases (*name)"} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("output lacks %q:\n%s", want, r.stdout)
				}
			}
			if r.wall >= bombWallBound {
				t.Errorf("took %v, the bound is %v", r.wall, bombWallBound)
			}
			if r.maxRSSKiB >= bombMaxRSSBound {
				t.Errorf("peak RSS %d KiB, the bound is %d KiB (200 MB)", r.maxRSSKiB, bombMaxRSSBound)
			}
		})
	}
}

// TestCatalogValidateTenThousandPackages: `kubectl olmv1 catalog validate` accepts a generated
// catalog of 10,000 packages (one directory per package: a package, a channel, two bundles) and
// counts them; its wall time and peak RSS are logged, not asserted.
func TestCatalogValidateTenThousandPackages(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and validates a catalog of 10,000 packages")
	}
	const n = 10000
	files := make(map[string]string, n)
	for i := range n {
		pkg := fmt.Sprintf("pkg-%05d", i)
		files[pkg+"/catalog.yaml"] = fmt.Sprintf(`schema: olm.package
name: %[1]s
defaultChannel: stable
---
schema: olm.channel
package: %[1]s
name: stable
entries:
- name: %[1]s.v1.0.0
- name: %[1]s.v1.1.0
  replaces: %[1]s.v1.0.0
---
schema: olm.bundle
package: %[1]s
name: %[1]s.v1.0.0
image: registry.test/%[1]s:1.0.0
properties:
- type: olm.package
  value: {packageName: %[1]s, version: 1.0.0}
---
schema: olm.bundle
package: %[1]s
name: %[1]s.v1.1.0
image: registry.test/%[1]s:1.1.0
properties:
- type: olm.package
  value: {packageName: %[1]s, version: 1.1.0}
`, pkg)
	}
	dir := writeCatalogFiles(t, files)
	r := runCLIProcess(t, "catalog", "validate", dir, "-o", "json")
	t.Logf("kubectl olmv1 catalog validate (10,000 packages): exit %d in %v, peak RSS %.1f MiB", r.exitCode, r.wall.Round(time.Millisecond), float64(r.maxRSSKiB)/1024)
	if r.exitCode != 0 {
		t.Fatalf("exit code %d\nstdout:\n%s\nstderr:\n%s", r.exitCode, r.stdout, r.stderr)
	}
	var res struct {
		Hash                        string
		Packages, Channels, Bundles int
		Blobs                       int
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("output %q: %v", r.stdout, err)
	}
	if res.Packages != n || res.Channels != n || res.Bundles != 2*n || res.Blobs != 4*n || !strings.HasPrefix(res.Hash, "sha256:") {
		t.Fatalf("validate says %+v", res)
	}
}
