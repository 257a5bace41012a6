package suite

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/olmv1/olmv1/e2e/localcluster"
	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

// The operator fixtures: bundle and catalog images built in Go from e2e/testdata (or from FBC the spec
// writes) and pushed to the suite's local registry.

// exampleOperatorDir holds the example-operator bundles and catalogs (e2e/testdata/example-operator).
func exampleOperatorDir() string {
	return filepath.Join(env.repoRoot, "e2e", "testdata", "example-operator")
}

// pushExampleOperator pushes bundles 0.1.0 and 0.2.0 and the catalog images index:0.1.0 and
// index:0.2.0 (bundle references rewritten to the local registry) and returns the catalog refs and
// the bundle refs by version.
func pushExampleOperator(ctx context.Context, repo string) (catalogs, bundles map[string]string) {
	catalogs, bundles, err := localcluster.PushExampleOperator(ctx, env.repoRoot, env.registry.Addr, repo)
	Expect(err).NotTo(HaveOccurred())
	return catalogs, bundles
}

// pushCatalog builds a catalog image from one FBC file's content and pushes it as repo:tag.
func pushCatalog(ctx context.Context, fbc, repo, tag string) string {
	dir := GinkgoT().TempDir()
	Expect(os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(fbc), 0o644)).To(Succeed())
	img, err := imagebuild.CatalogImage(dir)
	Expect(err).NotTo(HaveOccurred())
	ref := env.registry.Addr + "/catalogs/" + repo + ":" + tag
	_, err = imagebuild.Push(ctx, img, ref, imagebuild.WithInsecure())
	Expect(err).NotTo(HaveOccurred())
	return ref
}

// pushBundleAs pushes the example-operator bundle of version v under another repository and tag.
func pushBundleAs(ctx context.Context, v, repoTag string) string {
	img, err := imagebuild.RegistryV1BundleImage(filepath.Join(exampleOperatorDir(), "bundles", v))
	Expect(err).NotTo(HaveOccurred())
	ref := env.registry.Addr + "/bundles/" + repoTag
	_, err = imagebuild.Push(ctx, img, ref, imagebuild.WithInsecure())
	Expect(err).NotTo(HaveOccurred())
	return ref
}

// pushGadgetOperator pushes every bundle of the gadget-operator stand-in package
// (e2e/testdata/gadget-operator) as <registry>/bundles/gadget-operator:<version> and its catalog, with
// the bundle references pointed at this registry, as <registry>/catalogs/gadget-index:v1. It returns
// the catalog ref and the bundle refs by version.
func pushGadgetOperator(ctx context.Context) (catalog string, bundles map[string]string) {
	dir := filepath.Join(env.repoRoot, "e2e", "testdata", "gadget-operator")
	entries, err := os.ReadDir(filepath.Join(dir, "bundles"))
	Expect(err).NotTo(HaveOccurred())
	bundles = map[string]string{}
	for _, e := range entries {
		img, err := imagebuild.RegistryV1BundleImage(filepath.Join(dir, "bundles", e.Name()))
		Expect(err).NotTo(HaveOccurred())
		bundles[e.Name()] = env.registry.Addr + "/bundles/gadget-operator:" + e.Name()
		_, err = imagebuild.Push(ctx, img, bundles[e.Name()], imagebuild.WithInsecure())
		Expect(err).NotTo(HaveOccurred())
	}
	fbc, err := os.ReadFile(filepath.Join(dir, "catalog", "catalog.yaml"))
	Expect(err).NotTo(HaveOccurred())
	return pushCatalog(ctx, strings.ReplaceAll(string(fbc), "registry.invalid", env.registry.Addr), "gadget-index", "v1"), bundles
}

// pushCompositeOperator pushes the composite fixture's bundles (e2e/testdata/composite-operator:
// alpha-operator 1.0.0, beta-operator 1.0.0, hub-operator 1.0.0 and 1.1.0) as
// <registry>/<repo>/<package>:<version>, and a catalog of them, built with kubectl olmv1 catalog
// add-bundle, as catalogRef.
func pushCompositeOperator(ctx context.Context, repo, catalogRef string) {
	fixture := filepath.Join(env.repoRoot, "e2e", "testdata", "composite-operator", "bundles")
	catalogDir := GinkgoT().TempDir()
	for _, b := range []string{"alpha-operator/1.0.0", "beta-operator/1.0.0", "hub-operator/1.0.0", "hub-operator/1.1.0"} {
		img, err := imagebuild.RegistryV1BundleImage(filepath.Join(fixture, b))
		Expect(err).NotTo(HaveOccurred())
		ref := env.registry.Addr + "/" + repo + "/" + strings.Replace(b, "/", ":", 1)
		_, err = imagebuild.Push(ctx, img, ref, imagebuild.WithInsecure())
		Expect(err).NotTo(HaveOccurred())
		mustKubectlOLMv1(ctx, "catalog", "add-bundle", catalogDir, filepath.Join(fixture, b), "--image", ref)
	}
	mustKubectlOLMv1(ctx, "catalog", "push", catalogDir, catalogRef, "--insecure")
}
