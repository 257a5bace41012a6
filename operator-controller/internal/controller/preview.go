package controller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	operators "github.com/olmv1/olmv1/deppy/pkg/operators"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// What a reconcile would write, for previews: `kubectl olmv1 install --dry-run` and `kubectl olmv1
// upgrade --preview` (internal/cli) show the objects these functions return, so that a preview is
// what the reconciler does and not a second implementation of it. Each is the reconciler's own
// function; none reads or writes the cluster.

// Requests are the resolution requests a reconcile builds from every Operator, their
// BundleDeployments (by Operator name) and the Catalogs, and, by Operator name, why an Operator could
// not become one (it fails alone with that message).
func Requests(ops []operatorsv1alpha1.Operator, bds map[string]*rukpakv1alpha1.BundleDeployment, cats []catalogdv1alpha1.Catalog) ([]operators.Request, map[string]string) {
	return requests(ops, bds, cats)
}

// InstallNamespace is the namespace a reconcile installs op's bundle b into when op has no
// BundleDeployment yet (an existing BundleDeployment's spec.installNamespace wins).
func InstallNamespace(op *operatorsv1alpha1.Operator, b *operators.Bundle) string {
	return installNamespace(op, nil, b)
}

// DesiredNamespace is the Namespace a reconcile creates for op when its install namespace is missing.
func DesiredNamespace(op *operatorsv1alpha1.Operator, name string) *corev1.Namespace {
	return desiredNamespace(op, name)
}

// DesiredBundleDeployment is the BundleDeployment a reconcile writes to install b for op into ns,
// b having been resolved from cats (whose bundleVerify its source gets).
func DesiredBundleDeployment(op *operatorsv1alpha1.Operator, b *operators.Bundle, ns string, cats []catalogdv1alpha1.Catalog) (*rukpakv1alpha1.BundleDeployment, error) {
	verify, err := bundleVerify(cats, b.Catalog)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", b.Name, err)
	}
	return desiredBundleDeployment(op, b, ns, verify)
}

// MergeBundleDeployment copies what a reconcile owns of want into have, as it does before an
// update, and reports whether anything changed.
func MergeBundleDeployment(have, want *rukpakv1alpha1.BundleDeployment) bool {
	return mergeBundleDeployment(have, want)
}

// DependencyOperator is the Operator a reconcile of op (dependencyPolicy Install) creates to install
// package pkg, a dependency no Operator installs yet.
func DependencyOperator(op *operatorsv1alpha1.Operator, pkg string) *operatorsv1alpha1.Operator {
	return dependencyOperator(op, pkg)
}

// DesiredDirectBundleDeployment is the BundleDeployment a reconcile writes for op's direct bundle
// (spec.source.type Bundle) installed into ns.
func DesiredDirectBundleDeployment(op *operatorsv1alpha1.Operator, ns string) (*rukpakv1alpha1.BundleDeployment, error) {
	return desiredDirectBundleDeployment(op, ns)
}

// DirectSource names a direct bundle's source as the Operator's status does.
func DirectSource(s *rukpakv1alpha1.Source) string { return describeSource(s) }
