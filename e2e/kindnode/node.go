// Package kindnode builds a kind node image on this machine, offline and from source: a Debian root
// filesystem made with debootstrap, the node binaries built from the Go module proxy (kubelet,
// kubeadm, kubectl, containerd, runc from Debian, the CNI plugins, crictl), the project's own
// entrypoint and systemd units for kind's node contract, a bridge CNI configuration baked in, and the
// images kubeadm needs (control plane, etcd, kube-proxy, CoreDNS, pause) built in Go from the same
// binaries and imported into containerd at boot. The image is `docker import`ed into the engine and
// cached by a key of everything that goes into it.
package kindnode

import (
	"archive/tar"
	"bufio"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/olmv1/olmv1/e2e/localcluster"
)

//go:embed files
var files embed.FS

// Repository is the node image's name; its tag is the Kubernetes version and a content key.
const Repository = "olmv1.local/kind-node"

// layoutVersion is part of the content key: change it when the way the image is assembled changes.
const layoutVersion = "2"

// placed are the embedded files and where they go in the node.
var placed = []struct {
	src, dst string
	mode     int64
}{
	{"entrypoint", "usr/local/bin/entrypoint", 0o755},
	{"olmv1-preload", "usr/local/bin/olmv1-preload", 0o755},
	{"containerd.service", "etc/systemd/system/containerd.service", 0o644},
	{"kubelet.service", "etc/systemd/system/kubelet.service", 0o644},
	{"10-kubeadm.conf", "etc/systemd/system/kubelet.service.d/10-kubeadm.conf", 0o644},
	{"olmv1-preload.service", "etc/systemd/system/olmv1-preload.service", 0o644},
	{"containerd-config.toml", "etc/containerd/config.toml", 0o644},
	{"10-olmv1.conflist", "etc/cni/net.d/10-olmv1.conflist", 0o644},
	{"default-storage.yaml", "kind/manifests/default-storage.yaml", 0o644},
	{"default-cni.yaml", "kind/manifests/default-cni.yaml", 0o644},
}

// enabled are the units started at boot; masked are units of the Debian base a node never needs.
var (
	enabled = []string{"containerd.service", "olmv1-preload.service", "kubelet.service"}
	masked  = []string{"console-getty.service", "getty@tty1.service", "apt-daily.timer", "apt-daily-upgrade.timer",
		"dpkg-db-backup.timer", "e2scrub_all.timer", "e2scrub_reap.service", "systemd-logind.service"}
)

// Build returns the node image's reference, building it when the engine does not have it yet.
// Progress goes to log; a cold build (binaries cached) takes a few minutes.
func Build(ctx context.Context, cacheDir string, log io.Writer) (string, error) {
	start := time.Now()
	b, nb, kb, err := localcluster.BuildKind(ctx, cacheDir, log)
	if err != nil {
		return "", err
	}
	nodeRoot, err := rootfs{"node", nodePackages}.ensure(ctx, cacheDir, log)
	if err != nil {
		return "", err
	}
	proxyRoot, err := rootfs{"kube-proxy", proxyPackages}.ensure(ctx, cacheDir, log)
	if err != nil {
		return "", err
	}
	bins := nodeBinaries(b, nb, kb)
	imgs := nodeImages(b, nb, kb, proxyRoot)
	key, err := contentKey(nodeRoot, proxyRoot, bins, imgs)
	if err != nil {
		return "", err
	}
	ref := Repository + ":" + localcluster.KubernetesVersion + "-" + key
	if exec.CommandContext(ctx, "docker", "image", "inspect", ref).Run() == nil {
		fmt.Fprintf(log, "kindnode: %s is in the engine already\n", ref)
		return ref, nil
	}
	work, err := os.MkdirTemp(filepath.Join(cacheDir, "kind"), "images-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	var archives []string
	for _, im := range imgs {
		p := filepath.Join(work, strings.NewReplacer("/", "_", ":", "_").Replace(im.ref)+".tar")
		fmt.Fprintf(log, "kindnode: building image %s\n", im.ref)
		if err := im.writeArchive(p); err != nil {
			return "", fmt.Errorf("image %s: %w", im.ref, err)
		}
		archives = append(archives, p)
	}
	fmt.Fprintf(log, "kindnode: importing %s into the Docker engine\n", ref)
	stop := ticker(log, "docker import", time.Now())
	err = dockerImport(ctx, ref, func(tw *tar.Writer) error { return writeNode(tw, nodeRoot, bins, archives) })
	stop()
	if err != nil {
		return "", err
	}
	fmt.Fprintf(log, "kindnode: built %s in %s\n", ref, time.Since(start).Round(time.Second))
	return ref, nil
}

// nodeBinaries maps node paths to the host binaries they are copied from.
func nodeBinaries(b *localcluster.Binaries, nb *localcluster.NodeBinaries, kb *localcluster.KindBinaries) map[string]string {
	m := map[string]string{
		"usr/local/bin/kubelet":                 b.Kubelet,
		"usr/local/bin/kubectl":                 b.Kubectl,
		"usr/local/bin/kubeadm":                 kb.Kubeadm,
		"usr/local/bin/crictl":                  kb.Crictl,
		"usr/local/bin/containerd":              nb.Containerd,
		"usr/local/bin/containerd-shim-runc-v2": nb.Shim,
		"usr/local/bin/ctr":                     nb.Ctr,
	}
	entries, _ := os.ReadDir(nb.CNIDir)
	for _, e := range entries {
		if !e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			m["opt/cni/bin/"+e.Name()] = filepath.Join(nb.CNIDir, e.Name())
		}
	}
	return m
}

