package imagebuild_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

// realTestdata returns the shared test data directory (env OLMV1_TESTDATA, by default
// ../../../../shared/testdata from this package), or skips the test when it is absent.
func realTestdata(t *testing.T, sub string) string {
	t.Helper()
	root := os.Getenv("OLMV1_TESTDATA")
	if root == "" {
		root = filepath.Join("..", "..", "..", "..", "shared", "testdata")
	}
	dir := filepath.Join(root, filepath.FromSlash(sub))
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("real test data %s not present (%v); set OLMV1_TESTDATA to the shared testdata directory to run this test", dir, err)
	}
	return dir
}

func TestRealTestdata(t *testing.T) {
	t.Run("strimzi registry+v1 bundle", func(t *testing.T) {
		dir := realTestdata(t, "bundles/strimzi-kafka-operator/0.35.0")
		host := startRegistry(t)
		img, err := imagebuild.RegistryV1BundleImage(dir)
		if err != nil {
			t.Fatal(err)
		}
		again, err := imagebuild.RegistryV1BundleImage(dir)
		if err != nil {
			t.Fatal(err)
		}
		if digestOf(t, img) != digestOf(t, again) {
			t.Error("two builds differ")
		}
		pulled := pushAndPull(t, img, host, "bundles/strimzi-kafka-operator:v0.35.0")
		cfg, err := pulled.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.Config.Labels["operators.operatorframework.io.bundle.package.v1"]; got != "strimzi-kafka-operator" {
			t.Errorf("package label %q, want strimzi-kafka-operator", got)
		}
		files := regularFiles(singleLayer(t, pulled))
		assertSameFiles(t, files, dirFiles(t, dir, ""))
		if _, ok := files["manifests/strimzi-cluster-operator.v0.35.0.clusterserviceversion.yaml"]; !ok {
			t.Error("the CSV is missing")
		}
	})

	t.Run("podinfo helm chart", func(t *testing.T) {
		dir := realTestdata(t, "helm/podinfo")
		host := startRegistry(t)
		img, err := imagebuild.HelmChartArtifact(dir)
		if err != nil {
			t.Fatal(err)
		}
		pulled := pushAndPull(t, img, host, "charts/podinfo:6.14.1")
		cfg, tgz := chartLayer(t, pulled)
		if cfg["name"] != "podinfo" || cfg["version"] != "6.14.1" || cfg["kubeVersion"] != ">=1.23.0-0" {
			t.Errorf("config %v, want podinfo 6.14.1 with kubeVersion >=1.23.0-0", cfg)
		}
		files := regularFiles(readTgz(t, tgz))
		// podinfo's .helmignore names nothing that is in the directory, so every file is packaged.
		assertSameFiles(t, files, dirFiles(t, dir, "podinfo/"))
		for name := range files {
			if !strings.HasPrefix(name, "podinfo/") {
				t.Errorf("%s is not under podinfo/", name)
			}
		}
	})
}
