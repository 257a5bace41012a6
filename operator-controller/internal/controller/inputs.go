package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/deppy/pkg/olm"
	resolve "github.com/olmv1/olmv1/deppy/pkg/operators"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/catalogs"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// Labels and annotations operator-controller puts on what it creates.
const (
	// LabelOwnerKind and LabelOwnerName mark BundleDeployments and Namespaces created for an Operator.
	LabelOwnerKind = "operators.operatorframework.io/owner-kind"
	LabelOwnerName = "operators.operatorframework.io/owner-name"

	// Annotations of a BundleDeployment: the bundle it installs.
	AnnotationPackage       = "operators.operatorframework.io/package"
	AnnotationBundleName    = "operators.operatorframework.io/bundle-name"
	AnnotationBundleVersion = "operators.operatorframework.io/bundle-version"
	AnnotationCatalog       = "operators.operatorframework.io/catalog"
)

// requests turns the Operators into resolution requests. bds maps an Operator name to its
// BundleDeployment (the bundle it references counts as installed); catalogs are the serving ones.
func requests(ops []operatorsv1alpha1.Operator, bds map[string]*rukpakv1alpha1.BundleDeployment, cats []catalogdv1alpha1.Catalog) ([]resolve.Request, map[string]string) {
	invalid := map[string]string{}
	var out []resolve.Request
	for i := range ops {
		op := &ops[i]
		if !op.DeletionTimestamp.IsZero() {
			continue
		}
		r := resolve.Request{
			Name: op.Name, Package: op.Spec.PackageName, VersionRange: op.Spec.Version, Channel: op.Spec.Channel,
			ConstraintPolicy: olm.Enforce, Manual: op.Spec.UpgradePolicy == operatorsv1alpha1.UpgradePolicyManual,
			ApprovedVersion: op.Spec.ApprovedVersion, Order: op.CreationTimestamp.UnixNano(),
			InstallDependencies: op.Spec.DependencyPolicy == operatorsv1alpha1.DependencyPolicyInstall,
		}
		if op.Spec.UpgradeConstraintPolicy == operatorsv1alpha1.UpgradeConstraintPolicyIgnore {
			r.ConstraintPolicy = olm.Ignore
		}
		if sel := op.Spec.CatalogSelector; sel != nil {
			names, err := selectCatalogs(sel, cats)
			if err != nil {
				invalid[op.Name] = err.Error()
				continue
			}
			r.Catalogs = names
		}
		if bd := bds[op.Name]; bd != nil {
			if v := bd.Annotations[AnnotationBundleVersion]; v != "" && bd.Annotations[AnnotationPackage] == op.Spec.PackageName {
				r.Installed = &resolve.Installed{BundleName: bd.Annotations[AnnotationBundleName], Version: v}
			}
		}
		out = append(out, r)
	}
	return out, invalid
}

// selectCatalogs returns the names of the serving catalogs a selector matches (never nil).
func selectCatalogs(sel *metav1.LabelSelector, cats []catalogdv1alpha1.Catalog) ([]string, error) {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, fmt.Errorf("spec.catalogSelector is invalid: %v", err)
	}
	names := []string{}
	for i := range cats {
		if catalogs.Serving(&cats[i]) && s.Matches(labels.Set(cats[i].Labels)) {
			names = append(names, cats[i].Name)
		}
	}
	sort.Strings(names)
	return names, nil
}

// fingerprint identifies a set of requests: the same requests against the same index give the same
// outcomes.
func fingerprint(reqs []resolve.Request) string {
	sorted := append([]resolve.Request(nil), reqs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	data, _ := json.Marshal(sorted)
	h := sha256.New()
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}