// contentKey hashes what goes into the image: the root filesystems' keys, the embedded files, the
// binaries' sizes and times, and the baked images' names.
func contentKey(nodeRoot, proxyRoot string, bins map[string]string, imgs []nodeImage) (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, layoutVersion, filepath.Base(nodeRoot), filepath.Base(proxyRoot))
	err := fs.WalkDir(files, "files", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := files.ReadFile(p)
		fmt.Fprintln(h, p, len(data))
		h.Write(data)
		return err
	})
	if err != nil {
		return "", err
	}
	keys := make([]string, 0, len(bins))
	for k := range bins {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		st, err := os.Stat(bins[k])
		if err != nil {
			return "", fmt.Errorf("%s: %w", k, err)
		}
		fmt.Fprintln(h, k, st.Size(), st.ModTime().UnixNano())
	}
	for _, im := range imgs {
		st, err := os.Stat(im.binary)
		if err != nil {
			return "", err
		}
		fmt.Fprintln(h, im.ref, st.Size(), st.ModTime().UnixNano())
	}
	fmt.Fprintln(h, strings.Join(enabled, ","), strings.Join(masked, ","))
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

// entry is one file, directory or symbolic link the project writes over the Debian root.
type entry struct {
	name   string
	dir    bool
	link   string
	mode   int64
	data   []byte
	source string // a host file to copy
}

// writeNode writes the node's filesystem: the Debian root, then the project's files over it (each
// path once: what the project writes is left out of the root).
func writeNode(tw *tar.Writer, nodeRoot string, bins map[string]string, archives []string) error {
	var es []entry
	for _, d := range []string{"opt/cni/bin", "kind", "kind/manifests", "kind/images", "etc/systemd/system/kubelet.service.d", "etc/systemd/system/multi-user.target.wants", "etc/cni/net.d", "etc/containerd", "etc/containerd/certs.d"} {
		if _, err := os.Lstat(filepath.Join(nodeRoot, d)); err != nil {
			es = append(es, entry{name: d, dir: true, mode: 0o755})
		}
	}
	keys := make([]string, 0, len(bins))
	for k := range bins {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		es = append(es, entry{name: k, mode: 0o755, source: bins[k]})
	}
	for _, p := range placed {
		data, err := files.ReadFile("files/" + p.src)
		if err != nil {
			return err
		}
		es = append(es, entry{name: p.dst, mode: p.mode, data: data})
	}
	es = append(es,
		entry{name: "kind/version", mode: 0o644, data: []byte(localcluster.KubernetesVersion + "\n")},
		entry{name: "etc/crictl.yaml", mode: 0o644, data: []byte("runtime-endpoint: unix:///run/containerd/containerd.sock\nimage-endpoint: unix:///run/containerd/containerd.sock\n")})
	for _, u := range enabled {
		es = append(es, entry{name: "etc/systemd/system/multi-user.target.wants/" + u, link: "/etc/systemd/system/" + u})
	}
	for _, u := range masked {
		es = append(es, entry{name: "etc/systemd/system/" + u, link: "/dev/null"})
	}
	for _, a := range archives {
		es = append(es, entry{name: "kind/images/" + filepath.Base(a), mode: 0o644, source: a})
	}
	skip := map[string]bool{}
	for _, e := range es {
		skip[e.name] = true
	}
	if err := tarTreeExcept(tw, nodeRoot, "", skip); err != nil {
		return err
	}
	for _, e := range es {
		var err error
		switch {
		case e.dir:
			err = addDir(tw, e.name, e.mode)
		case e.link != "":
			err = addSymlink(tw, e.name, e.link)
		case e.source != "":
			err = addHostFile(tw, e.name, e.source, e.mode)
		default:
			err = addFile(tw, e.name, e.mode, e.data)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// dockerImport streams the archive write produces into `docker import`.
func dockerImport(ctx context.Context, ref string, write func(*tar.Writer) error) error {
	cmd := exec.CommandContext(ctx, "docker", "import",
		"--change", `ENTRYPOINT ["/usr/local/bin/entrypoint"]`,
		"--change", "ENV container=docker",
		"--change", "LABEL org.opencontainers.image.source=https://github.com/olmv1/olmv1",
		"-", ref)
	// An OS pipe: when docker exits early, writes fail (EPIPE) instead of blocking.
	pw, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("docker import: %w", err)
	}
	bw := bufio.NewWriterSize(pw, 1<<20)
	werr := func() error {
		tw := tar.NewWriter(bw)
		if err := write(tw); err != nil {
			return err
		}
		if err := tw.Close(); err != nil {
			return err
		}
		return bw.Flush()
	}()
	pw.Close()
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("docker import %s: %w: %s", ref, err, out.String())
	}
	if werr != nil {
		return fmt.Errorf("writing the node's files: %w", werr)
	}
	return nil
}
