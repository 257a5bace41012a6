// Command operator-controller runs the Operator controller: it resolves packages from catalogs with
// deppy and installs them through rukpak BundleDeployments.
package main

import (
	"os"

	"k8s.io/apimachinery/pkg/runtime"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/boot"
)

func main() {
	os.Exit(boot.Main(boot.Component{
		Name: "operator-controller",
		CRDs: []string{
			"operators.operators.operatorframework.io",
			"catalogs.catalogd.operatorframework.io",
			"bundledeployments.core.rukpak.io",
		},
		AddToScheme: []func(*runtime.Scheme) error{
			operatorsv1alpha1.AddToScheme, catalogdv1alpha1.AddToScheme, rukpakv1alpha1.AddToScheme,
		},
		DefaultMetricsPort: 9443,
		DefaultProbePort:   9081,
	}, os.Args[1:]))
}
