// Package tiltfile checks the repository's Tiltfile without Tilt (which cannot be installed on the
// machines this project is tested on): the Tiltfile is executed by a Starlark interpreter
// (go.starlark.net, the dialect Tilt uses) with stubs of the Tilt built-ins it calls, in both of its
// modes. The stubs record what Tilt would be asked to do, and the test checks it against the
// repository: every path exists, every `make` target is one the Makefile has, every `go run` package
// exists, the flags given to the controllers are flags they have, and the chart command of kind mode
// really renders the three Deployments that its k8s_resource calls name.
//
// TestTiltfileKindModeAgainstKind (kind_test.go) runs the kind-mode commands for real against the
// kind cluster of `make kind-e2e`. What this does not check: Tilt's own behaviour (file watching, live
// updates, the UI).
package tiltfile

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"
)

// repoRoot is the repository root (this package is e2e/tiltfile).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// run is what one execution of the Tiltfile asked Tilt to do.
type run struct {
	// commands are shell commands Tilt would run: local() calls, local_resource cmd and serve_cmd,
	// custom_build commands.
	commands []string
	// paths are files and directories Tilt would watch: deps, watch_file.
	paths []string
	// k8sResources are the names given to k8s_resource.
	k8sResources []string
	// k8sYAML is what local() returned to k8s_yaml (kind mode: the rendered chart).
	k8sYAML []string
	// contexts are the kube contexts allow_k8s_contexts allows.
	contexts []string
	// localResources are the names of local_resource calls.
	localResources []string
}

