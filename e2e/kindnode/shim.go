package kindnode

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// capNames are the capabilities by bit number that Docker Engine 20.10 knows (0–37).
var capNames = []string{
	"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID", "SETPCAP",
	"LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW", "IPC_LOCK", "IPC_OWNER",
	"SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT", "SYS_ADMIN", "SYS_BOOT", "SYS_NICE",
	"SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD", "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP",
	"MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG", "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ",
}

// boundingCaps returns the names of the capabilities in this process's bounding set (what a
// container of the engine, running as root beside it, can be given at most).
func boundingCaps() ([]string, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "CapBnd:"); ok {
			bits, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return nil, err
			}
			var names []string
			for i, n := range capNames {
				if bits&(1<<uint(i)) != 0 {
					names = append(names, n)
				}
			}
			return names, nil
		}
	}
	return nil, fmt.Errorf("no CapBnd line in /proc/self/status")
}

// PrivilegedRefused reports whether the engine refuses `docker run --privileged` of image (as on
// engines whose bounding set lacks a capability --privileged asks for), with the engine's words.
func PrivilegedRefused(ctx context.Context, image string) (bool, string) {
	out, err := exec.CommandContext(ctx, "docker", "run", "--rm", "--privileged", "--entrypoint", "/bin/true", image).CombinedOutput()
	if err == nil {
		return false, ""
	}
	return true, strings.TrimSpace(string(out))
}

// UnprivilegedArgs are what the shim runs a node with instead of --privileged: every capability the
// bounding set holds, no seccomp, AppArmor or masked system paths, and every device.
func UnprivilegedArgs() ([]string, error) {
	caps, err := boundingCaps()
	if err != nil {
		return nil, err
	}
	args := []string{"--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
		"--security-opt", "systempaths=unconfined", "--device-cgroup-rule", "a *:* rwm"}
	for _, c := range caps {
		args = append(args, "--cap-add", c)
	}
	return args, nil
}

// ShimArgs rewrites a docker command line: `run … --privileged …` becomes `run …` with
// UnprivilegedArgs, and `exec --privileged …` loses the flag (the process gets the capabilities the
// container was started with, which are all the engine can give); every other command passes
// through unchanged.
func ShimArgs(args []string) ([]string, error) {
	if len(args) > 0 && args[0] == "exec" {
		out := make([]string, 0, len(args))
		for _, a := range args {
			if a != "--privileged" && a != "--privileged=true" {
				out = append(out, a)
			}
		}
		return out, nil
	}
	if len(args) == 0 || args[0] != "run" {
		return args, nil
	}
	out := make([]string, 0, len(args)+64)
	replaced := false
	for _, a := range args {
		if a == "--privileged" || a == "--privileged=true" {
			if !replaced {
				extra, err := UnprivilegedArgs()
				if err != nil {
					return nil, err
				}
				out = append(out, extra...)
				replaced = true
			}
			continue
		}
		out = append(out, a)
	}
	return out, nil
}
