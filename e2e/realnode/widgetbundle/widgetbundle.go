// Package widgetbundle builds everything the real-node e2e tier needs to install widget-operator
// (e2e/realnode/widgetoperator) through OLM v1, in Go and without Docker: the operator's container
// image, its registry+v1 bundles and file-based catalogs, pushed to an OCI registry.
//
// Build compiles the operator once and pushes, for every version of Versions:
//
//   - the operator image to <PushAddr>/widget-operator:<version> (one binary, so every version has
//     the same digest; the versions differ by the CSV and by the environment variable
//     WIDGET_OPERATOR_VERSION of its Deployment, so an upgrade replaces the pod);
//   - the bundle to <PushAddr>/bundles/widget-operator:<version>;
//
// and the catalogs <PushAddr>/catalogs/widget-operator:v1 (1.0.0 only) and :v2 (1.0.0 and 1.1.0,
// which replaces 1.0.0). Every reference it returns, and every image reference written into the
// CSVs and catalogs, names the registry as the cluster reaches it (ClusterAddr) and the pushed
// digest.
//
// RenderBundle and RenderCatalog are the pure parts: they write the bundle and catalog directories
// and do no network access.
package widgetbundle

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/olmv1/olmv1/e2e/chart/images"
	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

// The package widget-operator is published as.
const (
	Package = "widget-operator"
	Channel = "stable"
	// OperatorRepository, BundleRepository and CatalogRepository are the repository paths, under
	// the registry address, of the images Build pushes.
	OperatorRepository = "widget-operator"
	BundleRepository   = "bundles/widget-operator"
	CatalogRepository  = "catalogs/widget-operator"
	// OperatorPackage is the Go package of the operator, relative to the e2e module.
	OperatorPackage = "./realnode/widgetoperator"
)

// Versions are the versions Build publishes, oldest first; each replaces the one before it.
var Versions = []string{"1.0.0", "1.1.0"}

// CatalogVersions maps each catalog Build publishes (its tag) to the bundle versions it holds.
var CatalogVersions = map[string][]string{
	"v1": {"1.0.0"},
	"v2": {"1.0.0", "1.1.0"},
}

// Options of Build.
type Options struct {
	// E2ERoot is the e2e module directory; the operator is built there with `go build`.
	E2ERoot string
	// PushAddr is the host:port of the registry to push to, over plain HTTP (e.g. 127.0.0.1:40000).
	PushAddr string
	// ClusterAddr is the host:port the cluster pulls the same registry from (e.g. 10.201.0.1:5000);
	// it is written into the CSVs' image fields and the catalogs' bundle references. Empty means
	// PushAddr.
	ClusterAddr string
	// WorkDir receives the operator binary and the rendered bundles and catalogs (WorkDir/bundles/<version>,
	// WorkDir/catalogs/<tag>). Empty means a temporary directory, removed when Build returns.
	WorkDir string
}

// Fixture is what Build published. Every reference is ClusterAddr/<repository>@sha256:<digest>.
type Fixture struct {
	// Versions are the bundle versions, oldest first ("1.0.0", "1.1.0").
	Versions []string
	// OperatorImages maps each version to the operator image its CSV runs.
	OperatorImages map[string]string
	// Bundles maps each version to its bundle image.
	Bundles map[string]string
	// Catalogs maps "v1" to the catalog holding 1.0.0 and "v2" to the one holding 1.0.0 and 1.1.0.
	Catalogs map[string]string
	// Package and Channel are "widget-operator" and "stable".
	Package, Channel string
}

