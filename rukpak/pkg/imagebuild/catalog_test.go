package imagebuild_test

import (
	"archive/tar"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

const catalogFixture = "testdata/catalog"

func TestCatalogImage(t *testing.T) {
	host := startRegistry(t)
	img, err := imagebuild.CatalogImage(catalogFixture)
	if err != nil {
		t.Fatal(err)
	}
	pulled := pushAndPull(t, img, host, "catalogs/demo:v1")

	m, err := pulled.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %q, want %q", m.MediaType, types.OCIManifestSchema1)
	}
	if m.Config.MediaType != types.OCIConfigJSON {
		t.Errorf("config media type %q, want %q", m.Config.MediaType, types.OCIConfigJSON)
	}
	if len(m.Layers) != 1 || m.Layers[0].MediaType != types.OCILayer {
		t.Errorf("layers %+v, want one %s", m.Layers, types.OCILayer)
	}

	cfg, err := pulled.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Config.Labels[imagebuild.CatalogConfigsLabel]; got != "/configs" {
		t.Errorf("label %s = %q, want /configs", imagebuild.CatalogConfigsLabel, got)
	}
	if !cfg.Created.Equal(time.Unix(0, 0)) {
		t.Errorf("config created %s, want the Unix epoch", cfg.Created)
	}

	entries := singleLayer(t, pulled)
	for _, dir := range []string{"configs/", "configs/demo-json/", "configs/demo-yaml/"} {
		if e, ok := entries[dir]; !ok || e.hdr.Typeflag != tar.TypeDir {
			t.Errorf("missing directory entry %s", dir)
		}
	}
	assertSameFiles(t, regularFiles(entries), dirFiles(t, catalogFixture, "configs/"))
}

func TestCatalogImageIsDeterministic(t *testing.T) {
	first, err := imagebuild.CatalogImage(catalogFixture)
	if err != nil {
		t.Fatal(err)
	}
	second, err := imagebuild.CatalogImage(catalogFixture)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := digestOf(t, first), digestOf(t, second); a != b {
		t.Fatalf("two builds of the same directory differ: %s != %s", a, b)
	}

	// Same content with other mtimes and permissions: same digest.
	copied := copyTree(t, catalogFixture)
	fromCopy, err := imagebuild.CatalogImage(copied)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := digestOf(t, first), digestOf(t, fromCopy); a != b {
		t.Fatalf("a copy with other mtimes and modes gives %s, want %s", b, a)
	}

	// Other content: another digest.
	writeFile(t, filepath.Join(copied, "demo-yaml", "catalog.yaml"), "schema: olm.package\nname: changed\n")
	changed, err := imagebuild.CatalogImage(copied)
	if err != nil {
		t.Fatal(err)
	}
	if digestOf(t, first) == digestOf(t, changed) {
		t.Fatal("changing a file did not change the digest")
	}
}

func TestCatalogImageErrors(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "catalog.json")
	writeFile(t, file, "{}")
	noFBC := filepath.Join(tmp, "no-fbc")
	writeFile(t, filepath.Join(noFBC, "README.md"), "not a catalog")

	tests := []struct {
		name  string
		dir   string
		wants []string
	}{
		{"missing", filepath.Join(tmp, "absent"), []string{`catalog directory "` + filepath.Join(tmp, "absent") + `" not found`}},
		{"file", file, []string{"is a file, not a directory"}},
		{"no json or yaml", noFBC, []string{"has no .json, .yaml or .yml file", "olm.package"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := imagebuild.CatalogImage(tt.dir)
			assertErrorContains(t, err, tt.wants...)
		})
	}
}

func TestCatalogImageSymlinks(t *testing.T) {
	t.Run("inside links are kept as relative symlinks", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "pkg", "catalog.json"), `{"schema":"olm.package","name":"pkg"}`)
		symlink(t, "catalog.json", filepath.Join(dir, "pkg", "alias.json"))
		// An absolute link into the directory is rewritten as a relative one.
		symlink(t, filepath.Join(dir, "pkg", "catalog.json"), filepath.Join(dir, "other", "abs.json"))
		symlink(t, "pkg", filepath.Join(dir, "pkg-link"))

		img, err := imagebuild.CatalogImage(dir)
		if err != nil {
			t.Fatal(err)
		}
		entries := singleLayer(t, img)
		for name, want := range map[string]string{
			"configs/pkg/alias.json": "catalog.json",
			"configs/other/abs.json": "../pkg/catalog.json",
			"configs/pkg-link":       "pkg",
		} {
			e, ok := entries[name]
			switch {
			case !ok:
				t.Errorf("missing %s", name)
			case e.hdr.Typeflag != tar.TypeSymlink || e.hdr.Linkname != want:
				t.Errorf("%s: type %c link %q, want a symlink to %q", name, e.hdr.Typeflag, e.hdr.Linkname, want)
			}
		}
	})

	t.Run("outside link is refused", func(t *testing.T) {
		outside := filepath.Join(t.TempDir(), "secret.json")
		writeFile(t, outside, "{}")
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "catalog.json"), "{}")
		symlink(t, outside, filepath.Join(dir, "escape.json"))
		_, err := imagebuild.CatalogImage(dir)
		assertErrorContains(t, err, `symlink "escape.json"`, "outside the directory")
	})

	t.Run("dangling link is refused", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "catalog.json"), "{}")
		symlink(t, "gone.json", filepath.Join(dir, "dangling.json"))
		_, err := imagebuild.CatalogImage(dir)
		assertErrorContains(t, err, `symlink "dangling.json"`, "does not exist")
	})

	t.Run("executable bit is kept as 0755", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "catalog.json"), "{}")
		if err := os.Chmod(filepath.Join(dir, "catalog.json"), 0o700); err != nil {
			t.Fatal(err)
		}
		img, err := imagebuild.CatalogImage(dir)
		if err != nil {
			t.Fatal(err)
		}
		if got := singleLayer(t, img)["configs/catalog.json"].hdr.Mode; got != 0o755 {
			t.Errorf("mode %o, want 755", got)
		}
	})
}
