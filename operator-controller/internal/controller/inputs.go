package controller

import (
	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/deppy/pkg/cluster"
	operators "github.com/olmv1/olmv1/deppy/pkg/operators"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/catalogs"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// Labels and annotations operator-controller puts on what it creates (defined with the code that
// reads them back, deppy/pkg/cluster, which `deppy resolve --kubeconfig` runs too).
const (
	// LabelOwnerKind and LabelOwnerName mark BundleDeployments and Namespaces created for an Operator.
	LabelOwnerKind = cluster.LabelOwnerKind
	LabelOwnerName = cluster.LabelOwnerName

	// Annotations of a BundleDeployment: the bundle it installs.
	AnnotationPackage       = cluster.AnnotationPackage
	AnnotationBundleName    = cluster.AnnotationBundleName
	AnnotationBundleVersion = cluster.AnnotationBundleVersion
	AnnotationCatalog       = cluster.AnnotationCatalog
	// AnnotationBundleProperties is the bundle's properties (properties.go) as a JSON list of
	// {"type", "value"} objects, the value as compact JSON.
	AnnotationBundleProperties = "operators.operatorframework.io/bundle-properties"
)

// requests turns the Operators into resolution requests with deppy's cluster.Requests (the mapping
// `deppy resolve --kubeconfig` uses). bds maps an Operator name to its BundleDeployment (the bundle
// it references counts as installed); catalogs are every Catalog (only serving ones are selected).
func requests(ops []operatorsv1alpha1.Operator, bds map[string]*rukpakv1alpha1.BundleDeployment, cats []catalogdv1alpha1.Catalog) ([]operators.Request, map[string]string) {
	in := make([]cluster.Operator, len(ops))
	for i := range ops {
		in[i] = operatorInput(&ops[i])
	}
	installed := make(map[string]cluster.BundleDeployment, len(bds))
	for name, bd := range bds {
		if bd != nil {
			installed[name] = cluster.BundleDeployment{Name: bd.Name, Annotations: bd.Annotations}
		}
	}
	return cluster.Requests(in, installed, catalogs.Inputs(cats))
}

// operatorInput is what resolution reads of an Operator.
func operatorInput(op *operatorsv1alpha1.Operator) cluster.Operator {
	s := &op.Spec
	return cluster.Operator{
		Name: op.Name, CreationTimestamp: op.CreationTimestamp, Deleting: !op.DeletionTimestamp.IsZero(),
		Spec: cluster.OperatorSpec{
			PackageName: s.PackageName, Version: s.Version, Channel: s.Channel, Channels: s.Channels, Paused: s.Paused, CatalogSelector: s.CatalogSelector,
			UpgradeConstraintPolicy: string(s.UpgradeConstraintPolicy), UpgradePolicy: string(s.UpgradePolicy),
			ApprovedVersion: s.ApprovedVersion, DependencyPolicy: string(s.DependencyPolicy), UpgradeScope: string(s.UpgradeScope),
			Source: operatorSource(s.Source),
		},
	}
}

// operatorSource is what resolution reads of spec.source: its type (a direct bundle is not resolved).
func operatorSource(src *operatorsv1alpha1.OperatorSource) *cluster.OperatorSource {
	if src == nil {
		return nil
	}
	return &cluster.OperatorSource{Type: string(src.Type)}
}
