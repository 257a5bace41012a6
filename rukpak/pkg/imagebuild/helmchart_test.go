package imagebuild_test

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

const helmChartFixture = "testdata/helmchart/demo-chart"

// chartLayer checks that img is a Helm chart artifact and returns its config and chart archive.
func chartLayer(t *testing.T, img v1.Image) (map[string]any, []byte) {
	t.Helper()
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %q, want %q", m.MediaType, types.OCIManifestSchema1)
	}
	if m.Config.MediaType != imagebuild.HelmConfigMediaType {
		t.Errorf("config media type %q, want %q", m.Config.MediaType, imagebuild.HelmConfigMediaType)
	}
	if len(m.Layers) != 1 || m.Layers[0].MediaType != imagebuild.HelmChartContentMediaType {
		t.Fatalf("layers %+v, want one %s", m.Layers, imagebuild.HelmChartContentMediaType)
	}
	raw, err := img.RawConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("config is not JSON: %v\n%s", err, raw)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layers[0].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tgz, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, tgz
}

func TestHelmChartArtifact(t *testing.T) {
	host := startRegistry(t)
	img, err := imagebuild.HelmChartArtifact(helmChartFixture)
	if err != nil {
		t.Fatal(err)
	}
	pulled := pushAndPull(t, img, host, "charts/demo-chart:0.1.0")
	cfg, tgz := chartLayer(t, pulled)

	for k, want := range map[string]string{
		"name":        "demo-chart",
		"version":     "0.1.0",
		"apiVersion":  "v2",
		"appVersion":  "1.0.0",
		"description": "A tiny chart for imagebuild tests",
		"type":        "application",
		"home":        "https://example.com/demo-chart",
	} {
		if got := cfg[k]; got != want {
			t.Errorf("config %s = %v, want %q", k, got, want)
		}
	}
	if ms, ok := cfg["maintainers"].([]any); !ok || len(ms) != 1 {
		t.Errorf("config maintainers = %v, want one", cfg["maintainers"])
	}

	m, err := pulled.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.Annotations["org.opencontainers.image.title"] != "demo-chart" || m.Annotations["org.opencontainers.image.version"] != "0.1.0" {
		t.Errorf("manifest annotations %v, want title demo-chart and version 0.1.0", m.Annotations)
	}

	// The archive is laid out like `helm package`: files only, under a folder named after the
	// chart, without what .helmignore names.
	entries := readTgz(t, tgz)
	want := dirFiles(t, helmChartFixture, "demo-chart/")
	delete(want, "demo-chart/ignored/notes.txt")
	assertSameFiles(t, regularFiles(entries), want)
	if len(entries) != len(want) {
		t.Errorf("archive has %d entries, want only the %d files", len(entries), len(want))
	}
}

func TestHelmChartArtifactFromArchive(t *testing.T) {
	fromDir, err := imagebuild.HelmChartArtifact(helmChartFixture)
	if err != nil {
		t.Fatal(err)
	}
	_, tgz := chartLayer(t, fromDir)
	archive := filepath.Join(t.TempDir(), "demo-chart-0.1.0.tgz")
	if err := os.WriteFile(archive, tgz, 0o644); err != nil {
		t.Fatal(err)
	}
	fromArchive, err := imagebuild.HelmChartArtifact(archive)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := digestOf(t, fromDir), digestOf(t, fromArchive); a != b {
		t.Errorf("the chart archive gives %s, the directory %s; want the same artifact", b, a)
	}

	host := startRegistry(t)
	pulled := pushAndPull(t, fromArchive, host, "charts/demo-chart:0.1.0")
	if _, got := chartLayer(t, pulled); string(got) != string(tgz) {
		t.Error("the pushed layer is not the archive byte for byte")
	}
}

func TestHelmChartArtifactIsDeterministic(t *testing.T) {
	a, err := imagebuild.HelmChartArtifact(helmChartFixture)
	if err != nil {
		t.Fatal(err)
	}
	b, err := imagebuild.HelmChartArtifact(copyTree(t, helmChartFixture))
	if err != nil {
		t.Fatal(err)
	}
	if da, db := digestOf(t, a), digestOf(t, b); da != db {
		t.Errorf("same chart gives %s and %s", da, db)
	}
}

