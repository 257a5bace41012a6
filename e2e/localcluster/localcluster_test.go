package localcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStagingModules(t *testing.T) {
	gomod := `module k8s.io/kubernetes

require (
	github.com/blang/semver/v4 v4.0.0
	k8s.io/api v0.0.0
	k8s.io/utils v0.0.0-20250604170112-4c0f3b243397
	k8s.io/sample-controller v0.0.0
	k8s.io/client-go v0.0.0
)

require k8s.io/kms v0.0.0

replace k8s.io/api => ./staging/src/k8s.io/api
`
	got := stagingModules(gomod)
	want := []string{"k8s.io/api", "k8s.io/client-go", "k8s.io/kms"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("stagingModules = %v, want %v (pseudo-versions and sample modules excluded)", got, want)
	}
}

func TestKubernetesLDFlagsStampVersion(t *testing.T) {
	f := kubernetesLDFlags()
	for _, want := range []string{
		"k8s.io/component-base/version.gitVersion=" + KubernetesVersion,
		"k8s.io/client-go/pkg/version.gitVersion=" + KubernetesVersion,
		"k8s.io/component-base/version.gitMinor=37",
		"buildDate=1970-01-01T00:00:00Z",
	} {
		if !strings.Contains(f, want) {
			t.Errorf("ldflags %q lack %q", f, want)
		}
	}
}

func TestGeneratePKIChains(t *testing.T) {
	p, err := generatePKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(mustRead(t, p.path(caCert)))
	serving := parseCert(t, p.path(servingCert))
	if _, err := serving.Verify(x509.VerifyOptions{Roots: roots, DNSName: "kubernetes.default.svc", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("serving cert does not verify for kubernetes.default.svc: %v", err)
	}
	if !serving.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")) {
		t.Errorf("serving cert IPs = %v, want 127.0.0.1 first", serving.IPAddresses)
	}
	admin := parseCert(t, p.path(adminCert))
	if _, err := admin.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("admin cert does not verify: %v", err)
	}
	if admin.Subject.Organization[0] != "system:masters" {
		t.Errorf("admin cert groups = %v", admin.Subject.Organization)
	}
	fpRoots := x509.NewCertPool()
	fpRoots.AppendCertsFromPEM(mustRead(t, p.path(frontProxyCACert)))
	fp := parseCert(t, p.path(frontProxyCert))
	if _, err := fp.Verify(x509.VerifyOptions{Roots: fpRoots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("front-proxy client cert does not verify against the front-proxy CA: %v", err)
	}
	if fp.Subject.CommonName != frontProxyUserName {
		t.Errorf("front-proxy CN = %q, want %q (it must match --requestheader-allowed-names)", fp.Subject.CommonName, frontProxyUserName)
	}
	if _, err := tls.LoadX509KeyPair(p.path(servingCert), p.path(servingKey)); err != nil {
		t.Errorf("serving key pair does not load: %v", err)
	}
	if block, _ := pem.Decode(mustRead(t, p.path(serviceAccountPub))); block == nil || block.Type != "PUBLIC KEY" {
		t.Errorf("service account public key is not PEM PUBLIC KEY")
	}
}

func TestProcessStopOnlyStopsItsOwnPID(t *testing.T) {
	dir := t.TempDir()
	a, err := startProcess("a", dir, false, nil, "/bin/sleep", "60")
	if err != nil {
		t.Fatal(err)
	}
	b, err := startProcess("b", dir, false, nil, "/bin/sleep", "60")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Stop(time.Second)
	if err := a.Stop(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	if !a.Exited() {
		t.Error("a is still running after Stop")
	}
	if b.Exited() {
		t.Error("stopping a also stopped b")
	}
}

func TestLoadStateAndStopFromAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	p, err := startProcess("sleeper", dir, true, nil, "/bin/sleep", "60")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Dir: dir, Processes: []*Process{p}}
	if err := c.save(); err != nil {
		t.Fatal(err)
	}
	loaded, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !loaded.running() || loaded.Processes[0].PID != p.PID {
		t.Fatalf("loaded state %+v does not describe the running process %d", loaded.Processes, p.PID)
	}
	if err := loaded.Stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		t.Fatal("process still running after Stop from loaded state")
	}
	if _, err := os.Stat(filepath.Join(dir, stateFile)); !os.IsNotExist(err) {
		t.Errorf("state file still present after Stop: %v", err)
	}
}

