// Package bundlerender renders a bundle directory into exactly the objects rukpak would apply for a
// BundleDeployment of it — `helm template` for operators. It runs the provisioners' own code
// (plain, registry+v1, Helm, kustomize) and the apply engine's own preparation (owner labels,
// namespaces, apply order).
//
// What rukpak reads from the cluster before it renders (the Secrets and ConfigMaps helm valuesFrom
// names, the cluster's version and API versions, the scope of kinds the bundle does not define) is
// gathered the same way from Options.Cluster. Without it the render is offline: valuesFrom is
// refused, Helm sees its default capabilities, and kinds the bundle does not define are scoped by a
// built-in table of Kubernetes' cluster-scoped kinds, everything else being treated as namespaced.
package bundlerender

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/olmv1/olmv1/platform/pki"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/apply"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/certs"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/helm"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/kustomize"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/manifest"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/plain"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner/registryv1"
	"github.com/olmv1/olmv1/rukpak/pkg/bundlevalidate"
)

// Certificate providers for registry+v1 webhooks, as the CLI names them.
const (
	CertManager        = "certManager"
	SelfSigned         = "selfSigned"
	OpenShiftServiceCA = "openshiftServiceCA"
)

// Options are what a BundleDeployment of the bundle would say.
type Options struct {
	// Name is the BundleDeployment's name (the owner label value). Default "bundle".
	Name string
	// InstallNamespace is spec.installNamespace. Required.
	InstallNamespace string
	// Provisioner is spec.provisionerClassName; empty detects it from the directory: registry+v1
	// (metadata/annotations.yaml or a CSV in manifests/), Helm (Chart.yaml at the root), kustomize
	// (a kustomization at the root or at Config.Path), else plain.
	Provisioner rukpakv1alpha1.ProvisionerClassName
	// Config is spec.config (watchNamespaces, deploymentConfig, values, path). valuesFrom is read
	// from Cluster.Reader, and refused without one.
	Config *rukpakv1alpha1.BundleConfig
	// CertProvider is the registry+v1 webhook certificate provider: certManager (default),
	// selfSigned (a throwaway CA, so certificates differ on every run) or openshiftServiceCA.
	CertProvider string
	// Cluster, when set, is read as rukpak reads its cluster before rendering; nil renders offline.
	Cluster *Cluster
}

// Cluster is what a render may read from a cluster, each part optional.
type Cluster struct {
	// Reader reads the Secrets and ConfigMaps config.valuesFrom names, in the install namespace.
	Reader client.Reader
	// Mapper tells the scope of the kinds the cluster serves (e.g. a client's RESTMapper()).
	Mapper meta.RESTMapper
	// Discovery gives Helm's .Capabilities: the cluster's version and served API versions.
	Discovery discovery.DiscoveryInterface
}

// gatherer reads c as rukpak's controller reads its cluster (nil: nothing).
func (c *Cluster) gatherer() *provisioner.Gatherer {
	if c == nil {
		return nil
	}
	g := &provisioner.Gatherer{Values: c.Reader, Mapper: c.Mapper}
	if c.Discovery != nil {
		g.Capabilities = provisioner.DiscoveryCapabilities(c.Discovery, 0)
	}
	return g
}

// Result is the rendered bundle.
type Result struct {
	// Provisioner is the provisioner used.
	Provisioner rukpakv1alpha1.ProvisionerClassName
	// Description is what the provisioner chose (the registry+v1 install mode), or empty.
	Description string
	// Objects are what rukpak would apply, in apply order.
	Objects []*unstructured.Unstructured
}

