// Command olmv1-kind builds the project's kind node image from source and runs kind with it:
//
//	olmv1-kind image                              build (once, cached) and print the node image
//	olmv1-kind create [--name N] [--kubeconfig F] build the image and the kind CLI, create a cluster
//	olmv1-kind load [--name N] ARCHIVE...         kind load image-archive into the cluster
//	olmv1-kind delete [--name N]                  delete the cluster
//	olmv1-kind config                             print the kind configuration the image needs
//	olmv1-kind shim-env                           print the environment that runs any kind command through the shim
//
// When the Docker engine refuses `docker run --privileged` (an engine whose bounding set lacks a
// capability it asks for), kind runs through a docker shim (this binary, called as `docker`) that
// starts the nodes with every capability the engine can give instead; create says so.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/olmv1/olmv1/e2e/kindnode"
	"github.com/olmv1/olmv1/e2e/localcluster"
)

// realDockerEnv names the engine's docker client for the shim.
const realDockerEnv = "OLMV1_REAL_DOCKER"

func main() {
	if filepath.Base(os.Args[0]) == "docker" {
		os.Exit(shimMain(os.Args[1:]))
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "olmv1-kind:", err)
		os.Exit(1)
	}
}

// shimMain is the docker client kind calls: it rewrites --privileged and runs the real client.
func shimMain(args []string) int {
	real := os.Getenv(realDockerEnv)
	if real == "" {
		fmt.Fprintln(os.Stderr, "olmv1-kind docker shim: "+realDockerEnv+" is not set")
		return 2
	}
	args, err := kindnode.ShimArgs(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "olmv1-kind docker shim:", err)
		return 2
	}
	cmd := exec.Command(real, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		fmt.Fprintln(os.Stderr, "olmv1-kind docker shim:", err)
		return 1
	}
	return 0
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: olmv1-kind image|create|load|delete|config [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	cacheDir := fs.String("cache-dir", localcluster.DefaultCacheDir(), "where binaries and root filesystems are cached")
	name := fs.String("name", "olmv1", "kind cluster name")
	kubeconfig := fs.String("kubeconfig", "", "create: write the cluster's kubeconfig here")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch args[0] {
	case "config":
		fmt.Print(kindnode.KindConfig())
		return nil
	case "image":
		ref, err := kindnode.Build(ctx, *cacheDir, os.Stderr)
		if err != nil {
			return err
		}
		fmt.Println(ref)
		return nil
	case "create":
		return create(ctx, *cacheDir, *name, *kubeconfig)
	case "load":
		k, err := kind(ctx, *cacheDir)
		if err != nil {
			return err
		}
		for _, a := range fs.Args() {
			if err := k.run(ctx, "load", "image-archive", "--name", *name, a); err != nil {
				return err
			}
		}
		return nil
	case "delete":
		k, err := kind(ctx, *cacheDir)
		if err != nil {
			return err
		}
		if err := k.run(ctx, "delete", "cluster", "--name", *name); err != nil {
			return err
		}
		return removeKindNetwork(ctx, *cacheDir)
	case "shim-env":
		// For a kind CLI run by hand or by Tilt (`kind load` runs `docker exec --privileged`):
		// eval "$(bin/olmv1-kind shim-env)" puts the shim first on PATH when the engine needs it.
		env, err := shimEnv(ctx, *cacheDir)
		if err != nil {
			return err
		}
		if len(env) == 0 {
			fmt.Println("# the Docker engine accepts --privileged: kind needs no shim")
		}
		for _, e := range env {
			if dir, ok := strings.CutPrefix(e, "PATH="); ok {
				// The shim's directory in front of the caller's own PATH.
				e = "PATH=" + strings.SplitN(dir, string(os.PathListSeparator), 2)[0] + string(os.PathListSeparator) + "$PATH"
			}
			fmt.Printf("export %s\n", e)
		}
		return nil
	}
	return fmt.Errorf("unknown command %q: want image, create, load, delete or config", args[0])
}

func create(ctx context.Context, cacheDir, name, kubeconfig string) error {
	ref, err := kindnode.Build(ctx, cacheDir, os.Stderr)
	if err != nil {
		return err
	}
	k, err := kind(ctx, cacheDir)
	if err != nil {
		return err
	}
	if out, _ := exec.CommandContext(ctx, k.bin, "get", "clusters").Output(); containsLine(string(out), name) {
		fmt.Fprintf(os.Stderr, "olmv1-kind: cluster %q exists; deleting it first\n", name)
		if err := k.run(ctx, "delete", "cluster", "--name", name); err != nil {
			return err
		}
	}
	cfg := filepath.Join(cacheDir, "kind", "kind-config.yaml")
	if err := os.WriteFile(cfg, []byte(kindnode.KindConfig()), 0o644); err != nil {
		return err
	}
	args := []string{"create", "cluster", "--name", name, "--image", ref, "--config", cfg, "--retain"}
	if kubeconfig != "" {
		args = append(args, "--kubeconfig", kubeconfig)
	}
	networkBefore := kindNetworkExists(ctx)
	err = k.run(ctx, args...)
	if !networkBefore && kindNetworkExists(ctx) {
		if werr := os.WriteFile(networkMarker(cacheDir), nil, 0o644); werr != nil {
			return errors.Join(err, werr)
		}
	}
	return err
}

