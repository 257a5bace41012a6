package cluster

import (
	"context"
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
	"github.com/olmv1/olmv1/deppy/pkg/operators"
)

// State is what operator-controller's resolution reads from a cluster besides catalog content.
type State struct {
	Operators []Operator
	// BundleDeployments are the BundleDeployments created for Operators, by Operator name.
	BundleDeployments map[string]BundleDeployment
	Catalogs          []Catalog
	// Cluster is the cluster's version (ReadClusterVersion); nil checks no bundle's minKubeVersion.
	Cluster *olm.Cluster
}

// ReadState lists every Operator and Catalog, and the BundleDeployments operator-controller created
// (label operators.operatorframework.io/owner-kind=Operator), through the dynamic client.
func ReadState(ctx context.Context, c dynamic.Interface) (*State, error) {
	st := &State{}
	ops, err := c.Resource(OperatorGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Operators (%s; is operator-controller's CRD installed?): %w", OperatorGVR.GroupResource(), err)
	}
	for i := range ops.Items {
		op, err := OperatorFromUnstructured(&ops.Items[i])
		if err != nil {
			return nil, err
		}
		st.Operators = append(st.Operators, op)
	}
	cats, err := c.Resource(CatalogGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing Catalogs (%s; is catalogd's CRD installed?): %w", CatalogGVR.GroupResource(), err)
	}
	for i := range cats.Items {
		cat, err := CatalogFromUnstructured(&cats.Items[i])
		if err != nil {
			return nil, err
		}
		st.Catalogs = append(st.Catalogs, cat)
	}
	bds, err := c.Resource(BundleDeploymentGVR).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{LabelOwnerKind: "Operator"}).String(),
	})
	if err != nil {
		return nil, fmt.Errorf("listing BundleDeployments (%s; is rukpak's CRD installed?): %w", BundleDeploymentGVR.GroupResource(), err)
	}
	st.BundleDeployments = BundleDeploymentsByOperator(bds.Items)
	return st, nil
}

// Decision is what operator-controller decides for one Operator.
type Decision struct {
	// Operator is the Operator's name, Package its spec.packageName.
	Operator, Package string
	// Installed is the bundle its BundleDeployment installs (nil when none).
	Installed *operators.Installed
	// Outcome is the result of resolution: a bundle, or the message of the Resolved condition
	// (without the note on the installed bundle that stays installed).
	Outcome operators.Outcome
	// Deleting is true for an Operator being deleted: it is not resolved.
	Deleting bool
}

// Decide resolves every Operator of st together against idx, as operator-controller does, and
// returns a Decision per Operator, sorted by name.
func Decide(ctx context.Context, idx *olm.Index, st *State) []Decision {
	reqs, invalid := Requests(st.Operators, st.BundleDeployments, st.Catalogs)
	outcomes := operators.ResolveWith(ctx, idx, reqs, operators.Options{Cluster: st.Cluster})
	out := make([]Decision, 0, len(st.Operators))
	for _, op := range st.Operators {
		d := Decision{Operator: op.Name, Package: op.Spec.PackageName, Deleting: op.Deleting}
		if bd, ok := st.BundleDeployments[op.Name]; ok {
			d.Installed = InstalledBundle(bd, op.Spec.PackageName)
		}
		switch msg, bad := invalid[op.Name]; {
		case op.Deleting:
			d.Outcome = operators.Outcome{Message: "the Operator is being deleted: it is not resolved"}
		case op.Spec.Direct():
			d.Outcome = operators.Outcome{Message: "the Operator installs a bundle directly (spec.source.type Bundle): it is not resolved"}
		case bad:
			d.Outcome = operators.Outcome{Message: msg}
		default:
			d.Outcome = outcomes[op.Name]
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Operator < out[j].Operator })
	return out
}

// SelectedCatalogs keeps the catalogs sel matches (all of them for a nil or empty selector).
func SelectedCatalogs(cats []Catalog, sel labels.Selector) []Catalog {
	if sel == nil || sel.Empty() {
		return cats
	}
	var out []Catalog
	for _, c := range cats {
		if sel.Matches(labels.Set(c.Labels)) {
			out = append(out, c)
		}
	}
	return out
}