// execTiltfile runs the Tiltfile at root in mode. local(cmd) returns localOut(cmd).
func execTiltfile(t *testing.T, root, mode string, localOut func(cmd string) (string, error)) *run {
	t.Helper()
	r := &run{}
	strList := func(v starlark.Value) ([]string, error) {
		switch v := v.(type) {
		case nil, starlark.NoneType:
			return nil, nil
		case starlark.String:
			return []string{string(v)}, nil
		case *starlark.List:
			var out []string
			for i := range v.Len() {
				s, ok := starlark.AsString(v.Index(i))
				if !ok {
					return nil, fmt.Errorf("list item %s is not a string", v.Index(i))
				}
				out = append(out, s)
			}
			return out, nil
		}
		return nil, fmt.Errorf("%s is not a string or a list of strings", v.Type())
	}
	builtin := func(name string, f func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error)) *starlark.Builtin {
		return starlark.NewBuiltin(name, func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			return f(args, kwargs)
		})
	}

	defined := map[string]bool{}
	config := starlarkstruct.FromStringDict(starlark.String("config"), starlark.StringDict{
		"define_string": builtin("config.define_string", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var name, usage string
			if err := starlark.UnpackArgs("config.define_string", args, kwargs, "name", &name, "usage?", &usage); err != nil {
				return nil, err
			}
			defined[name] = true
			return starlark.None, nil
		}),
		"parse": builtin("config.parse", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			if err := starlark.UnpackArgs("config.parse", args, kwargs); err != nil {
				return nil, err
			}
			d := starlark.NewDict(1)
			if !defined["mode"] {
				return nil, fmt.Errorf("config.parse: the Tiltfile does not define the mode setting")
			}
			if err := d.SetKey(starlark.String("mode"), starlark.String(mode)); err != nil {
				return nil, err
			}
			return d, nil
		}),
	})
	osModule := starlarkstruct.FromStringDict(starlark.String("os"), starlark.StringDict{
		"getenv": builtin("os.getenv", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var key string
			var def starlark.Value = starlark.None
			if err := starlark.UnpackArgs("os.getenv", args, kwargs, "key", &key, "default?", &def); err != nil {
				return nil, err
			}
			return def, nil
		}),
	})
	predeclared := starlark.StringDict{
		"config": config,
		"os":     osModule,
		"local": builtin("local", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var cmd string
			var quiet bool
			if err := starlark.UnpackArgs("local", args, kwargs, "command", &cmd, "quiet?", &quiet); err != nil {
				return nil, err
			}
			r.commands = append(r.commands, cmd)
			out, err := localOut(cmd)
			if err != nil {
				return nil, fmt.Errorf("local(%q): %w", cmd, err)
			}
			return starlark.String(out), nil
		}),
		"local_resource": builtin("local_resource", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var name, cmd, serveCmd string
			var deps, ignore, resourceDeps, readiness starlark.Value
			if err := starlark.UnpackArgs("local_resource", args, kwargs, "name", &name, "cmd?", &cmd, "deps?", &deps, "ignore?", &ignore,
				"serve_cmd?", &serveCmd, "readiness_probe?", &readiness, "resource_deps?", &resourceDeps); err != nil {
				return nil, err
			}
			paths, err := strList(deps)
			if err != nil {
				return nil, fmt.Errorf("local_resource %s deps: %w", name, err)
			}
			if err := r.knownResources(resourceDeps, strList); err != nil {
				return nil, fmt.Errorf("local_resource %s: %w", name, err)
			}
			r.localResources = append(r.localResources, name)
			r.paths = append(r.paths, paths...)
			for _, c := range []string{cmd, serveCmd} {
				if c != "" {
					r.commands = append(r.commands, c)
				}
			}
			return starlark.None, nil
		}),
		"probe": builtin("probe", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var httpGet starlark.Value
			if err := starlark.UnpackArgs("probe", args, kwargs, "http_get", &httpGet); err != nil {
				return nil, err
			}
			return starlark.String("probe"), nil
		}),
		"http_get_action": builtin("http_get_action", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var port int
			var path string
			if err := starlark.UnpackArgs("http_get_action", args, kwargs, "port", &port, "path?", &path); err != nil {
				return nil, err
			}
			if port <= 0 || port > 65535 || !strings.HasPrefix(path, "/") {
				return nil, fmt.Errorf("http_get_action: port %d, path %q", port, path)
			}
			return starlark.String("http_get"), nil
		}),
		"allow_k8s_contexts": builtin("allow_k8s_contexts", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var ctxs starlark.Value
			if err := starlark.UnpackArgs("allow_k8s_contexts", args, kwargs, "contexts", &ctxs); err != nil {
				return nil, err
			}
			names, err := strList(ctxs)
			r.contexts = append(r.contexts, names...)
			return starlark.None, err
		}),
		"custom_build": builtin("custom_build", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var ref, command string
			var deps, ignore starlark.Value
			var skipsLocalDocker, disablePush bool
			if err := starlark.UnpackArgs("custom_build", args, kwargs, "ref", &ref, "command", &command, "deps", &deps, "ignore?", &ignore,
				"skips_local_docker?", &skipsLocalDocker, "disable_push?", &disablePush); err != nil {
				return nil, err
			}
			paths, err := strList(deps)
			if err != nil {
				return nil, fmt.Errorf("custom_build %s deps: %w", ref, err)
			}
			if !strings.Contains(command, "$EXPECTED_REF") {
				return nil, fmt.Errorf("custom_build %s: the command does not tag the image $EXPECTED_REF, so Tilt cannot find it", ref)
			}
			r.paths = append(r.paths, paths...)
			r.commands = append(r.commands, command)
			return starlark.None, nil
		}),
		"watch_file": builtin("watch_file", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var path string
			if err := starlark.UnpackArgs("watch_file", args, kwargs, "path", &path); err != nil {
				return nil, err
			}
			r.paths = append(r.paths, path)
			return starlark.None, nil
		}),
		"k8s_yaml": builtin("k8s_yaml", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var yaml string
			if err := starlark.UnpackArgs("k8s_yaml", args, kwargs, "yaml", &yaml); err != nil {
				return nil, err
			}
			r.k8sYAML = append(r.k8sYAML, yaml)
			return starlark.None, nil
		}),
		"k8s_resource": builtin("k8s_resource", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var workload string
			var resourceDeps starlark.Value
			if err := starlark.UnpackArgs("k8s_resource", args, kwargs, "workload", &workload, "resource_deps?", &resourceDeps); err != nil {
				return nil, err
			}
			if err := r.knownResources(resourceDeps, strList); err != nil {
				return nil, fmt.Errorf("k8s_resource %s: %w", workload, err)
			}
			r.k8sResources = append(r.k8sResources, workload)
			return starlark.None, nil
		}),
	}
	src, err := os.ReadFile(filepath.Join(root, "Tiltfile"))
	if err != nil {
		t.Fatal(err)
	}
	thread := &starlark.Thread{Name: "Tiltfile " + mode}
	opts := &syntax.FileOptions{Set: true, While: true, TopLevelControl: true, GlobalReassign: true, Recursion: true}
	if _, err := starlark.ExecFileOptions(opts, thread, "Tiltfile", src, predeclared); err != nil {
		var ee *starlark.EvalError
		if errors.As(err, &ee) {
			t.Fatalf("Tiltfile in %s mode: %s", mode, ee.Backtrace())
		}
		t.Fatalf("Tiltfile in %s mode: %v", mode, err)
	}
	return r
}

// knownResources fails when a resource_deps entry names no local_resource declared before it.
func (r *run) knownResources(v starlark.Value, strList func(starlark.Value) ([]string, error)) error {
	deps, err := strList(v)
	if err != nil {
		return fmt.Errorf("resource_deps: %w", err)
	}
	for _, d := range deps {
		if !slices.Contains(r.localResources, d) {
			return fmt.Errorf("resource_deps names %q, which no local_resource declared before it", d)
		}
	}
	return nil
}

var (
	makeTarget = regexp.MustCompile(`(?:^|[;&|]\s*)make\s+((?:[\w./%-]+\s*)+)`)
	goRun      = regexp.MustCompile(`go run (\./[\w./-]+)`)
	binFlag    = regexp.MustCompile(`^bin/([\w-]+)((?:\s+--[\w-]+=\S+)+)`)
)