// kindCLI runs the kind binary, through the docker shim when the engine refuses --privileged.
type kindCLI struct {
	bin string
	env []string
}

func kind(ctx context.Context, cacheDir string) (*kindCLI, error) {
	ref, err := kindnode.Build(ctx, cacheDir, os.Stderr)
	if err != nil {
		return nil, err
	}
	kb, err := localcluster.CachedKindBinaries(cacheDir)
	if err != nil {
		return nil, err
	}
	k := &kindCLI{bin: kb.Kind, env: os.Environ()}
	refused, why := kindnode.PrivilegedRefused(ctx, ref)
	if !refused {
		return k, nil
	}
	fmt.Fprintf(os.Stderr, "olmv1-kind: the Docker engine refuses --privileged (%s); kind runs through the docker shim, which starts nodes with every capability the engine's bounding set holds, no seccomp/AppArmor/masked paths and every device instead\n", firstLine(why))
	env, err := shim(cacheDir)
	if err != nil {
		return nil, err
	}
	k.env = append(k.env, env...)
	return k, nil
}

// shim links this binary as cacheDir/kind/shim/docker and returns the environment that puts it
// first on PATH in front of the engine's client.
func shim(cacheDir string) ([]string, error) {
	real, err := exec.LookPath("docker")
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(cacheDir, "kind", "shim")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	link := filepath.Join(dir, "docker")
	_ = os.Remove(link)
	if err := os.Symlink(self, link); err != nil {
		return nil, err
	}
	return []string{realDockerEnv + "=" + real, "PATH=" + dir + string(os.PathListSeparator) + os.Getenv("PATH")}, nil
}

// shimEnv is shim's environment when the engine refuses --privileged (probed with the node image),
// and nothing otherwise.
func shimEnv(ctx context.Context, cacheDir string) ([]string, error) {
	ref, err := kindnode.Build(ctx, cacheDir, os.Stderr)
	if err != nil {
		return nil, err
	}
	if refused, _ := kindnode.PrivilegedRefused(ctx, ref); !refused {
		return nil, nil
	}
	return shim(cacheDir)
}

func (k *kindCLI) run(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, k.bin, args...)
	cmd.Env = k.env
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kind %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

func containsLine(s, want string) bool {
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) == want {
			return true
		}
	}
	return false
}

// firstLine is the engine's own error line of docker's output.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "Error response") || strings.Contains(l, "operation not permitted") {
			return strings.TrimSpace(l)
		}
	}
	return strings.TrimSpace(strings.SplitN(s, "\n", 2)[0])
}

// networkMarker is written when `olmv1-kind create` made the Docker network "kind" (it did not exist
// before): only then does `olmv1-kind delete` remove it. A network someone else made stays.
func networkMarker(cacheDir string) string {
	return filepath.Join(cacheDir, "kind", "docker-network-kind-created-by-olmv1")
}

func kindNetworkExists(ctx context.Context) bool {
	return exec.CommandContext(ctx, "docker", "network", "inspect", "kind").Run() == nil
}

// removeKindNetwork removes the Docker network "kind", which `kind delete cluster` leaves behind, when
// olmv1-kind's own create made it and no container is attached to it any more (another kind cluster
// may still use it; then it stays).
func removeKindNetwork(ctx context.Context, cacheDir string) error {
	if _, err := os.Stat(networkMarker(cacheDir)); err != nil {
		return nil
	}
	out, err := exec.CommandContext(ctx, "docker", "network", "inspect", "--format", "{{len .Containers}}", "kind").Output()
	if err != nil {
		return os.Remove(networkMarker(cacheDir)) // already gone
	}
	if n := strings.TrimSpace(string(out)); n != "0" {
		fmt.Fprintf(os.Stderr, "olmv1-kind: Docker network kind kept: %s containers still attached\n", n)
		return nil
	}
	if out, err := exec.CommandContext(ctx, "docker", "network", "rm", "kind").CombinedOutput(); err != nil {
		return fmt.Errorf("removing the Docker network kind: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return os.Remove(networkMarker(cacheDir))
}
