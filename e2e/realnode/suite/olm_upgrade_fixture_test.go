package suite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/olmv1/olmv1/e2e/chart/images"
	"github.com/olmv1/olmv1/e2e/localcluster"
	"github.com/olmv1/olmv1/e2e/realnode/widgetbundle"
	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

// upgradeCatalog is the name of the OLM upgrade spec's Catalog.
const upgradeCatalog = "olm-upgrade"

// upgradeCatalogRepository is where the OLM upgrade spec pushes its catalog (tags v1 and v2).
const upgradeCatalogRepository = "catalogs/olm-upgrade"

// idlePackages are the two operators beside widget-operator in the OLM upgrade spec's catalog: a
// Deployment whose container runs the node's pause program (it waits for SIGTERM), pulled from the
// suite's registry, so that their pods really run and stay Ready without costing CPU.
var idlePackages = []string{"idle-one", "idle-two"}

// upgradeOperator is one Operator the OLM upgrade spec installs: its package and the namespace and
// name of the Deployment its bundle runs.
type upgradeOperator struct {
	pkg, namespace, deployment string
}

// upgradeOperators are the three Operators of the OLM upgrade spec.
func upgradeOperators() []upgradeOperator {
	ops := []upgradeOperator{{widgetbundle.Package, widgetbundle.SuggestedNamespace, "widget-operator"}}
	for _, p := range idlePackages {
		ops = append(ops, upgradeOperator{p, p + "-system", "idle"})
	}
	return ops
}

// upgradeFixture is what buildUpgradeCatalogs pushed: widget-operator's fixture, the catalog entries
// of the idle operators, and the catalog's references by tag.
type upgradeFixture struct {
	widget   *widgetbundle.Fixture
	idleFBC  string
	catalogs map[string]string
}

