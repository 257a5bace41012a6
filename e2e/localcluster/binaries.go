// Package localcluster builds and runs a real Kubernetes control plane on 127.0.0.1 without Docker:
// etcd, kube-apiserver (with the aggregation layer), kube-controller-manager, kube-scheduler and kwok
// fake nodes. The binaries are built once from the Go module proxy and cached outside the repository.
package localcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
)

// Versions of the binaries the local control plane is built from. They are part of the cache key.
const (
	KubernetesVersion = "v1.37.2"
	// kubernetesStagingVersion is the version of the k8s.io/* staging modules matching KubernetesVersion.
	kubernetesStagingVersion = "v0.37.2"
	EtcdVersion              = "v3.7.3"
	KwokVersion              = "v0.8.0"
)

// Binaries are the absolute paths of the built executables.
type Binaries struct {
	APIServer         string
	ControllerManager string
	Scheduler         string
	Kubectl           string
	// Kubelet and KubeProxy run real nodes (the real-node tier); they come from the same build as
	// kube-apiserver, so node and control plane are always one release.
	Kubelet   string
	KubeProxy string
	Etcd      string
	Kwok      string
	// KwokStages is the kwok stage configuration that makes fake nodes Ready and pods Running.
	KwokStages string
	// AssetsDir holds kube-apiserver, etcd and kubectl together, the layout controller-runtime's envtest
	// expects in KUBEBUILDER_ASSETS.
	AssetsDir string
}

// DefaultCacheDir is where binaries are cached: $OLMV1_CACHE_DIR, else $XDG_CACHE_HOME/olmv1, else
// $HOME/.cache/olmv1.
func DefaultCacheDir() string {
	if d := os.Getenv("OLMV1_CACHE_DIR"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "olmv1")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "olmv1-cache")
	}
	return filepath.Join(home, ".cache", "olmv1")
}

// CachedBinaries returns the binaries in cacheDir, or an error naming what is missing and how to build it.
func CachedBinaries(cacheDir string) (*Binaries, error) {
	b := layout(cacheDir)
	for _, c := range components(cacheDir) {
		if !c.complete() {
			return nil, fmt.Errorf("%s %s is not built in %s (run `make cluster-binaries` or `go run ./e2e/cmd/olmv1-dev build`)", c.name, c.version, cacheDir)
		}
	}
	return b, nil
}

func layout(cacheDir string) *Binaries {
	k8s := filepath.Join(cacheDir, "kubernetes", KubernetesVersion)
	etcd := filepath.Join(cacheDir, "etcd", EtcdVersion)
	kwok := filepath.Join(cacheDir, "kwok", KwokVersion)
	return &Binaries{
		APIServer:         filepath.Join(k8s, "kube-apiserver"),
		ControllerManager: filepath.Join(k8s, "kube-controller-manager"),
		Scheduler:         filepath.Join(k8s, "kube-scheduler"),
		Kubectl:           filepath.Join(k8s, "kubectl"),
		Kubelet:           filepath.Join(k8s, "kubelet"),
		KubeProxy:         filepath.Join(k8s, "kube-proxy"),
		Etcd:              filepath.Join(etcd, "etcd"),
		Kwok:              filepath.Join(kwok, "kwok"),
		KwokStages:        filepath.Join(kwok, "stages.yaml"),
		AssetsDir:         filepath.Join(cacheDir, "assets", KubernetesVersion),
	}
}

// component is one separately built group of binaries, with its own wrapper module.
type component struct {
	name, version string
	srcDir        string // the wrapper module, outside any go.work
	outDir        string
	// files are the executables the component must have produced; a cache from an older build that
	// lacks one of them is built again.
	files []string
	build func(ctx context.Context, c *component, log io.Writer) error
}

const stampFile = ".complete"

func (c *component) complete() bool {
	got, err := os.ReadFile(filepath.Join(c.outDir, stampFile))
	if err != nil || strings.TrimSpace(string(got)) != c.version {
		return false
	}
	for _, f := range c.files {
		if _, err := os.Stat(filepath.Join(c.outDir, f)); err != nil {
			return false
		}
	}
	return true
}

// kubernetesCommands are the commands built from k8s.io/kubernetes in one go build.
var kubernetesCommands = []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "kubelet", "kube-proxy"}

func components(cacheDir string) []*component {
	src := filepath.Join(cacheDir, "src")
	return []*component{
		{name: "etcd", version: EtcdVersion, srcDir: filepath.Join(src, "etcd-"+EtcdVersion), outDir: filepath.Join(cacheDir, "etcd", EtcdVersion), files: []string{"etcd"}, build: buildEtcd},
		{name: "kwok", version: KwokVersion, srcDir: filepath.Join(src, "kwok-"+KwokVersion), outDir: filepath.Join(cacheDir, "kwok", KwokVersion), files: []string{"kwok", "stages.yaml"}, build: buildKwok},
		{name: "kubernetes", version: KubernetesVersion, srcDir: filepath.Join(src, "kubernetes-"+KubernetesVersion), outDir: filepath.Join(cacheDir, "kubernetes", KubernetesVersion), files: kubernetesCommands, build: buildKubernetes},
	}
}

