package localcluster

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// get fetches url and returns its status, Docker-Content-Digest and body.
func get(t *testing.T, method, url string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Docker-Content-Digest"), body
}

func TestRegistryServesTheStandInForEveryNameAndKeepsItsOwnContent(t *testing.T) {
	r, err := StartRegistry("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop(context.Background()) })
	base := "http://" + r.Addr + standInPrefix
	if code, _, _ := get(t, http.MethodGet, base+"hub-operator/manifests/v1.0.0"); code != http.StatusNotFound {
		t.Fatalf("before ServeStandIn the stand-in path answered %d, want 404 (the plain registry's)", code)
	}

	img, err := random.Image(512, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.ServeStandIn(img); err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	manifest, _ := img.RawManifest()
	for _, path := range []string{"hub-operator/manifests/v1.0.0", "bundles/example-operator/manifests/0.1.0", "a/b/c/manifests/" + want.String()} {
		code, digest, body := get(t, http.MethodGet, base+path)
		if code != http.StatusOK || digest != want.String() || string(body) != string(manifest) {
			t.Errorf("GET %s: %d digest %q, want 200 with the stand-in's manifest %s", path, code, digest, want)
		}
	}
	if code, digest, body := get(t, http.MethodHead, base+"web/manifests/1"); code != http.StatusOK || digest != want.String() || len(body) != 0 {
		t.Errorf("HEAD: %d %q %d bytes, want 200 with the digest and no body", code, digest, len(body))
	}
	if code, _, _ := get(t, http.MethodGet, base+"web/manifests/sha256:"+strings.Repeat("0", 64)); code != http.StatusNotFound {
		t.Errorf("a manifest digest other than the stand-in's answered %d, want 404", code)
	}
	layers, _ := img.Layers()
	for _, l := range layers {
		d, _ := l.Digest()
		code, _, body := get(t, http.MethodGet, base+"any/blobs/"+d.String())
		rc, _ := l.Compressed()
		data, _ := io.ReadAll(rc)
		rc.Close()
		if code != http.StatusOK || string(body) != string(data) {
			t.Errorf("blob %s: %d, %d bytes, want 200 with the layer's %d bytes", d, code, len(body), len(data))
		}
	}
	if code, _, _ := get(t, http.MethodGet, base+"any/blobs/sha256:"+strings.Repeat("1", 64)); code != http.StatusNotFound {
		t.Errorf("an unknown blob answered %d, want 404", code)
	}
	if code, _, _ := get(t, http.MethodPut, base+"any/manifests/v1"); code != http.StatusMethodNotAllowed {
		t.Errorf("a push to the stand-in answered %d, want 405", code)
	}

	// What is pushed to the registry is still served as pushed, beside the stand-in.
	own, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(r.Addr + "/own/image:v1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, own); err != nil {
		t.Fatal(err)
	}
	got, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	if gd, _ := got.Digest(); gd == want {
		t.Error("a pushed image was answered with the stand-in")
	}
}

func TestStandInImageRunsThePauseProgramAsNobody(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "pause")
	if err := os.WriteFile(bin, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	img, err := StandInImage(&NodeBinaries{Pause: bin})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cfg.Config.Entrypoint, " ") != "/pause" || cfg.Config.User != "65534" || cfg.OS != "linux" {
		t.Errorf("config %+v, want entrypoint /pause, user 65534, os linux", cfg.Config)
	}
}

func TestStandInHostsOverridesThePath(t *testing.T) {
	got := standInHosts("registry.example.test", "172.18.0.2:5000")
	want := "server = \"https://registry.example.test\"\n\n[host.\"http://172.18.0.2:5000/olmv1-stand-in/v2\"]\n  capabilities = [\"pull\", \"resolve\"]\n  override_path = true\n"
	if got != want {
		t.Errorf("hosts.toml:\n%s\nwant:\n%s", got, want)
	}
}
