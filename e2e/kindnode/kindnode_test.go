package kindnode

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestShimArgsReplacesPrivilegedOnRunOnly(t *testing.T) {
	got, err := ShimArgs([]string{"run", "--name", "n", "--privileged", "--tmpfs", "/tmp", "img"})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(got, "--privileged") {
		t.Fatalf("--privileged kept: %v", got)
	}
	for _, want := range []string{"seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined", "a *:* rwm", "SYS_ADMIN", "NET_ADMIN"} {
		if !slices.Contains(got, want) {
			t.Errorf("%q missing from %v", want, got)
		}
	}
	if got[0] != "run" || got[len(got)-1] != "img" || !slices.Contains(got, "/tmp") {
		t.Errorf("the rest of the command line changed: %v", got)
	}
	if got, _ := ShimArgs([]string{"exec", "--privileged", "node", "cat", "/kind/version"}); !slices.Equal(got, []string{"exec", "node", "cat", "/kind/version"}) {
		t.Errorf("exec --privileged: %v", got)
	}
	other := []string{"ps", "-a", "--filter", "label=io.x-k8s.kind.cluster"}
	if got, _ := ShimArgs(other); !slices.Equal(got, other) {
		t.Errorf("ps rewritten: %v", got)
	}
}

func TestBoundingCapsNamesOnlyKnownBits(t *testing.T) {
	caps, err := boundingCaps()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range caps {
		if !slices.Contains(capNames, c) {
			t.Errorf("unknown capability %q", c)
		}
	}
	if len(caps) == 0 {
		t.Error("no capabilities in the bounding set")
	}
}

func TestKindConfigIsValidYAMLWithThePatchesTheImageNeeds(t *testing.T) {
	var cfg struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
		Nodes      []struct {
			Role string `json:"role"`
		} `json:"nodes"`
		Networking struct {
			DisableDefaultCNI bool   `json:"disableDefaultCNI"`
			PodSubnet         string `json:"podSubnet"`
		} `json:"networking"`
		Patches []string `json:"kubeadmConfigPatches"`
	}
	if err := yaml.UnmarshalStrict([]byte(KindConfig()), &cfg); err != nil {
		t.Fatalf("%v\n%s", err, KindConfig())
	}
	if cfg.Kind != "Cluster" || cfg.APIVersion != "kind.x-k8s.io/v1alpha4" || len(cfg.Nodes) != 1 || !cfg.Networking.DisableDefaultCNI || cfg.Networking.PodSubnet != PodSubnet {
		t.Errorf("config %+v", cfg)
	}
	all := strings.Join(cfg.Patches, "\n")
	for _, want := range []string{"imageTag: \"" + EtcdTag + "\"", "imageTag: \"" + CoreDNSTag + "\"", "failCgroupV1: false", "cgroupDriver: cgroupfs", "masqueradeAll: true"} {
		if !strings.Contains(all, want) {
			t.Errorf("patches lack %q:\n%s", want, all)
		}
	}
	for _, p := range cfg.Patches {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(p), &m); err != nil || m["kind"] == nil {
			t.Errorf("patch %q: %v", p, err)
		}
	}
}

// TestWriteNodeWritesEachPathOnce: the engine refuses an archive holding a path twice, so the
// project's files replace the root's.
func TestWriteNodeWritesEachPathOnce(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"etc/systemd/system/multi-user.target.wants", "usr/local/bin", "etc/containerd"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"etc/containerd/config.toml", "usr/local/bin/entrypoint", "etc/hostname"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("debian's"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/lib/systemd/system/e2scrub_reap.service", filepath.Join(root, "etc/systemd/system/multi-user.target.wants/e2scrub_reap.service")); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "kubelet")
	if err := os.WriteFile(bin, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := writeNode(tw, root, map[string]string{"usr/local/bin/kubelet": bin}, nil); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(h.Name, "/")
		if _, dup := seen[name]; dup {
			t.Errorf("%s written twice", name)
		}
		data, _ := io.ReadAll(tr)
		seen[name] = string(data)
	}
	if seen["etc/containerd/config.toml"] == "debian's" || !strings.Contains(seen["etc/containerd/config.toml"], "restrict_oom_score_adj = true") {
		t.Errorf("config.toml is not the project's: %q", seen["etc/containerd/config.toml"])
	}
	if seen["etc/hostname"] != "debian's" {
		t.Errorf("the root's own files are kept: etc/hostname = %q", seen["etc/hostname"])
	}
	for _, want := range []string{"usr/local/bin/kubelet", "kind/version", "etc/systemd/system/multi-user.target.wants/kubelet.service", "etc/systemd/system/console-getty.service", "etc/cni/net.d/10-olmv1.conflist", "kind/manifests/default-storage.yaml"} {
		if _, ok := seen[want]; !ok {
			t.Errorf("%s missing", want)
		}
	}
}
