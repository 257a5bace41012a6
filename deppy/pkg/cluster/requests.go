package cluster

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
	"github.com/olmv1/olmv1/deppy/pkg/operators"
)

// Requests turns Operators into resolution requests. bds maps an Operator's name to its
// BundleDeployment: the bundle its annotations name counts as installed when it is of the
// Operator's package. cats are the Catalogs; only serving ones can be selected by a
// spec.catalogSelector.
//
// Operators being deleted, and Operators that install a bundle directly (spec.source.type Bundle),
// are left out. The second result holds, by Operator name, why an
// Operator could not be turned into a request (an invalid spec.catalogSelector); that Operator
// fails alone.
func Requests(ops []Operator, bds map[string]BundleDeployment, cats []Catalog) ([]operators.Request, map[string]string) {
	invalid := map[string]string{}
	var out []operators.Request
	for i := range ops {
		op := &ops[i]
		if op.Deleting || op.Spec.Direct() {
			continue
		}
		r := operators.Request{
			Name: op.Name, Package: op.Spec.PackageName, VersionRange: op.Spec.Version, Channel: op.Spec.Channel, Channels: op.Spec.Channels,
			ConstraintPolicy: olm.Enforce, Manual: op.Spec.UpgradePolicy == UpgradePolicyManual,
			ApprovedVersion: op.Spec.ApprovedVersion, Order: op.CreationTimestamp.UnixNano(),
			InstallDependencies: op.Spec.DependencyPolicy == DependencyPolicyInstall,
			AnyVersion:          op.Spec.UpgradeScope == UpgradeScopeAnyVersion,
		}
		if op.Spec.UpgradeConstraintPolicy == UpgradeConstraintPolicyIgnore {
			r.ConstraintPolicy = olm.Ignore
		}
		if sel := op.Spec.CatalogSelector; sel != nil {
			names, err := SelectCatalogs(sel, cats)
			if err != nil {
				invalid[op.Name] = err.Error()
				continue
			}
			r.Catalogs = names
		}
		if bd, ok := bds[op.Name]; ok {
			r.Installed = InstalledBundle(bd, op.Spec.PackageName)
		}
		if op.Spec.Paused && r.Installed != nil {
			// A paused Operator stays on its installed bundle whatever its spec or the catalogs say;
			// it still takes part, so that others resolve around what it installed.
			r.VersionRange, r.Channel, r.Channels = r.Installed.Version, "", nil
			r.Manual, r.ApprovedVersion, r.ConstraintPolicy, r.AnyVersion = false, "", olm.Enforce, false
		}
		out = append(out, r)
	}
	return out, invalid
}

// InstalledBundle returns the bundle bd installs when it is of package pkg, else nil.
func InstalledBundle(bd BundleDeployment, pkg string) *operators.Installed {
	v := bd.Annotations[AnnotationBundleVersion]
	if v == "" || bd.Annotations[AnnotationPackage] != pkg {
		return nil
	}
	return &operators.Installed{BundleName: bd.Annotations[AnnotationBundleName], Version: v}
}

// SelectCatalogs returns the names of the serving catalogs a selector matches, sorted (never nil:
// an empty list means that the selector matches none).
func SelectCatalogs(sel *metav1.LabelSelector, cats []Catalog) ([]string, error) {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, fmt.Errorf("spec.catalogSelector is invalid: %v", err)
	}
	names := []string{}
	for i := range cats {
		if cats[i].Serving() && s.Matches(labels.Set(cats[i].Labels)) {
			names = append(names, cats[i].Name)
		}
	}
	sort.Strings(names)
	return names, nil
}