// buildUpgradeCatalogs pushes widget-operator's images and bundles, the pause image, the idle bundles
// and the spec's catalog at two tags: v1 (widget-operator 1.0.0 and the idle operators 1.0.0) and v2
// (the same and widget-operator 1.1.0).
func buildUpgradeCatalogs(ctx context.Context) (*upgradeFixture, error) {
	fix, err := widgetbundle.Build(ctx, widgetbundle.Options{
		E2ERoot: filepath.Join(env.repoRoot, "e2e"), PushAddr: env.registry.Addr, ClusterAddr: env.registry.ClusterAddr,
	})
	if err != nil {
		return nil, err
	}
	_, nodeBins, err := localcluster.CachedNodeBinaries(localcluster.DefaultCacheDir())
	if err != nil {
		return nil, fmt.Errorf("the idle operators run the node's pause program (`make node-binaries`): %w", err)
	}
	pause, err := images.Build("pause", nodeBins.Pause, images.Options{})
	if err != nil {
		return nil, err
	}
	d, err := images.Push(ctx, pause, env.registry.Addr+"/idle/pause:v1", true)
	if err != nil {
		return nil, err
	}
	pauseRef := env.registry.ClusterAddr + "/" + d.Context().RepositoryStr() + "@" + d.DigestStr()

	work, err := os.MkdirTemp("", "olm-upgrade-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	f := &upgradeFixture{widget: fix, catalogs: map[string]string{}}
	var idleFBC strings.Builder
	for _, p := range idlePackages {
		dir := filepath.Join(work, "bundles", p)
		if err := writeIdleBundle(dir, p, pauseRef); err != nil {
			return nil, err
		}
		img, err := imagebuild.RegistryV1BundleImage(dir)
		if err != nil {
			return nil, err
		}
		bd, err := imagebuild.Push(ctx, img, env.registry.Addr+"/bundles/"+p+":1.0.0", imagebuild.WithInsecure())
		if err != nil {
			return nil, err
		}
		bundleRef := env.registry.ClusterAddr + "/" + bd.Context().RepositoryStr() + "@" + bd.DigestStr()
		fmt.Fprintf(&idleFBC, idleFBCTemplate, p, bundleRef)
	}
	f.idleFBC = idleFBC.String()
	for tag, versions := range widgetbundle.CatalogVersions {
		var bundles []widgetbundle.CatalogBundle
		for _, v := range versions {
			bundles = append(bundles, widgetbundle.CatalogBundle{Version: v, Image: fix.Bundles[v]})
		}
		if f.catalogs[tag], err = f.pushCatalog(ctx, tag, bundles); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// pushCatalog pushes the spec's catalog at tag: the widget-operator bundles given, in their upgrade
// order, and the idle operators. It returns its reference as the cluster pulls it.
func (f *upgradeFixture) pushCatalog(ctx context.Context, tag string, widgets []widgetbundle.CatalogBundle) (string, error) {
	dir, err := os.MkdirTemp("", "olm-upgrade-catalog-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	if err := widgetbundle.RenderCatalog(dir, widgets); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "idle.yaml"), []byte(f.idleFBC), 0o644); err != nil {
		return "", err
	}
	img, err := imagebuild.CatalogImage(dir)
	if err != nil {
		return "", err
	}
	cd, err := imagebuild.Push(ctx, img, env.registry.Addr+"/"+upgradeCatalogRepository+":"+tag, imagebuild.WithInsecure())
	if err != nil {
		return "", err
	}
	return env.registry.ClusterAddr + "/" + cd.Context().RepositoryStr() + "@" + cd.DigestStr(), nil
}

// pushPreviousImages pushes the controller images an earlier build left in dir (<name>.tar, written
// by its `make images`) to the suite's registry under repository path and returns their digests.
func pushPreviousImages(ctx context.Context, dir, path string) (map[string]string, error) {
	digests := map[string]string{}
	for _, n := range images.Names {
		img, err := tarball.ImageFromPath(filepath.Join(dir, n+".tar"), nil)
		if err != nil {
			return nil, fmt.Errorf("reading the earlier build's image %s (rebuild it: make olm-upgrade-prev): %w", n, err)
		}
		d, err := images.Push(ctx, img, images.Ref(env.registry.Addr+"/"+path, n, "prev"), true)
		if err != nil {
			return nil, err
		}
		digests[n] = d.DigestStr()
	}
	return digests, nil
}

// writeIdleBundle writes the registry+v1 bundle of idle operator pkg 1.0.0 into dir: a CSV whose one
// Deployment "idle" runs image as a ServiceAccount with one harmless rule, and its annotations.
func writeIdleBundle(dir, pkg, image string) error {
	files := map[string]string{
		"manifests/" + pkg + ".clusterserviceversion.yaml": fmt.Sprintf(idleCSVTemplate, pkg, image),
		"metadata/annotations.yaml":                        fmt.Sprintf(idleAnnotationsTemplate, pkg),
	}
	for rel, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

const idleAnnotationsTemplate = `annotations:
  operators.operatorframework.io.bundle.mediatype.v1: registry+v1
  operators.operatorframework.io.bundle.manifests.v1: manifests/
  operators.operatorframework.io.bundle.metadata.v1: metadata/
  operators.operatorframework.io.bundle.package.v1: %s
  operators.operatorframework.io.bundle.channels.v1: stable
  operators.operatorframework.io.bundle.channel.default.v1: stable
`

const idleCSVTemplate = `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: %[1]s.v1.0.0
  annotations:
    operatorframework.io/suggested-namespace: %[1]s-system
spec:
  displayName: %[1]s
  description: An operator that does nothing, for the OLM upgrade e2e spec.
  version: 1.0.0
  installModes:
    - {type: OwnNamespace, supported: false}
    - {type: SingleNamespace, supported: false}
    - {type: MultiNamespace, supported: false}
    - {type: AllNamespaces, supported: true}
  install:
    strategy: deployment
    spec:
      clusterPermissions:
        - serviceAccountName: idle
          rules:
            - apiGroups: [""]
              resources: [configmaps]
              verbs: [get]
      deployments:
        - name: idle
          spec:
            replicas: 1
            selector:
              matchLabels:
                app.kubernetes.io/name: %[1]s
            template:
              metadata:
                labels:
                  app.kubernetes.io/name: %[1]s
              spec:
                serviceAccountName: idle
                terminationGracePeriodSeconds: 2
                securityContext:
                  runAsNonRoot: true
                containers:
                  - name: idle
                    image: %[2]q
                    imagePullPolicy: IfNotPresent
                    resources:
                      requests: {cpu: 1m, memory: 8Mi}
                      limits: {memory: 32Mi}
                    securityContext:
                      readOnlyRootFilesystem: true
                      allowPrivilegeEscalation: false
                      capabilities:
                        drop: [ALL]
`

const idleFBCTemplate = `---
schema: olm.package
name: %[1]s
defaultChannel: stable
---
schema: olm.channel
package: %[1]s
name: stable
entries:
  - name: %[1]s.v1.0.0
---
schema: olm.bundle
package: %[1]s
name: %[1]s.v1.0.0
image: %[2]s
properties:
  - type: olm.package
    value: {packageName: %[1]s, version: 1.0.0}
  - type: olm.csv.metadata
    value:
      annotations: {operatorframework.io/suggested-namespace: %[1]s-system}
      installModes: [{type: AllNamespaces, supported: true}]
`