// Detect names the provisioner for the bundle in dir (see Options.Provisioner).
func Detect(dir string, cfg *rukpakv1alpha1.BundleConfig) rukpakv1alpha1.ProvisionerClassName {
	if bundlevalidate.DetectFormat(dir) == bundlevalidate.FormatRegistryV1 {
		return rukpakv1alpha1.ProvisionerRegistry
	}
	if exists(filepath.Join(dir, "Chart.yaml")) {
		return rukpakv1alpha1.ProvisionerHelm
	}
	kdir := dir
	if cfg != nil && cfg.Path != "" {
		kdir = filepath.Join(dir, filepath.FromSlash(cfg.Path))
	}
	for _, n := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		if exists(filepath.Join(kdir, n)) {
			return rukpakv1alpha1.ProvisionerKustomize
		}
	}
	return rukpakv1alpha1.ProvisionerPlain
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Render renders the bundle in dir as a BundleDeployment with o would.
func Render(ctx context.Context, dir string, o Options) (*Result, error) {
	if o.InstallNamespace == "" {
		return nil, fmt.Errorf("an install namespace is required (a BundleDeployment's spec.installNamespace)")
	}
	if o.Name == "" {
		o.Name = "bundle"
	}
	if o.Config != nil && len(o.Config.ValuesFrom) > 0 && (o.Cluster == nil || o.Cluster.Reader == nil) {
		return nil, fmt.Errorf("config.valuesFrom reads Secrets and ConfigMaps from a cluster and cannot be rendered offline: pass the values inline instead")
	}
	prov := o.Provisioner
	if prov == "" {
		prov = Detect(dir, o.Config)
	}
	renderer, err := newRenderer(prov, o.CertProvider)
	if err != nil {
		return nil, err
	}
	g := o.Cluster.gatherer()
	req, err := g.Gather(ctx, renderer, provisioner.Request{
		Content: os.DirFS(dir), Name: o.Name, InstallNamespace: o.InstallNamespace, Config: o.Config,
	})
	if err != nil {
		return nil, fmt.Errorf("rendering %s as %s: %w", dir, prov, err)
	}
	res, err := provisioner.RenderDescribed(ctx, renderer, req)
	if err != nil {
		return nil, fmt.Errorf("rendering %s as %s: %w", dir, prov, err)
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	// The bundle's own CRDs scope their kinds in Prepare; the rest the cluster (as rukpak's engine
	// does), else the built-in table.
	scoper := manifest.NewScoper(nil, nil)
	scope := func(gvk schema.GroupVersionKind) (bool, error) {
		if namespaced, ok := g.Scopes([]schema.GroupVersionKind{gvk})[gvk.GroupKind()]; ok {
			return namespaced, nil
		}
		return scoper.Namespaced(gvk), nil
	}
	objs, err := apply.Prepare(scheme, o.Name, o.InstallNamespace, res.Objects, scope)
	if err != nil {
		return nil, err
	}
	return &Result{Provisioner: prov, Description: res.Description, Objects: objs}, nil
}

func newRenderer(prov rukpakv1alpha1.ProvisionerClassName, certProvider string) (provisioner.Renderer, error) {
	switch prov {
	case rukpakv1alpha1.ProvisionerPlain:
		return plain.New(), nil
	case rukpakv1alpha1.ProvisionerHelm:
		return helm.New(), nil
	case rukpakv1alpha1.ProvisionerKustomize:
		return kustomize.New(), nil
	case rukpakv1alpha1.ProvisionerRegistry:
		var p certs.Provider
		switch certProvider {
		case "", CertManager:
			p = certs.NewCertManager(nil)
		case OpenShiftServiceCA:
			p = certs.NewOpenShiftServiceCA()
		case SelfSigned:
			certPEM, keyPEM, err := pki.GenerateCA("kubectl-olmv1 bundle render", time.Now(), 365*24*time.Hour)
			if err != nil {
				return nil, err
			}
			ca, err := pki.ParseCA(certPEM, keyPEM)
			if err != nil {
				return nil, err
			}
			p = certs.NewSelfSigned(ca)
		default:
			return nil, fmt.Errorf("unknown certificate provider %q: use %s, %s or %s", certProvider, CertManager, SelfSigned, OpenShiftServiceCA)
		}
		return registryv1.New(registryv1.WithCertProvider(p)), nil
	}
	return nil, fmt.Errorf("unknown provisioner %q", prov)
}

// YAML writes objs as one YAML stream, one document per object.
func YAML(objs []*unstructured.Unstructured) ([]byte, error) {
	var b bytes.Buffer
	for _, u := range objs {
		y, err := yaml.Marshal(u.Object)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return b.Bytes(), nil
}
