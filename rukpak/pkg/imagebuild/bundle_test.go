package imagebuild_test

import (
	"maps"
	"os"
	"path/filepath"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

const (
	registryV1Fixture = "testdata/registryv1"
	plainFixture      = "testdata/plain"
)

func TestRegistryV1BundleImage(t *testing.T) {
	host := startRegistry(t)
	img, err := imagebuild.RegistryV1BundleImage(registryV1Fixture)
	if err != nil {
		t.Fatal(err)
	}
	pulled := pushAndPull(t, img, host, "bundles/widget-operator:v0.1.0")

	m, err := pulled.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON {
		t.Errorf("manifest %q with config %q, want an OCI image", m.MediaType, m.Config.MediaType)
	}
	cfg, err := pulled.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{
		"operators.operatorframework.io.bundle.mediatype.v1":       "registry+v1",
		"operators.operatorframework.io.bundle.manifests.v1":       "manifests/",
		"operators.operatorframework.io.bundle.metadata.v1":        "metadata/",
		"operators.operatorframework.io.bundle.package.v1":         "widget-operator",
		"operators.operatorframework.io.bundle.channels.v1":        "stable",
		"operators.operatorframework.io.bundle.channel.default.v1": "stable",
	}
	if !maps.Equal(cfg.Config.Labels, wantLabels) {
		t.Errorf("labels %v, want %v", cfg.Config.Labels, wantLabels)
	}

	entries := singleLayer(t, pulled)
	for _, dir := range []string{"manifests/", "metadata/"} {
		if _, ok := entries[dir]; !ok {
			t.Errorf("missing directory entry %s", dir)
		}
	}
	assertSameFiles(t, regularFiles(entries), dirFiles(t, registryV1Fixture, ""))
	if _, ok := entries["manifests/widget-operator.v0.1.0.clusterserviceversion.yaml"]; !ok {
		t.Error("the CSV is not at /manifests/widget-operator.v0.1.0.clusterserviceversion.yaml")
	}
}

func TestPlainBundleImage(t *testing.T) {
	host := startRegistry(t)
	img, err := imagebuild.PlainBundleImage(plainFixture)
	if err != nil {
		t.Fatal(err)
	}
	pulled := pushAndPull(t, img, host, "bundles/plain-demo:v1")
	cfg, err := pulled.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Config.Labels) != 0 {
		t.Errorf("labels %v, want none", cfg.Config.Labels)
	}
	entries := singleLayer(t, pulled)
	assertSameFiles(t, regularFiles(entries), map[string]string{
		"manifests/configmap.yaml": dirFiles(t, plainFixture, "")["manifests/configmap.yaml"],
	})
}

func TestBundleImagesAreDeterministic(t *testing.T) {
	for _, tt := range []struct {
		name    string
		fixture string
		build   func(string) (v1.Image, error)
	}{
		{"registry+v1", registryV1Fixture, imagebuild.RegistryV1BundleImage},
		{"plain", plainFixture, imagebuild.PlainBundleImage},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, err := tt.build(tt.fixture)
			if err != nil {
				t.Fatal(err)
			}
			b, err := tt.build(copyTree(t, tt.fixture))
			if err != nil {
				t.Fatal(err)
			}
			if da, db := digestOf(t, a), digestOf(t, b); da != db {
				t.Errorf("same content gives %s and %s", da, db)
			}
		})
	}
}

func TestBundleImageErrors(t *testing.T) {
	tmp := t.TempDir()
	onlyManifests := filepath.Join(tmp, "only-manifests")
	writeFile(t, filepath.Join(onlyManifests, "manifests", "csv.yaml"), "kind: ClusterServiceVersion")
	onlyMetadata := filepath.Join(tmp, "only-metadata")
	writeFile(t, filepath.Join(onlyMetadata, "metadata", "annotations.yaml"), "annotations: {a: b}")
	emptyDir := filepath.Join(tmp, "empty")
	writeFile(t, filepath.Join(emptyDir, "README.md"), "nothing here")
	emptyManifests := filepath.Join(tmp, "empty-manifests")
	writeFile(t, filepath.Join(emptyManifests, "metadata", "annotations.yaml"), "annotations: {a: b}")
	if err := os.MkdirAll(filepath.Join(emptyManifests, "manifests", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	wrongType := filepath.Join(tmp, "wrong-type")
	writeFile(t, filepath.Join(wrongType, "manifests", "cm.yaml"), "kind: ConfigMap")
	writeFile(t, filepath.Join(wrongType, "metadata", "annotations.yaml"),
		"annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: plain+v0\n")
	noAnnotations := filepath.Join(tmp, "no-annotations")
	writeFile(t, filepath.Join(noAnnotations, "manifests", "cm.yaml"), "kind: ConfigMap")
	writeFile(t, filepath.Join(noAnnotations, "metadata", "annotations.yaml"), "labels: {}\n")
	badAnnotations := filepath.Join(tmp, "bad-annotations")
	writeFile(t, filepath.Join(badAnnotations, "manifests", "cm.yaml"), "kind: ConfigMap")
	writeFile(t, filepath.Join(badAnnotations, "metadata", "annotations.yaml"), "annotations: [1, 2]\n")
	missing := filepath.Join(tmp, "absent")

	registryV1, plain := imagebuild.RegistryV1BundleImage, imagebuild.PlainBundleImage
	const needRegistry = "(a registry+v1 bundle needs manifests/ and metadata/annotations.yaml)"
	tests := []struct {
		name  string
		build func(string) (v1.Image, error)
		dir   string
		wants []string
	}{
		{"registry+v1 missing dir", registryV1, missing, []string{`bundle directory "` + missing + `" not found`, needRegistry}},
		{"registry+v1 missing annotations", registryV1, onlyManifests,
			[]string{`bundle directory "` + onlyManifests + `": metadata/annotations.yaml not found ` + needRegistry}},
		{"registry+v1 missing manifests", registryV1, onlyMetadata, []string{`: manifests/ not found`, needRegistry}},
		{"registry+v1 missing both", registryV1, emptyDir, []string{`manifests/ and metadata/annotations.yaml not found`}},
		{"registry+v1 empty manifests", registryV1, emptyManifests, []string{"manifests/ is empty"}},
		{"registry+v1 wrong media type", registryV1, wrongType, []string{`"plain+v0"`, "PlainBundleImage"}},
		{"registry+v1 no annotations map", registryV1, noAnnotations, []string{"has no `annotations:` map"}},
		{"registry+v1 annotations not a map", registryV1, badAnnotations, []string{"metadata/annotations.yaml", "map of string keys to string values"}},
		{"plain missing dir", plain, missing, []string{"not found", "a plain bundle needs a manifests/ directory"}},
		{"plain missing manifests", plain, onlyMetadata, []string{`bundle directory "` + onlyMetadata + `": manifests/ not found`}},
		{"plain empty manifests", plain, emptyManifests, []string{"manifests/ is empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.build(tt.dir)
			assertErrorContains(t, err, tt.wants...)
		})
	}
}
