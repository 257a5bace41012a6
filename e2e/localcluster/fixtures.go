package localcluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

// ExampleOperatorVersions are the bundle versions of the example-operator fixture
// (e2e/testdata/example-operator), each with a catalog "index-<version>".
var ExampleOperatorVersions = []string{"0.1.0", "0.2.0"}

// PushExampleOperator builds the example-operator fixture's bundle images and catalog images in Go and
// pushes them to the registry at registryAddr: bundles as <addr>/bundles/example-operator:<version>,
// catalogs as <addr>/catalogs/<catalogRepo>:<version> with their bundle references pointed at the
// pushed bundles. It returns the catalog and bundle references by version.
func PushExampleOperator(ctx context.Context, repoRoot, registryAddr, catalogRepo string) (catalogs, bundles map[string]string, err error) {
	return PushExampleOperatorTo(ctx, repoRoot, registryAddr, registryAddr, catalogRepo)
}

// PushExampleOperatorTo is PushExampleOperator for a registry that the cluster reaches at another
// address than this program (a real-node cluster, see Registry.ClusterAddr): it pushes to pushAddr and
// names refAddr in the catalogs and in the references it returns.
func PushExampleOperatorTo(ctx context.Context, repoRoot, pushAddr, refAddr, catalogRepo string) (catalogs, bundles map[string]string, err error) {
	dir := filepath.Join(repoRoot, "e2e", "testdata", "example-operator")
	catalogs, bundles = map[string]string{}, map[string]string{}
	tmp, err := os.MkdirTemp("", "example-operator-catalog-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmp)
	for _, v := range ExampleOperatorVersions {
		img, err := imagebuild.RegistryV1BundleImage(filepath.Join(dir, "bundles", v))
		if err != nil {
			return nil, nil, err
		}
		bundles[v] = refAddr + "/bundles/example-operator:" + v
		if _, err := imagebuild.Push(ctx, img, pushAddr+"/bundles/example-operator:"+v, imagebuild.WithInsecure()); err != nil {
			return nil, nil, err
		}
		fbc, err := os.ReadFile(filepath.Join(dir, "catalogs", "index-"+v, "catalog.yaml"))
		if err != nil {
			return nil, nil, err
		}
		catDir := filepath.Join(tmp, v)
		if err := os.MkdirAll(catDir, 0o755); err != nil {
			return nil, nil, err
		}
		// The fixture names its bundle images registry.invalid/...; point them at this registry.
		content := strings.ReplaceAll(string(fbc), "registry.invalid", refAddr)
		if err := os.WriteFile(filepath.Join(catDir, "catalog.yaml"), []byte(content), 0o644); err != nil {
			return nil, nil, err
		}
		cimg, err := imagebuild.CatalogImage(catDir)
		if err != nil {
			return nil, nil, err
		}
		catalogs[v] = refAddr + "/catalogs/" + catalogRepo + ":" + v
		if _, err := imagebuild.Push(ctx, cimg, pushAddr+"/catalogs/"+catalogRepo+":"+v, imagebuild.WithInsecure()); err != nil {
			return nil, nil, err
		}
	}
	return catalogs, bundles, nil
}