// Build compiles widget-operator, builds its image, bundles and catalogs, and pushes them to
// o.PushAddr (see the package documentation for what goes where).
func Build(ctx context.Context, o Options) (*Fixture, error) {
	if err := o.complete(); err != nil {
		return nil, err
	}
	if o.E2ERoot == "" {
		return nil, fmt.Errorf("widgetbundle: Options.E2ERoot is empty (set it to the e2e module directory, where `go build %s` runs)", OperatorPackage)
	}
	if o.WorkDir == "" {
		dir, err := os.MkdirTemp("", "widget-operator-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		o.WorkDir = dir
	}
	bin := filepath.Join(o.WorkDir, "widget-operator")
	if err := BuildBinary(ctx, o.E2ERoot, bin); err != nil {
		return nil, err
	}
	img, err := images.Build("widget-operator", bin, images.Options{})
	if err != nil {
		return nil, fmt.Errorf("building the widget-operator image: %w", err)
	}

	f := &Fixture{Versions: append([]string(nil), Versions...), OperatorImages: map[string]string{},
		Bundles: map[string]string{}, Catalogs: map[string]string{}, Package: Package, Channel: Channel}
	for _, v := range Versions {
		ref, err := o.push(ctx, img, OperatorRepository, v)
		if err != nil {
			return nil, err
		}
		f.OperatorImages[v] = ref
		dir := filepath.Join(o.WorkDir, "bundles", v)
		if err := RenderBundle(dir, v, ref); err != nil {
			return nil, err
		}
		if f.Bundles[v], err = o.PushBundle(ctx, dir, v); err != nil {
			return nil, err
		}
	}
	for tag, versions := range CatalogVersions {
		var bundles []CatalogBundle
		for _, v := range versions {
			bundles = append(bundles, CatalogBundle{Version: v, Image: f.Bundles[v]})
		}
		dir := filepath.Join(o.WorkDir, "catalogs", tag)
		if err := RenderCatalog(dir, bundles); err != nil {
			return nil, err
		}
		if f.Catalogs[tag], err = o.PushCatalog(ctx, dir, tag); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// BuildBinary compiles the operator into out: `go build -trimpath` of OperatorPackage in the e2e
// module at e2eRoot, static (CGO_ENABLED=0), for linux on this machine's architecture (the
// architecture images.Build writes into the image).
func BuildBinary(ctx context.Context, e2eRoot, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", out, OperatorPackage)
	cmd.Dir = e2eRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building widget-operator (cd %s && CGO_ENABLED=0 go build -trimpath -o %s %s): %w\n%s",
			e2eRoot, out, OperatorPackage, err, strings.TrimSpace(string(output)))
	}
	return nil
}

// PushBundle builds the registry+v1 bundle image of dir (see RenderBundle), pushes it to
// <PushAddr>/bundles/widget-operator:<tag> and returns its reference at ClusterAddr, by digest.
func (o Options) PushBundle(ctx context.Context, dir, tag string) (string, error) {
	if err := o.complete(); err != nil {
		return "", err
	}
	img, err := imagebuild.RegistryV1BundleImage(dir)
	if err != nil {
		return "", fmt.Errorf("building the widget-operator bundle image: %w", err)
	}
	return o.push(ctx, img, BundleRepository, tag)
}

// PushCatalog builds the catalog image of dir (see RenderCatalog), pushes it to
// <PushAddr>/catalogs/widget-operator:<tag> and returns its reference at ClusterAddr, by digest.
func (o Options) PushCatalog(ctx context.Context, dir, tag string) (string, error) {
	if err := o.complete(); err != nil {
		return "", err
	}
	img, err := imagebuild.CatalogImage(dir)
	if err != nil {
		return "", fmt.Errorf("building the widget-operator catalog image: %w", err)
	}
	return o.push(ctx, img, CatalogRepository, tag)
}

// complete checks the options and fills in ClusterAddr.
func (o *Options) complete() error {
	if o.PushAddr == "" {
		return fmt.Errorf("widgetbundle: Options.PushAddr is empty (set it to the host:port of the registry to push to, e.g. 127.0.0.1:40000)")
	}
	if o.ClusterAddr == "" {
		o.ClusterAddr = o.PushAddr
	}
	return nil
}

// push pushes img to PushAddr/repository:tag and returns ClusterAddr/repository@digest.
func (o Options) push(ctx context.Context, img v1.Image, repository, tag string) (string, error) {
	ref := fmt.Sprintf("%s/%s:%s", o.PushAddr, repository, tag)
	d, err := imagebuild.Push(ctx, img, ref, imagebuild.WithInsecure())
	if err != nil {
		return "", fmt.Errorf("pushing %s (is a registry listening on %s?): %w", ref, o.PushAddr, err)
	}
	return rehost(d, o.ClusterAddr), nil
}

// rehost names the image of d in the registry at addr: addr/<repository>@<digest>.
func rehost(d name.Digest, addr string) string {
	return addr + "/" + d.Context().RepositoryStr() + "@" + d.DigestStr()
}
