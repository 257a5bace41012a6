package widgetbundle

import (
	"archive/tar"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// TestBuild runs Build against an in-memory registry (it compiles the operator) and reads back
// what it pushed.
func TestBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles widget-operator")
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	pushAddr := strings.TrimPrefix(srv.URL, "http://")
	const clusterAddr = "10.201.0.1:5000"
	e2eRoot, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	f, err := Build(ctx, Options{E2ERoot: e2eRoot, PushAddr: pushAddr, ClusterAddr: clusterAddr, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if f.Package != Package || f.Channel != Channel || len(f.Versions) != 2 || len(f.Catalogs) != 2 {
		t.Fatalf("fixture %+v", f)
	}
	// fetch reads a returned reference (at clusterAddr) from the test registry.
	fetch := func(ref string) v1.Image {
		t.Helper()
		if !strings.HasPrefix(ref, clusterAddr+"/") || !strings.Contains(ref, "@sha256:") {
			t.Fatalf("reference %q is not a digest at %s", ref, clusterAddr)
		}
		r, err := name.ParseReference(pushAddr+strings.TrimPrefix(ref, clusterAddr), name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		img, err := remote.Image(r)
		if err != nil {
			t.Fatalf("pulling %s: %v", r, err)
		}
		return img
	}

	for _, v := range f.Versions {
		op := fetch(f.OperatorImages[v])
		cf, err := op.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(cf.Config.Entrypoint, " "); got != "/usr/local/bin/widget-operator" || cf.Config.User != "65532:65532" {
			t.Errorf("operator image %s: entrypoint %q user %q", v, got, cf.Config.User)
		}
		if !strings.HasPrefix(f.Bundles[v], clusterAddr+"/"+BundleRepository+"@") {
			t.Errorf("bundle %s reference %q", v, f.Bundles[v])
		}
		csv := fileOf(t, fetch(f.Bundles[v]), CSVFile)
		if !strings.Contains(csv, "image: \""+f.OperatorImages[v]+"\"") || !strings.Contains(csv, "name: widget-operator.v"+v) {
			t.Errorf("bundle %s: the CSV does not run %s:\n%s", v, f.OperatorImages[v], csv)
		}
	}
	for tag, versions := range CatalogVersions {
		fbc := fileOf(t, fetch(f.Catalogs[tag]), "configs/"+CatalogFile)
		for _, v := range Versions {
			want := slices.Contains(versions, v)
			if got := strings.Contains(fbc, "image: "+f.Bundles[v]); got != want {
				t.Errorf("catalog %s: holds bundle %s: %v, want %v\n%s", tag, v, got, want, fbc)
			}
		}
	}
}

// fileOf returns the content of path in img's filesystem.
func fileOf(t *testing.T, img v1.Image, path string) string {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimPrefix(h.Name, "/") == path {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return string(data)
		}
	}
	t.Fatalf("%s is not in the image", path)
	return ""
}

func TestBuildNeedsOptions(t *testing.T) {
	if _, err := Build(context.Background(), Options{E2ERoot: "."}); err == nil || !strings.Contains(err.Error(), "PushAddr is empty") {
		t.Errorf("error %v", err)
	}
	if _, err := Build(context.Background(), Options{PushAddr: "127.0.0.1:1"}); err == nil || !strings.Contains(err.Error(), "E2ERoot is empty") {
		t.Errorf("error %v", err)
	}
}