// Build builds every binary that is not yet in cacheDir, printing progress to log, and returns them all.
// A cold build takes 15–25 minutes on two cores; a warm one returns at once.
func Build(ctx context.Context, cacheDir string, log io.Writer) (*Binaries, error) {
	if err := buildComponents(ctx, components(cacheDir), log); err != nil {
		return nil, err
	}
	b := layout(cacheDir)
	if err := linkAssets(b); err != nil {
		return nil, err
	}
	return b, nil
}

// progress prints a line every 30 seconds while a long build runs, so nobody thinks it hung.
func progress(log io.Writer, name string, start time.Time) (stop func()) {
	return Progress(log, "localcluster: still building "+name, start)
}

// Progress prints "<what> (<elapsed> elapsed)" every 30 seconds until stop is called, so that nobody
// thinks a long step hung.
func Progress(log io.Writer, what string, start time.Time) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(30 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(log, "%s (%s elapsed)\n", what, time.Since(start).Round(time.Second))
			}
		}
	}()
	return func() { close(done) }
}

func linkAssets(b *Binaries) error {
	if err := os.MkdirAll(b.AssetsDir, 0o755); err != nil {
		return err
	}
	for _, target := range []string{b.APIServer, b.Etcd, b.Kubectl} {
		link := filepath.Join(b.AssetsDir, filepath.Base(target))
		if cur, err := os.Readlink(link); err == nil && cur == target {
			continue
		}
		_ = os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			return fmt.Errorf("linking %s into envtest assets: %w", target, err)
		}
	}
	return nil
}

// goCmd runs the go command in a wrapper module that is never part of the repository's go.work.
func goCmd(ctx context.Context, dir string, log io.Writer, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, goBinary(), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	cmd.Stdout = log
	cmd.Stderr = log
	return cmd
}

func goBinary() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

func writeModule(dir, module string, requires []string, replaces map[string]string, mainSrc string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "module %s\n\ngo 1.26.3\n\n", module)
	for _, r := range requires {
		fmt.Fprintf(&b, "require %s\n", r)
	}
	keys := make([]string, 0, len(replaces))
	for k := range replaces {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "replace %s => %s\n", k, replaces[k])
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "main.go"), []byte(mainSrc), 0o644)
}

func buildEtcd(ctx context.Context, c *component, log io.Writer) error {
	main := "// Generated by olmv1 localcluster: the etcd CLI built from etcd's server module.\npackage main\n\nimport (\n\t\"os\"\n\n\t\"go.etcd.io/etcd/server/v3/etcdmain\"\n)\n\nfunc main() { etcdmain.Main(os.Args) }\n"
	if err := writeModule(c.srcDir, "olmv1.local/etcdbin", []string{"go.etcd.io/etcd/server/v3 " + EtcdVersion}, nil, main); err != nil {
		return err
	}
	if err := goCmd(ctx, c.srcDir, log, "mod", "tidy").Run(); err != nil {
		return fmt.Errorf("go mod tidy: %w", err)
	}
	return goCmd(ctx, c.srcDir, log, "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(c.outDir, "etcd"), ".").Run()
}

func buildKwok(ctx context.Context, c *component, log io.Writer) error {
	main := "//go:build tools\n\n// Generated by olmv1 localcluster: pins kwok for `go build sigs.k8s.io/kwok/cmd/kwok`.\npackage tools\n\nimport _ \"sigs.k8s.io/kwok/cmd/kwok\"\n"
	if err := writeModule(c.srcDir, "olmv1.local/kwokbin", []string{"sigs.k8s.io/kwok " + KwokVersion}, nil, main); err != nil {
		return err
	}
	if err := goCmd(ctx, c.srcDir, log, "mod", "tidy").Run(); err != nil {
		return fmt.Errorf("go mod tidy: %w", err)
	}
	if err := goCmd(ctx, c.srcDir, log, "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(c.outDir, "kwok"), "sigs.k8s.io/kwok/cmd/kwok").Run(); err != nil {
		return err
	}
	return writeKwokStages(ctx, c)
}

// writeKwokStages concatenates kwok's own stage definitions: fast node initialisation, lease
// heartbeats, and fast pod ready/complete/delete. kwok v0.8.0 does nothing without stages.
func writeKwokStages(ctx context.Context, c *component) error {
	var out strings.Builder
	list := goCmd(ctx, c.srcDir, nil, "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kwok")
	list.Stdout = nil
	list.Stderr = nil
	dirb, err := list.Output()
	if err != nil {
		return fmt.Errorf("locating the kwok module: %w", err)
	}
	dir := strings.TrimSpace(string(dirb))
	var files []string
	files = append(files, filepath.Join(dir, "kustomize/stage/node/fast/node-initialize.yaml"))
	hb, _ := filepath.Glob(filepath.Join(dir, "kustomize/stage/node/heartbeat-with-lease/*.yaml"))
	var hbStages []string
	for _, f := range hb {
		if filepath.Base(f) != "kustomization.yaml" {
			hbStages = append(hbStages, f)
		}
	}
	files = append(files, hbStages...)
	for _, p := range []string{"pod-ready", "pod-complete", "pod-delete"} {
		files = append(files, filepath.Join(dir, "kustomize/stage/pod/fast", p+".yaml"))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("reading kwok stage: %w", err)
		}
		out.WriteString("---\n")
		out.Write(data)
		out.WriteString("\n")
	}
	return os.WriteFile(filepath.Join(c.outDir, "stages.yaml"), []byte(out.String()), 0o644)
}