func TestRegistryListensOnLoopbackOnly(t *testing.T) {
	if _, err := StartRegistry("0.0.0.0:0", nil); err == nil {
		t.Fatal("a registry on 0.0.0.0 must be refused")
	}
	r, err := StartRegistry("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := net.Dial("tcp", r.Addr)
	if err != nil {
		t.Fatalf("registry not reachable at %s: %v", r.Addr, err)
	}
	conn.Close()
	if err := r.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parseCert(t *testing.T, p string) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(mustRead(t, p))
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestForwardFromListensOnLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "10.200.0.1:0", ":0", "localhost"} {
		if f, err := ForwardFrom(addr, &Netns{Name: "none"}, "127.0.0.1:1"); err == nil {
			f.Close()
			t.Errorf("ForwardFrom(%q) listened; want it refused (loopback only)", addr)
		}
	}
}

func TestForwardOutOfDialsTheHostOnLoopbackOnly(t *testing.T) {
	for _, target := range []string{"10.200.0.1:80", "172.18.0.2:5000", "0.0.0.0:1", "localhost"} {
		if f, err := ForwardOutOf(&Netns{Name: "none"}, "127.0.0.1:0", target); err == nil {
			f.Close()
			t.Errorf("ForwardOutOf to %q listened; want it refused (the host dials loopback only)", target)
		}
	}
}

func TestMirrorRegistryWritesHostsForTheNode(t *testing.T) {
	c := &Cluster{}
	if err := c.MirrorRegistry("quay.io", "10.200.0.1:5000"); err == nil || !strings.Contains(err.Error(), "needs a real node") {
		t.Fatalf("without a real node: want an error, got %v", err)
	}
	c.Node = &RealNode{Dir: t.TempDir()}
	for host, server := range map[string]string{"registry.example.test": "https://registry.example.test", "docker.io": "https://registry-1.docker.io"} {
		if err := c.MirrorRegistry(host, "10.200.0.1:5000"); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(c.Node.Dir, "certs.d", host, "hosts.toml"))
		if err != nil {
			t.Fatal(err)
		}
		want := "server = \"" + server + "\"\n\n[host.\"http://10.200.0.1:5000\"]\n  capabilities = [\"pull\", \"resolve\"]\n"
		if string(got) != want {
			t.Errorf("%s: hosts.toml\n%s\nwant\n%s", host, got, want)
		}
	}
}

func TestFreePortsAreOutsideTheEphemeralRange(t *testing.T) {
	ports, err := freePorts(5)
	if err != nil {
		t.Fatal(err)
	}
	one, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range append(ports, one) {
		if p < portLow || p >= portLow+portCount || seen[p] {
			t.Errorf("port %d: want distinct ports in [%d, %d)", p, portLow, portLow+portCount)
		}
		seen[p] = true
	}
}

func TestRemoveCgroupRootKillsWhatStillHoldsIt(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("creating cgroups needs root")
	}
	var hier string
	for _, h := range cgroupHierarchies() {
		if _, err := os.Stat(filepath.Join(h, "cgroup.procs")); err == nil {
			hier = h
			break
		}
	}
	if hier == "" {
		t.Skip("no writable cgroup hierarchy under " + cgroupFS)
	}
	root := fmt.Sprintf("olmv1-test-%d", os.Getpid())
	leaf := filepath.Join(hier, root, "pod")
	if err := os.MkdirAll(leaf, 0o755); err != nil {
		t.Skipf("cannot create a cgroup: %v", err)
	}
	t.Cleanup(func() { _ = removeCgroupTree(root) })
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }() // reaps it once killed
	if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		_ = cmd.Process.Kill()
		t.Fatal(err)
	}
	// A process entered the cgroup after the node's last kill: one pass is refused as busy...
	if err := removeCgroupTree(root); !errors.Is(err, syscall.EBUSY) {
		t.Fatalf("one pass over a cgroup holding a process: %v, want EBUSY", err)
	}
	// ...and removeCgroupRoot kills it and removes the tree.
	if err := removeCgroupRoot(root); err != nil {
		t.Fatalf("removeCgroupRoot: %v", err)
	}
	if _, err := os.Stat(filepath.Join(hier, root)); !os.IsNotExist(err) {
		t.Errorf("cgroup %s still there: %v", root, err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Error("the process in the cgroup was not killed")
	}
}
