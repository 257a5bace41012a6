package bundletest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/olmv1/olmv1/e2e/localcluster"
)

func TestParseLoadImage(t *testing.T) {
	li, err := ParseLoadImage("registry.example.test/me/op:v1=/tmp/op.tar")
	if err != nil || li.Ref != "registry.example.test/me/op:v1" || li.File != "/tmp/op.tar" {
		t.Fatalf("got %+v, %v", li, err)
	}
	for _, bad := range []string{"", "op.tar", "=op.tar", "quay.io/x:v1=", "UPPER/case:v1=x.tar"} {
		if _, err := ParseLoadImage(bad); err == nil || !strings.Contains(err.Error(), "--load-image") {
			t.Errorf("%q: want an error naming --load-image, got %v", bad, err)
		}
	}
}

func TestPodsMode(t *testing.T) {
	empty := t.TempDir() // no node binaries cached here
	for _, c := range []struct {
		pods     string
		wantReal bool
		wantWhy  string
		wantErr  string
	}{
		{pods: PodsSimulated, wantWhy: "--pods simulated"},
		{pods: "", wantWhy: "simulated, because"},
		{pods: PodsAuto, wantWhy: "simulated, because"},
		{pods: "kwok", wantErr: `--pods "kwok": want auto, real or simulated`},
	} {
		real, why, err := podsMode(Options{Pods: c.pods, CacheDir: empty})
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%q: error %v, want %q", c.pods, err, c.wantErr)
			}
			continue
		}
		if err != nil || real != c.wantReal || !strings.Contains(why, c.wantWhy) {
			t.Errorf("%q: got %v %q %v, want %v and %q", c.pods, real, why, err, c.wantReal, c.wantWhy)
		}
	}
	real, why, err := podsMode(Options{Pods: PodsReal, CacheDir: empty})
	if os.Geteuid() == 0 {
		if err != nil || !real || why != "--pods real" {
			t.Errorf("--pods real as root: got %v %q %v", real, why, err)
		}
	} else if err == nil || !strings.Contains(err.Error(), "needs root") {
		t.Errorf("--pods real without root: want an error saying it needs root, got %v", err)
	}
}

func TestWebhookUnreachable(t *testing.T) {
	for msg, want := range map[string]bool{
		`Internal error occurred: failed calling webhook "vwidget.widgets.olmv1.io": failed to call webhook: Post "https://widget-operator.widgets.svc:443/validate?timeout=10s": dial tcp 10.96.158.67:443: connect: connection refused`: true,
		`Internal error occurred: failed calling webhook "m.x": failed to call webhook: Post "https://s.ns.svc:443/m": dial tcp 10.96.0.9:443: connect: no route to host`:                                                                 true,
		`Internal error occurred: failed calling webhook "m.x": failed to call webhook: Post "https://s.ns.svc:443/m?timeout=10s": dial tcp 10.96.0.9:443: i/o timeout`:                                                                   true,
		`Internal error occurred: failed calling webhook "m.x": failed to call webhook: Post "https://s.ns.svc:443/m?timeout=10s": context deadline exceeded`:                                                                             false,
		`admission webhook "vwidget.widgets.olmv1.io" denied the request: spec.size must be even`:                                                                                                                                         false,
		`Widget.widgets.olmv1.io "small" is invalid: spec.size: Invalid value: 1`:                                                                                                                                                         false,
		`dial tcp 127.0.0.1:6443: connect: connection refused`:                                                                                                                                                                            false,
	} {
		if got := webhookUnreachable(errors.New(msg)); got != want {
			t.Errorf("webhookUnreachable(%q) = %v, want %v", msg, got, want)
		}
	}
}

func TestReadImageFile(t *testing.T) {
	img, err := random.Image(512, 2)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	tag, _ := name.NewTag("registry.example.test/me/op:v1")
	dir := t.TempDir()

	tarPath := filepath.Join(dir, "op.tar")
	if err := tarball.WriteToFile(tarPath, tag, img); err != nil {
		t.Fatal(err)
	}
	got, err := readImageFile(tarPath, tag)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := got.Digest(); d != want {
		t.Errorf("tarball: digest %s, want %s", d, want)
	}

	lp, err := layout.Write(filepath.Join(dir, "oci"), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := lp.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	got, err = readImageFile(filepath.Join(dir, "oci"), tag)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := got.Digest(); d != want {
		t.Errorf("OCI layout: digest %s, want %s (a layout keeps the manifest, so digest references match)", d, want)
	}
	if err := lp.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	if _, err := readImageFile(filepath.Join(dir, "oci"), tag); err == nil || !strings.Contains(err.Error(), "holds 2 manifests") {
		t.Errorf("a layout of two images: want an error, got %v", err)
	}
	if _, err := readImageFile(filepath.Join(dir, "missing.tar"), tag); err == nil {
		t.Error("a missing file: want an error")
	}
}

func TestClusterRefsRewriteThePushAddress(t *testing.T) {
	dir := t.TempDir()
	fbc := "schema: olm.bundle\nimage: 127.0.0.1:40001/bundle-test/op:1.0.0\nrelatedImages:\n- image: 127.0.0.1:400011/other:v1\n"
	if err := os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(fbc), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := &tester{env: &localcluster.Environment{Registry: &localcluster.Registry{Addr: "127.0.0.1:40001"}}, pullAddr: "10.200.0.1:5000"}
	if err := tr.clusterRefs(dir); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "catalog.yaml"))
	want := "schema: olm.bundle\nimage: 10.200.0.1:5000/bundle-test/op:1.0.0\nrelatedImages:\n- image: 127.0.0.1:400011/other:v1\n"
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if r := tr.clusterRef("127.0.0.1:40001/bundle-test/catalog:latest"); r != "10.200.0.1:5000/bundle-test/catalog:latest" {
		t.Errorf("clusterRef: %s", r)
	}
	simulated := &tester{env: tr.env}
	if r := simulated.clusterRef("127.0.0.1:40001/x:v1"); r != "127.0.0.1:40001/x:v1" {
		t.Errorf("simulated pods: clusterRef changed the reference to %s", r)
	}
}
