package command

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/deppy/pkg/cluster"
	"github.com/olmv1/olmv1/deppy/pkg/olm"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/catalogs"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// Scheme knows every kind the user commands read or write (CatalogMetadata in its external version
// only, as operator-controller registers it), and the built-in kinds and CRDs that previews read
// (RBAC roles, CRDs).
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, catalogdv1alpha1.AddToScheme, catalogs.AddToScheme,
		operatorsv1alpha1.AddToScheme, rukpakv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Client returns a client of the cluster named by --kubeconfig/--context (or $KUBECONFIG, or
// ~/.kube/config), reading from the API server directly.
func (o *Options) Client() (client.Client, error) {
	if o.NewClient != nil {
		return o.NewClient()
	}
	cfg, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	s, err := Scheme()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: s})
}

func (o *Options) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.Kubeconfig != "" {
		rules.ExplicitPath = o.Kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.Context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w (set --kubeconfig or $KUBECONFIG)", err)
	}
	cfg.UserAgent = "kubectl-olmv1"
	return cfg, nil
}

// ClusterVersion reads the cluster's version as operator-controller does (discovery; OpenShift's
// ClusterVersion too), for previews to skip the bundles the cluster cannot run. nil: unknown.
func (o *Options) ClusterVersion(ctx context.Context) (*olm.Cluster, error) {
	if o.NewClusterVersion != nil {
		return o.NewClusterVersion(ctx)
	}
	if o.NewClient != nil {
		return nil, nil
	}
	cfg, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return cluster.ReadClusterVersion(ctx, disc, dc)
}
