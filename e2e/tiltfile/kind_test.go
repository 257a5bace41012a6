package tiltfile

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/olmv1/olmv1/e2e/localcluster"
)

// kindKubeconfigEnv names the kubeconfig of a running kind cluster "olmv1" (make kind-e2e sets it).
const kindKubeconfigEnv = "OLMV1_KIND_KUBECONFIG"

// TestTiltfileKindModeAgainstKind runs what Tilt's kind mode would run, for real, against a kind
// cluster: the crds resource's command, each custom_build command (binary, image archive tagged
// $EXPECTED_REF, `kind load image-archive`), then the rendered chart with every image swapped for the
// one built, as Tilt applies it; and waits until the three Deployments are Available with their pods
// running. It needs a kind cluster named olmv1: `make kind-e2e` runs it; elsewhere it is skipped.
func TestTiltfileKindModeAgainstKind(t *testing.T) {
	kubeconfig := os.Getenv(kindKubeconfigEnv)
	if kubeconfig == "" {
		t.Skip(kindKubeconfigEnv + " is not set: this test needs the kind cluster of `make kind-e2e`, which runs it (docs/kind.md)")
	}
	root := repoRoot(t)
	cache := localcluster.DefaultCacheDir()
	kb, err := localcluster.CachedKindBinaries(cache)
	if err != nil {
		t.Fatal(err)
	}
	b, err := localcluster.CachedBinaries(cache)
	if err != nil {
		t.Fatal(err)
	}
	// kind and kubectl on PATH, as a developer running Tilt has them.
	path := filepath.Dir(kb.Kind) + string(os.PathListSeparator) + filepath.Dir(b.Kubectl) + string(os.PathListSeparator) + os.Getenv("PATH")
	env := append(os.Environ(), "PATH="+path, "KUBECONFIG="+kubeconfig)
	// `kind load` runs `docker exec --privileged`: on an engine that refuses it, through the shim, as
	// docs/kind.md tells a developer (eval "$(bin/olmv1-kind shim-env)").
	out, err := exec.Command(filepath.Join(root, "bin", "olmv1-kind"), "shim-env").Output()
	if err != nil {
		t.Fatalf("bin/olmv1-kind shim-env (make kind-e2e builds it): %v", err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if kv, ok := strings.CutPrefix(l, "export "); ok {
			env = append(env, strings.ReplaceAll(kv, "$PATH", path))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sh := func(cmd string, stdin string, extra ...string) string {
		t.Helper()
		c := exec.CommandContext(ctx, "bash", "-c", cmd)
		c.Dir, c.Env = root, append(env, extra...)
		if stdin != "" {
			c.Stdin = strings.NewReader(stdin)
		}
		start := time.Now()
		out, err := c.CombinedOutput()
		t.Logf("$ %s (%s)\n%s", cmd, time.Since(start).Round(time.Millisecond), lastLines(string(out), 8))
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		return string(out)
	}

	r := execTiltfile(t, root, "kind", func(cmd string) (string, error) {
		c := exec.CommandContext(ctx, "bash", "-c", cmd)
		c.Dir, c.Env = root, env
		out, err := c.Output()
		return string(out), err
	})
	var crds string
	var builds []string
	for _, c := range r.commands {
		switch {
		case strings.Contains(c, "apply --server-side"):
			crds = c
		case strings.Contains(c, "$EXPECTED_REF"):
			builds = append(builds, c)
		}
	}
	if crds == "" || len(builds) != 3 || len(r.k8sYAML) != 1 {
		t.Fatalf("kind mode: crds command %q, %d custom_build commands, %d k8s_yaml; want one, three, one", crds, len(builds), len(r.k8sYAML))
	}
	sh(crds, "")
	manifest := r.k8sYAML[0]
	for _, name := range r.k8sResources {
		ref := fmt.Sprintf("localhost/olmv1/%s:tilt-e2e-%d", name, time.Now().Unix())
		var build string
		for _, c := range builds {
			if strings.Contains(c, "--only "+name+" ") {
				build = c
			}
		}
		if build == "" {
			t.Fatalf("no custom_build command for %s in %v", name, builds)
		}
		sh(build, "", "EXPECTED_REF="+ref)
		// Tilt replaces the image of the repository custom_build names with the reference it built.
		manifest = strings.ReplaceAll(manifest, "image: localhost/olmv1/"+name+":tilt\n", "image: "+ref+"\n")
	}
	sh("kubectl --context kind-olmv1 apply --server-side --force-conflicts -f -", manifest)
	t.Cleanup(func() {
		c := exec.Command("bash", "-c", "kubectl --context kind-olmv1 delete --ignore-not-found --wait=true --timeout=2m -f -")
		c.Dir, c.Env, c.Stdin = root, env, strings.NewReader(manifest)
		if out, err := c.CombinedOutput(); err != nil {
			t.Errorf("removing what the Tiltfile applied: %v\n%s", err, out)
		}
	})
	ns := namespaceOf(t, manifest, r.k8sResources[0])
	for _, name := range r.k8sResources {
		sh(fmt.Sprintf("kubectl --context kind-olmv1 -n %s wait --for=condition=Available --timeout=180s deployment/%s", ns, name), "")
		out := sh(fmt.Sprintf("kubectl --context kind-olmv1 -n %s get pods -l app.kubernetes.io/name=%s -o jsonpath='{range .items[*]}{.spec.containers[0].image} {.status.phase}{\"\\n\"}{end}'", ns, name), "")
		if !strings.Contains(out, "tilt-e2e-") || !strings.Contains(out, "Running") {
			t.Errorf("%s: pods %q, want the image Tilt built, Running", name, out)
		}
	}
}

// namespaceOf finds the namespace of the Deployment name in a rendered manifest.
func namespaceOf(t *testing.T, manifest, name string) string {
	t.Helper()
	for _, doc := range strings.Split(manifest, "\n---") {
		if strings.Contains(doc, "\nkind: Deployment\n") && strings.Contains(doc, "\n  name: "+name+"\n") {
			for _, l := range strings.Split(doc, "\n") {
				if ns, ok := strings.CutPrefix(l, "  namespace: "); ok {
					return strings.TrimSpace(ns)
				}
			}
		}
	}
	t.Fatalf("no namespace for Deployment %s in the rendered chart", name)
	return ""
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