// checkRun checks what a run asked for against the repository at root.
func checkRun(t *testing.T, root string, r *run) {
	t.Helper()
	for _, p := range r.paths {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("the Tiltfile watches %s, which does not exist", p)
		}
	}
	checked := map[string]bool{}
	for _, cmd := range r.commands {
		for _, m := range makeTarget.FindAllStringSubmatch(cmd, -1) {
			for _, target := range strings.Fields(m[1]) {
				if checked["make "+target] {
					continue
				}
				checked["make "+target] = true
				out, err := exec.Command("make", "-C", root, "-n", target).CombinedOutput()
				if err != nil {
					t.Errorf("the Tiltfile runs `make %s`, which the Makefile does not have: %s", target, strings.TrimSpace(string(out)))
				}
			}
		}
		for _, m := range goRun.FindAllStringSubmatch(cmd, -1) {
			if _, err := os.Stat(filepath.Join(root, m[1], "main.go")); err != nil {
				t.Errorf("the Tiltfile runs `go run %s`, which is no main package", m[1])
			}
		}
	}
}

// controllerFlags checks that every --flag=value the Tiltfile passes to bin/<controller> is a flag of
// that controller (its --help output, from a build of it).
func controllerFlags(t *testing.T, root string, commands []string) {
	t.Helper()
	helps := map[string]string{}
	for _, cmd := range commands {
		m := binFlag.FindStringSubmatch(cmd)
		if m == nil {
			continue
		}
		bin := m[1]
		if _, ok := helps[bin]; !ok {
			exe := filepath.Join(t.TempDir(), bin)
			build := exec.Command("go", "build", "-o", exe, "./"+filepath.Join(bin, "cmd", bin)) // each controller's module is named after it
			build.Dir = root
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("building %s: %v\n%s", bin, err, out)
			}
			out, _ := exec.Command(exe, "--help").CombinedOutput() // exits 0 or 2 by flag package
			helps[bin] = string(out)
		}
		for _, f := range strings.Fields(m[2]) {
			name := strings.SplitN(strings.TrimPrefix(f, "--"), "=", 2)[0]
			if !regexp.MustCompile(`(?m)^\s+--?` + regexp.QuoteMeta(name) + `\b`).MatchString(helps[bin]) {
				t.Errorf("the Tiltfile runs bin/%s with --%s, which bin/%s --help does not list", bin, name, bin)
			}
		}
	}
	if len(helps) != 3 {
		t.Errorf("the Tiltfile serves %d controllers in local mode, want 3: %v", len(helps), commands)
	}
}

func TestTiltfileLocalMode(t *testing.T) {
	root := repoRoot(t)
	r := execTiltfile(t, root, "local", func(cmd string) (string, error) {
		if strings.HasPrefix(cmd, "bin/olmv1-dev env") {
			return "/tmp/olmv1-tilt-check/kubeconfig\n", nil
		}
		return "", fmt.Errorf("no stub output for this command")
	})
	if want := []string{"crds", "catalogd", "rukpak", "operator-controller"}; !slices.Equal(sortedCopy(r.localResources), sortedCopy(want)) {
		t.Errorf("local resources %v, want %v", r.localResources, want)
	}
	checkRun(t, root, r)
	controllerFlags(t, root, r.commands)
}

func TestTiltfileKindMode(t *testing.T) {
	root := repoRoot(t)
	r := execTiltfile(t, root, "kind", func(cmd string) (string, error) {
		// The chart command runs for real: the YAML Tilt would apply.
		c := exec.Command("bash", "-c", cmd)
		c.Dir = root
		out, err := c.Output()
		if ee, ok := err.(*exec.ExitError); ok {
			return "", fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return string(out), err
	})
	checkRun(t, root, r)
	if len(r.contexts) != 1 || r.contexts[0] != "kind-olmv1" {
		t.Errorf("allowed contexts %v, want [kind-olmv1]", r.contexts)
	}
	if len(r.k8sYAML) != 1 {
		t.Fatalf("k8s_yaml called %d times, want 1", len(r.k8sYAML))
	}
	// Every k8s_resource names a Deployment of the rendered chart, whose image is one custom_build
	// builds (Tilt swaps it by repository).
	for _, name := range r.k8sResources {
		dep := regexp.MustCompile(`(?ms)^kind: Deployment\nmetadata:\n(?:  .*\n)*?  name: ` + regexp.QuoteMeta(name) + `\n`)
		if !dep.MatchString(r.k8sYAML[0]) {
			t.Errorf("k8s_resource %q names no Deployment of the rendered chart", name)
		}
		if !strings.Contains(r.k8sYAML[0], "image: localhost/olmv1/"+name+":tilt") {
			t.Errorf("the rendered chart has no image localhost/olmv1/%s:tilt for custom_build to replace", name)
		}
	}
	if len(r.k8sResources) != 3 {
		t.Errorf("k8s resources %v, want the three controllers", r.k8sResources)
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}