func TestHelmChartArtifactSymlinks(t *testing.T) {
	newChart := func(t *testing.T) string {
		dir := filepath.Join(t.TempDir(), "linked")
		writeFile(t, filepath.Join(dir, "Chart.yaml"), "apiVersion: v2\nname: linked\nversion: 1.0.0\n")
		writeFile(t, filepath.Join(dir, "shared", "values.yaml"), "a: 1\n")
		return dir
	}

	t.Run("file link is stored as a copy", func(t *testing.T) {
		dir := newChart(t)
		symlink(t, "shared/values.yaml", filepath.Join(dir, "values.yaml"))
		img, err := imagebuild.HelmChartArtifact(dir)
		if err != nil {
			t.Fatal(err)
		}
		_, tgz := chartLayer(t, img)
		if got := regularFiles(readTgz(t, tgz))["linked/values.yaml"]; got != "a: 1\n" {
			t.Errorf("linked/values.yaml = %q, want the target's content", got)
		}
	})
	t.Run("directory link is refused", func(t *testing.T) {
		dir := newChart(t)
		symlink(t, "shared", filepath.Join(dir, "templates"))
		_, err := imagebuild.HelmChartArtifact(dir)
		assertErrorContains(t, err, `symlink "templates" points to the directory`)
	})
	t.Run("outside link is refused", func(t *testing.T) {
		dir := newChart(t)
		outside := filepath.Join(t.TempDir(), "x.yaml")
		writeFile(t, outside, "x: 1\n")
		symlink(t, outside, filepath.Join(dir, "templates", "x.yaml"))
		_, err := imagebuild.HelmChartArtifact(dir)
		assertErrorContains(t, err, `symlink "templates/x.yaml"`, "outside the directory")
	})
}

func TestHelmChartArtifactErrors(t *testing.T) {
	tmp := t.TempDir()
	noChart := filepath.Join(tmp, "no-chart")
	writeFile(t, filepath.Join(noChart, "values.yaml"), "a: 1\n")
	noVersion := filepath.Join(tmp, "no-version")
	writeFile(t, filepath.Join(noVersion, "Chart.yaml"), "apiVersion: v2\nname: x\n")
	badAPI := filepath.Join(tmp, "bad-api")
	writeFile(t, filepath.Join(badAPI, "Chart.yaml"), "apiVersion: v3\nname: x\nversion: 1.0.0\n")
	negated := filepath.Join(tmp, "negated")
	writeFile(t, filepath.Join(negated, "Chart.yaml"), "apiVersion: v2\nname: x\nversion: 1.0.0\n")
	writeFile(t, filepath.Join(negated, ".helmignore"), "*.txt\n!keep.txt\n")
	ignoresChart := filepath.Join(tmp, "ignores-chart")
	writeFile(t, filepath.Join(ignoresChart, "Chart.yaml"), "apiVersion: v2\nname: x\nversion: 1.0.0\n")
	writeFile(t, filepath.Join(ignoresChart, ".helmignore"), "*.yaml\n")
	notGzip := filepath.Join(tmp, "chart.tgz")
	writeFile(t, notGzip, "plain text")
	missing := filepath.Join(tmp, "absent")

	tests := []struct {
		name  string
		path  string
		wants []string
	}{
		{"missing", missing, []string{`helm chart "` + missing + `" not found`, "Chart.yaml"}},
		{"no Chart.yaml", noChart, []string{`helm chart "` + noChart + `": Chart.yaml not found`}},
		{"no version", noVersion, []string{"Chart.yaml has no version", "Helm needs apiVersion, name and version"}},
		{"bad apiVersion", badAPI, []string{`apiVersion "v3"`}},
		{"negated .helmignore", negated, []string{".helmignore line 2", `"!keep.txt"`, "helm package"}},
		{".helmignore drops Chart.yaml", ignoresChart, []string{"Chart.yaml is excluded by .helmignore"}},
		{"not a gzip archive", notGzip, []string{"not a gzip-compressed chart archive"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := imagebuild.HelmChartArtifact(tt.path)
			assertErrorContains(t, err, tt.wants...)
		})
	}
}
