package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const cgroupFS = "/sys/fs/cgroup"

// cgroupHierarchies lists the mounted cgroup hierarchies (v1 controllers and the unified one), each
// once.
func cgroupHierarchies() []string {
	entries, err := os.ReadDir(cgroupFS)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, e := range entries {
		p := filepath.Join(cgroupFS, e.Name())
		real, err := filepath.EvalSymlinks(p)
		if err != nil || seen[real] {
			continue
		}
		if st, err := os.Stat(real); err != nil || !st.IsDir() {
			continue
		}
		seen[real] = true
		out = append(out, real)
	}
	return out
}

// createCgroupRoot makes the node's cgroup parent in every v1 hierarchy (kubelet requires it to exist);
// a cpuset cgroup needs its CPUs and memory nodes before it can hold a task.
func createCgroupRoot(root string) error {
	for _, h := range cgroupHierarchies() {
		if filepath.Base(h) == "unified" {
			continue
		}
		dir := filepath.Join(h, root)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
		if filepath.Base(h) == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				v, err := os.ReadFile(filepath.Join(h, f))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
					return fmt.Errorf("setting %s of %s: %w", f, dir, err)
				}
			}
		}
	}
	return nil
}

// cgroupProcs returns the PIDs in root and below it, in every hierarchy.
func cgroupProcs(root string) []int {
	seen := map[int]bool{}
	for _, h := range cgroupHierarchies() {
		_ = filepath.WalkDir(filepath.Join(h, root), func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			data, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
			if err != nil {
				return nil
			}
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil {
					seen[pid] = true
				}
			}
			return nil
		})
	}
	pids := make([]int, 0, len(seen))
	for pid := range seen {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	return pids
}

// removeCgroupRoot removes root and every cgroup below it, deepest first, in every hierarchy. A cgroup
// still busy (a process that entered it after the last kill, or one the kernel has not finished
// releasing: seen on a loaded machine right after its containers were killed) is retried, killing what
// it holds, for up to cgroupRemoveTimeout.
func removeCgroupRoot(root string) error {
	deadline := time.Now().Add(cgroupRemoveTimeout)
	for {
		err := removeCgroupTree(root)
		if err == nil || !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return err
		}
		killAll(cgroupProcs(root), time.Until(deadline))
		time.Sleep(50 * time.Millisecond)
	}
}

// cgroupRemoveTimeout bounds removeCgroupRoot's retries of busy cgroups.
const cgroupRemoveTimeout = 10 * time.Second

// removeCgroupTree is one pass of removeCgroupRoot.
func removeCgroupTree(root string) error {
	var errs []error
	for _, h := range cgroupHierarchies() {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(h, root), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := syscall.Rmdir(dirs[i]); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("removing cgroup %s: %w", dirs[i], err))
			}
		}
	}
	return errors.Join(errs...)
}

// nsInode is the inode of a namespace file (a /proc/PID/ns entry or a bind mount of one).
func nsInode(path string) uint64 {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0
	}
	return st.Ino
}

// procsInNamespace returns the PIDs whose namespace of kind ("net", "mnt") has inode ino.
func procsInNamespace(kind string, ino uint64) []int {
	if ino == 0 {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if nsInode(fmt.Sprintf("/proc/%d/ns/%s", pid, kind)) == ino {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killAll SIGKILLs pids and waits (up to timeout) until none is left.
func killAll(pids []int, timeout time.Duration) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		left := false
		for _, pid := range pids {
			if alive(pid) {
				left = true
			}
		}
		if !left {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stopRealNode stops kube-proxy and kubelet, kills every container (the processes in the node's cgroup
// root), then containerd, the shims and anything else left in the node's mount namespace, and finally
// removes the node's cgroups. The mount namespace, with its tmpfs, pod network namespaces and
// kubelet's volume mounts, goes with its last process.
func (n *RealNode) stop() error {
	var errs []error
	for i := len(n.Processes) - 1; i >= 0; i-- {
		p := n.Processes[i]
		if p.Name == "containerd" {
			// Containers first, so that containerd sees its shims exit rather than vanish.
			killAll(cgroupProcs(n.CgroupRoot), 10*time.Second)
		}
		errs = append(errs, p.Stop(5*time.Second))
	}
	if n.Holder != nil {
		mnt := nsInode(fmt.Sprintf("/proc/%d/ns/mnt", n.Holder.PID))
		killAll(cgroupProcs(n.CgroupRoot), 10*time.Second)
		killAll(procsInNamespace("mnt", mnt), 10*time.Second)
		errs = append(errs, n.Holder.Stop(2*time.Second))
	}
	errs = append(errs, removeCgroupRoot(n.CgroupRoot))
	return errors.Join(errs...)
}

// Leftovers lists what a stopped real-node cluster left behind on the machine: processes in its
// network namespace, the namespace itself, its cgroups, and mounts under its directory. Empty after a
// clean Stop.
func (c *Cluster) Leftovers() []string {
	var out []string
	if c.Netns == nil {
		return nil
	}
	if pids := procsInNamespace("net", c.Netns.Inode); len(pids) > 0 {
		out = append(out, fmt.Sprintf("processes in network namespace %s: %v", c.Netns.Name, pids))
	}
	if _, err := os.Stat(c.Netns.Path()); err == nil {
		out = append(out, "network namespace "+c.Netns.Path())
	}
	if c.Node != nil {
		for _, h := range cgroupHierarchies() {
			if _, err := os.Stat(filepath.Join(h, c.Node.CgroupRoot)); err == nil {
				out = append(out, "cgroup "+filepath.Join(h, c.Node.CgroupRoot))
			}
		}
	}
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(mi), "\n") {
			if strings.Contains(line, c.Dir) || strings.Contains(line, c.Netns.Path()) {
				out = append(out, "mount: "+line)
			}
		}
	}
	return out
}

// deleteNetns removes the cluster's network namespace once every process in it is gone.
func (c *Cluster) deleteNetns() error {
	if c.Netns == nil {
		return nil
	}
	killAll(procsInNamespace("net", c.Netns.Inode), 5*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.Netns.delete(ctx)
}

// ContainerProcesses returns the PIDs (in this machine's PID namespace) of every container process
// on the real node, for tests that kill a container's process from outside as a crash would.
func (c *Cluster) ContainerProcesses() []int {
	if c.Node == nil {
		return nil
	}
	return cgroupProcs(c.Node.CgroupRoot)
}
