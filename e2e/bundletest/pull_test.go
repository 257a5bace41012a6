package bundletest

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
	"github.com/olmv1/olmv1/rukpak/pkg/source/sourcetest"
)

// A bundle image in a registry that needs `docker login` is pulled with the docker configuration's
// credentials and read.
func TestPullToDirUsesDockerCredentials(t *testing.T) {
	reg := sourcetest.NewRegistry(t, sourcetest.WithBasicAuth("author", "s3cret"))
	img, err := imagebuild.RegistryV1BundleImage("../testdata/author/0.2.0")
	if err != nil {
		t.Fatal(err)
	}
	reg.Push(t, img, "author/widget-operator-bundle:0.2.0")
	docker := t.TempDir()
	if err := os.WriteFile(filepath.Join(docker, "config.json"), reg.DockerConfigJSON("author", "s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", docker)

	tt := &tester{o: Options{Insecure: true}, work: t.TempDir()}
	dir, err := tt.pullToDir(context.Background(), reg.Ref("author/widget-operator-bundle:0.2.0"), "bundle")
	if err != nil {
		t.Fatal(err)
	}
	b, err := ReadBundle(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b.Name != "widget-operator.v0.2.0" || len(b.CRDs) != 1 || len(b.Examples) != 2 {
		t.Errorf("bundle %+v", b)
	}

	t.Setenv("DOCKER_CONFIG", t.TempDir())
	tt = &tester{o: Options{Insecure: true}, work: t.TempDir()}
	if _, err := tt.pullToDir(context.Background(), reg.Ref("author/widget-operator-bundle:0.2.0"), "bundle"); err == nil ||
		!strings.Contains(err.Error(), "docker login") {
		t.Fatalf("want a pull error pointing at docker login without credentials, got %v", err)
	}
}

// An image layer with an entry that leaves the image root is refused, and nothing is written
// outside the scratch directory.
func TestPullToDirRefusesEntriesOutsideTheImage(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	body := []byte("escaped")
	if err := tw.WriteHeader(&tar.Header{Name: "../../escaped.txt", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	layer, err := tarball.LayerFromReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	reg := sourcetest.NewRegistry(t)
	reg.Push(t, img, "hostile/bundle:1")
	t.Setenv("DOCKER_CONFIG", t.TempDir())

	root := t.TempDir()
	tt := &tester{o: Options{Insecure: true}, work: filepath.Join(root, "a", "b")}
	if _, err := tt.pullToDir(context.Background(), reg.Ref("hostile/bundle:1"), "bundle"); err == nil {
		t.Fatal("want an error for an entry outside the image root")
	}
	matches, _ := filepath.Glob(filepath.Join(root, "*", "escaped.txt"))
	more, _ := filepath.Glob(filepath.Join(root, "escaped.txt"))
	if len(matches)+len(more) != 0 {
		t.Fatalf("a file was written outside the image root: %v %v", matches, more)
	}
}
