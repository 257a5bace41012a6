package preview

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/deppy/pkg/cluster"
	"github.com/olmv1/olmv1/deppy/pkg/olm"
	"github.com/olmv1/olmv1/deppy/pkg/operators"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/catalogs"
	"github.com/olmv1/olmv1/operator-controller/internal/controller"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// State is what operator-controller's resolution reads: every Operator, every Catalog, the
// BundleDeployments it created, and the serving catalogs' content.
type State struct {
	ops  []operatorsv1alpha1.Operator
	bds  map[string]*rukpakv1alpha1.BundleDeployment // by Operator name
	cats []catalogdv1alpha1.Catalog
	idx  *olm.Index
	// cluster is the cluster's version (nil: unknown, nothing checked).
	cluster *olm.Cluster
}

// readState reads what a reconcile reads, through c (a readOnlyClient). Catalog content is read and
// checked by operator-controller's own catalog cache (internal/catalogs: CatalogMetadata, compared
// with status.contentHash before it is used) from reader.
func readState(ctx context.Context, c client.Client, reader catalogs.ContentReader) (*State, error) {
	ops := &operatorsv1alpha1.OperatorList{}
	if err := c.List(ctx, ops); err != nil {
		return nil, fmt.Errorf("listing Operators (is operator-controller installed?): %w", err)
	}
	cats := &catalogdv1alpha1.CatalogList{}
	if err := c.List(ctx, cats); err != nil {
		return nil, fmt.Errorf("listing Catalogs (is catalogd installed?): %w", err)
	}
	bdList := &rukpakv1alpha1.BundleDeploymentList{}
	if err := c.List(ctx, bdList, client.MatchingLabels{controller.LabelOwnerKind: "Operator"}); err != nil {
		return nil, fmt.Errorf("listing BundleDeployments (is rukpak installed?): %w", err)
	}
	st := &State{ops: ops.Items, cats: cats.Items, bds: map[string]*rukpakv1alpha1.BundleDeployment{}}
	for i := range bdList.Items {
		bd := &bdList.Items[i]
		if op := cluster.OwnerOperator(bd.Labels, bd.OwnerReferences); op != "" {
			st.bds[op] = bd
		}
	}
	idx, _, err := (&catalogs.Cache{Reader: reader}).Index(ctx, st.cats)
	if err != nil {
		return nil, fmt.Errorf("reading catalog content as operator-controller does: %w (operator-controller would not resolve either)", err)
	}
	st.idx = idx
	return st, nil
}

// resolve resolves ops together against the catalogs as a reconcile does: the requests are built by
// operator-controller's own mapping (controller.Requests, on deppy/pkg/cluster) from the Operators,
// their BundleDeployments and the Catalogs, and solved by deppy/pkg/operators. An Operator that
// cannot become a request (an invalid catalog selector) fails with the mapping's message.
func (st *State) resolve(ctx context.Context, ops []operatorsv1alpha1.Operator) map[string]operators.Outcome {
	reqs, invalid := controller.Requests(ops, st.bds, st.cats)
	out := operators.ResolveWith(ctx, st.idx, reqs, operators.Options{Cluster: st.cluster})
	for name, msg := range invalid {
		out[name] = operators.Outcome{Message: msg}
	}
	return out
}

// InstalledCatalogBundle returns the catalogs' bundle that op's status.installedBundle names (its
// catalog, package and name; any serving catalog when the catalog is not recorded), nil when no
// serving catalog has it or op installs nothing from a catalog.
func (st *State) InstalledCatalogBundle(op *operatorsv1alpha1.Operator) *olm.Bundle {
	ib := op.Status.InstalledBundle
	if ib == nil || ib.Name == "" {
		return nil
	}
	if b := st.idx.Bundle(ib.Catalog, op.Spec.PackageName, ib.Name); b != nil {
		return b
	}
	for _, b := range st.idx.Bundles(op.Spec.PackageName) {
		if b.Name == ib.Name {
			return b
		}
	}
	return nil
}

func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %T: %w", obj, err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}
