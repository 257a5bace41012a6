// Command rukpak runs the BundleDeployment controller: it unpacks bundles, provisions them into
// manifests, applies them and reports their health.
package main

import (
	"os"

	"k8s.io/apimachinery/pkg/runtime"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/boot"
)

func main() {
	os.Exit(boot.Main(boot.Component{
		Name:               "rukpak",
		CRDs:               []string{"bundledeployments.core.rukpak.io"},
		AddToScheme:        []func(*runtime.Scheme) error{rukpakv1alpha1.AddToScheme},
		DefaultMetricsPort: 8443,
		DefaultProbePort:   8081,
	}, os.Args[1:]))
}
