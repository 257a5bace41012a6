// Command catalogd runs the Catalog controller: it unpacks file-based catalogs and serves their content.
package main

import (
	"os"

	"k8s.io/apimachinery/pkg/runtime"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/boot"
)

func main() {
	os.Exit(boot.Main(boot.Component{
		Name:               "catalogd",
		CRDs:               []string{"catalogs.catalogd.operatorframework.io"},
		AddToScheme:        []func(*runtime.Scheme) error{catalogdv1alpha1.AddToScheme},
		DefaultMetricsPort: 7443,
		DefaultProbePort:   7081,
	}, os.Args[1:]))
}
