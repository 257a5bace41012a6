package kindnode

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/olmv1/olmv1/e2e/localcluster"
)

// DebianSuite and DebianMirror are where the root filesystems come from (debootstrap, Debian's own
// packages; no image registry).
const (
	DebianSuite  = "bookworm"
	DebianMirror = "http://deb.debian.org/debian"
)

// nodePackages make the node's root filesystem: systemd as PID 1, mount and network tools, the
// iptables/nftables userland, runc (containerd's OCI runtime), and what kind runs on a node (bash,
// pgrep, cp, mkdir, cat).
var nodePackages = []string{
	"systemd", "systemd-sysv", "dbus", "iptables", "nftables", "iproute2", "mount", "util-linux",
	"procps", "ca-certificates", "conntrack", "ethtool", "socat", "kmod", "libseccomp2", "runc", "bash",
}

// proxyPackages make the base of the kube-proxy image: the iptables/nftables userland and conntrack.
var proxyPackages = []string{"iptables", "nftables", "conntrack", "iproute2"}

// rootfs is a debootstrapped directory cached under cacheDir/kind/rootfs-<suite>-<hash of the
// package list>, built once.
type rootfs struct {
	name     string
	packages []string
}

func (r rootfs) key() string {
	h := sha256.Sum256([]byte(DebianSuite + " " + DebianMirror + " " + strings.Join(r.packages, ",")))
	return r.name + "-" + DebianSuite + "-" + hex.EncodeToString(h[:])[:12]
}

// ensure returns the directory of r, running debootstrap when it is not cached yet.
func (r rootfs) ensure(ctx context.Context, cacheDir string, log io.Writer) (string, error) {
	dir := filepath.Join(cacheDir, "kind", r.key())
	stamp := dir + ".complete"
	if _, err := os.Stat(stamp); err == nil {
		fmt.Fprintf(log, "kindnode: %s root filesystem cached in %s\n", r.name, dir)
		return dir, nil
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		if err := aptInstall(ctx, log, "debootstrap"); err != nil {
			return "", err
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	start := time.Now()
	fmt.Fprintf(log, "kindnode: debootstrap %s (%s) into %s (once, about 2-3 min)\n", DebianSuite, r.name, dir)
	cmd := exec.CommandContext(ctx, "debootstrap", "--variant=minbase", "--include="+strings.Join(r.packages, ","), DebianSuite, dir, DebianMirror)
	out, err := os.Create(dir + ".log")
	if err != nil {
		return "", err
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	stop := ticker(log, "debootstrap "+r.name, start)
	err = cmd.Run()
	stop()
	if err != nil {
		return "", fmt.Errorf("debootstrap %s failed (log %s): %w", r.name, out.Name(), err)
	}
	// What a node never needs: documentation, manual pages, locales, apt's package lists.
	for _, p := range []string{"usr/share/doc", "usr/share/man", "usr/share/locale", "usr/share/info", "var/lib/apt/lists", "var/cache/apt"} {
		if err := os.RemoveAll(filepath.Join(dir, p)); err != nil {
			return "", err
		}
	}
	if err := os.WriteFile(stamp, []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		return "", err
	}
	fmt.Fprintf(log, "kindnode: %s root filesystem built in %s\n", r.name, time.Since(start).Round(time.Second))
	return dir, nil
}

// aptInstall installs Debian packages (the machines of this project are Debian and run as root).
func aptInstall(ctx context.Context, log io.Writer, pkgs ...string) error {
	fmt.Fprintf(log, "kindnode: installing %s from Debian's packages\n", strings.Join(pkgs, " "))
	cmd := exec.CommandContext(ctx, "apt-get", append([]string{"install", "-y", "--no-install-recommends"}, pkgs...)...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get install %s: %w\n%s", strings.Join(pkgs, " "), err, out)
	}
	return nil
}

// ticker prints a line every 30 seconds while a long step runs.
func ticker(log io.Writer, what string, start time.Time) (stop func()) {
	return localcluster.Progress(log, "kindnode: still running "+what, start)
}
