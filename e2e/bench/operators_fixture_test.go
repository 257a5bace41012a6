package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

// benchFixture is what pushBenchOperators published: n packages, each with a bundle 1.0.0 and a
// bundle 1.1.0 that replaces it, and two catalog images: v0 (every package at 1.0.0 only) and v1
// (every package also has 1.1.0).
type benchFixture struct {
	prefix   string
	registry string
	n        int
}

func (f benchFixture) pkg(n int) string { return fmt.Sprintf("%s-%04d", f.prefix, n) }

// names are the packages of f, which are also the names of their Operators, in order.
func (f benchFixture) names() []string {
	out := make([]string, f.n)
	for i := range out {
		out[i] = f.pkg(i)
	}
	return out
}

func (f benchFixture) bundleRef(n int, version string) string {
	return f.registry + "/bundles/" + f.pkg(n) + ":" + version
}

func (f benchFixture) catalogRef(u int) string {
	return fmt.Sprintf("%s/catalogs/%s-index:v%d", f.registry, f.prefix, u)
}

// pushBenchOperators builds and pushes, for each of n packages, bundles 1.0.0 and 1.1.0: the
// example-operator bundle 0.1.0 with the package, CSV name and version rewritten, so every bundle
// is an image of its own (a few objects: its namespace, Deployment and what the CSV asks for). Then
// the catalog images v0 and v1. Four pushes run at once.
func pushBenchOperators(ctx context.Context, b *testing.B, prefix string, n int) benchFixture {
	b.Helper()
	fx := benchFixture{prefix: prefix, registry: olm.env.Registry.Addr, n: n}
	src := filepath.Join(repoRoot(), "e2e", "testdata", "example-operator", "bundles", "0.1.0")
	csv, err := os.ReadFile(filepath.Join(src, "manifests", "example-operator.clusterserviceversion.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	annotations, err := os.ReadFile(filepath.Join(src, "metadata", "annotations.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	tmp := b.TempDir()
	push := func(n int, version string) error {
		pkg := fx.pkg(n)
		dir := filepath.Join(tmp, pkg, version)
		r := strings.NewReplacer("example-operator-system", pkg, "example-operator", pkg, "0.1.0", version)
		files := map[string]string{
			filepath.Join("manifests", pkg+".clusterserviceversion.yaml"): r.Replace(string(csv)),
			filepath.Join("metadata", "annotations.yaml"):                 r.Replace(string(annotations)),
		}
		for name, content := range files {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				return err
			}
		}
		img, err := imagebuild.RegistryV1BundleImage(dir)
		if err != nil {
			return err
		}
		_, err = imagebuild.Push(ctx, img, fx.bundleRef(n, version), imagebuild.WithInsecure())
		return err
	}
	jobs := make(chan int)
	errs := make(chan error, 2*n)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				for _, v := range []string{"1.0.0", "1.1.0"} {
					if err := push(i, v); err != nil {
						errs <- fmt.Errorf("bundle %s %s: %w", fx.pkg(i), v, err)
					}
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	for u := 0; u <= 1; u++ {
		var fbc strings.Builder
		for i := 0; i < n; i++ {
			pkg := fx.pkg(i)
			fmt.Fprintf(&fbc, `{"schema":"olm.package","name":%q,"defaultChannel":"stable"}`+"\n", pkg)
			entries := fmt.Sprintf(`{"name":"%s.v1.0.0"}`, pkg)
			bundles := benchBundle(pkg, "1.0.0", fx.bundleRef(i, "1.0.0"))
			if u == 1 {
				entries += fmt.Sprintf(`,{"name":"%s.v1.1.0","replaces":"%s.v1.0.0"}`, pkg, pkg)
				bundles += benchBundle(pkg, "1.1.0", fx.bundleRef(i, "1.1.0"))
			}
			fmt.Fprintf(&fbc, `{"schema":"olm.channel","package":%q,"name":"stable","entries":[%s]}`+"\n", pkg, entries)
			fbc.WriteString(bundles)
		}
		dir := filepath.Join(tmp, fmt.Sprintf("catalog-v%d", u))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "catalog.json"), []byte(fbc.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		img, err := imagebuild.CatalogImage(dir)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := imagebuild.Push(ctx, img, fx.catalogRef(u), imagebuild.WithInsecure()); err != nil {
			b.Fatal(err)
		}
	}
	return fx
}

func benchBundle(pkg, version, image string) string {
	return fmt.Sprintf(`{"schema":"olm.bundle","package":%q,"name":"%s.v%s","image":%q,"properties":[`+
		`{"type":"olm.package","value":{"packageName":%q,"version":%q}},`+
		`{"type":"olm.csv.metadata","value":{"annotations":{"operatorframework.io/suggested-namespace":%q},"installModes":[{"type":"AllNamespaces","supported":true}]}}]}`+"\n",
		pkg, pkg, version, image, pkg, version, pkg)
}