func buildKubernetes(ctx context.Context, c *component, log io.Writer) error {
	return buildKubernetesCommands(ctx, c, kubernetesCommands, log)
}

// buildKubernetesCommands builds cmds (names under k8s.io/kubernetes/cmd) into c.outDir.
func buildKubernetesCommands(ctx context.Context, c *component, cmds []string, log io.Writer) error {
	// k8s.io/kubernetes replaces its staging modules with local paths; a wrapper module replaces each
	// one with the published staging module of the same release. The list comes from kubernetes' own
	// go.mod so that it is right for any release.
	dl := goCmd(ctx, c.srcDir, nil, "mod", "download", "-json", "k8s.io/kubernetes@"+KubernetesVersion)
	dl.Stdout = nil
	dl.Stderr = log
	if err := os.WriteFile(filepath.Join(c.srcDir, "go.mod"), []byte("module olmv1.local/probe\n\ngo 1.26.3\n"), 0o644); err != nil {
		return err
	}
	out, err := dl.Output()
	if err != nil {
		return fmt.Errorf("downloading k8s.io/kubernetes@%s: %w", KubernetesVersion, err)
	}
	var info struct{ GoMod string }
	if err := json.Unmarshal(out, &info); err != nil {
		return err
	}
	gomod, err := os.ReadFile(info.GoMod)
	if err != nil {
		return err
	}
	replaces := map[string]string{}
	for _, m := range stagingModules(string(gomod)) {
		replaces[m] = m + " " + kubernetesStagingVersion
	}
	main := "//go:build tools\n\n// Generated by olmv1 localcluster: pins the Kubernetes commands built from k8s.io/kubernetes.\npackage tools\n\nimport (\n"
	for _, cmd := range cmds {
		main += "\t_ \"k8s.io/kubernetes/cmd/" + cmd + "\"\n"
	}
	main += ")\n"
	if err := writeModule(c.srcDir, "olmv1.local/k8sbins", []string{"k8s.io/kubernetes " + KubernetesVersion}, replaces, main); err != nil {
		return err
	}
	if err := goCmd(ctx, c.srcDir, log, "mod", "tidy").Run(); err != nil {
		return fmt.Errorf("go mod tidy: %w", err)
	}
	args := []string{"build", "-trimpath", "-ldflags=" + kubernetesLDFlags(), "-o", c.outDir + string(filepath.Separator)}
	for _, cmd := range cmds {
		args = append(args, "k8s.io/kubernetes/cmd/"+cmd)
	}
	return goCmd(ctx, c.srcDir, log, args...).Run()
}

// stagingModules lists the k8s.io modules that kubernetes' go.mod requires at v0.0.0 (its staging
// repositories), except the two sample modules the proxy does not serve.
func stagingModules(gomod string) []string {
	seen := map[string]bool{}
	var mods []string
	for _, line := range strings.Split(gomod, "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) != 2 || f[1] != "v0.0.0" || !strings.HasPrefix(f[0], "k8s.io/") {
			continue
		}
		if f[0] == "k8s.io/sample-cli-plugin" || f[0] == "k8s.io/sample-controller" || seen[f[0]] {
			continue
		}
		seen[f[0]] = true
		mods = append(mods, f[0])
	}
	sort.Strings(mods)
	return mods
}

// kubernetesLDFlags stamps the version so that `--version` and discovery report the real release.
// The build date is fixed so builds stay reproducible.
func kubernetesLDFlags() string {
	minor := strings.Split(strings.TrimPrefix(KubernetesVersion, "v"), ".")
	flags := []string{"-s", "-w"}
	for _, p := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		flags = append(flags,
			"-X", p+".gitVersion="+KubernetesVersion,
			"-X", p+".gitMajor="+minor[0],
			"-X", p+".gitMinor="+minor[1],
			"-X", p+".gitTreeState=clean",
			"-X", p+".gitCommit=0000000000000000000000000000000000000000",
			"-X", p+".buildDate=1970-01-01T00:00:00Z",
		)
	}
	return strings.Join(flags, " ")
}
