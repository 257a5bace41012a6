package images

import (
	"archive/tar"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func fakeBinDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range Names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!binary "+n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestImageConfigAndFiles(t *testing.T) {
	bin := fakeBinDir(t)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := Build("catalogd", filepath.Join(bin, "catalogd"), Options{CABundle: ca})
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cf.Config.Entrypoint; len(got) != 1 || got[0] != "/usr/local/bin/catalogd" {
		t.Errorf("entrypoint %v", got)
	}
	if cf.Config.User != "65532:65532" || cf.OS != "linux" {
		t.Errorf("user %q os %q", cf.Config.User, cf.OS)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d, %v: want one", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]*tar.Header{}
	contents := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[h.Name], contents[h.Name] = h, string(b)
	}
	bin0 := files["usr/local/bin/catalogd"]
	if bin0 == nil || bin0.Mode != 0o755 || bin0.Uid != 0 || contents["usr/local/bin/catalogd"] != "#!binary catalogd" {
		t.Errorf("binary entry %+v", bin0)
	}
	if !strings.Contains(contents["etc/passwd"], "nonroot:x:65532:65532:") || !strings.Contains(contents["etc/group"], "nonroot:x:65532:") {
		t.Errorf("passwd %q group %q", contents["etc/passwd"], contents["etc/group"])
	}
	if files["etc/ssl/certs/ca-certificates.crt"] == nil || files["tmp/"] == nil || files["usr/local/bin/"] == nil {
		t.Errorf("missing CA bundle, /tmp or parent dirs: %v", files)
	}
}

func TestBuildIsReproducible(t *testing.T) {
	bin := fakeBinDir(t)
	a, err := Build("rukpak", filepath.Join(bin, "rukpak"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build("rukpak", filepath.Join(bin, "rukpak"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	da, _ := a.Digest()
	db, _ := b.Digest()
	if da != db {
		t.Errorf("two builds of the same binary differ: %s %s", da, db)
	}
}

func TestPushAllAndArchives(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	imgs, err := BuildAll(fakeBinDir(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	digests, err := PushAll(context.Background(), imgs, host+"/olmv1", "dev", true)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range Names {
		pulled, err := remote.Image(digests[n])
		if err != nil {
			t.Fatalf("pull %s: %v", digests[n], err)
		}
		cf, err := pulled.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cf.Config.Entrypoint[0] != "/usr/local/bin/"+n {
			t.Errorf("%s: pulled entrypoint %v", n, cf.Config.Entrypoint)
		}
	}
	dir := t.TempDir()
	paths, err := WriteArchives(imgs, dir, "localhost/olmv1", "dev")
	if err != nil || len(paths) != 3 {
		t.Fatalf("archives %v: %v", paths, err)
	}
	loaded, err := tarball.ImageFromPath(paths[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	// A docker archive carries docker media types, so compare the config (the same bytes).
	want, _ := imgs[Names[0]].ConfigName()
	if got, _ := loaded.ConfigName(); got != want {
		t.Errorf("archive config %s, built %s", got, want)
	}
}
