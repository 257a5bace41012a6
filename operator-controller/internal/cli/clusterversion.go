package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/operator-framework/operator-registry/alpha/property"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/command"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/output"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/preview"
)

// `kubectl olmv1 status --cluster-version X [--openshift-version Y]`: before a cluster upgrade, does
// the bundle every Operator installed allow the new version? The bundle's constraints
// (minKubeVersion of its CSV, olm.minKubeVersion, olm.maxOpenShiftVersion) are checked by deppy's
// own check (olm.Cluster.CannotRun), the one resolution skips bundles with.

// Results of the cluster version check of one Operator.
const (
	clusterCheckAllows   = "Allows"
	clusterCheckBlocks   = "Blocks"
	clusterCheckNotKnown = "Unknown"
)

// clusterCheck is the cluster version check of one installed Operator.
type clusterCheck struct {
	Operator string `json:"operator"`
	Package  string `json:"package,omitempty"`
	Bundle   string `json:"bundle,omitempty"`
	Version  string `json:"version"`
	// Result is Allows, Blocks (the installed bundle cannot run on the version) or Unknown (its
	// constraints could not all be read).
	Result  string `json:"result"`
	Message string `json:"message,omitempty"`
}

// clusterCheckReport is what `status --cluster-version` prints with -o yaml|json.
type clusterCheckReport struct {
	Cluster   olm.Cluster    `json:"cluster"`
	Operators []clusterCheck `json:"operators"`
}

// checkClusterVersion prints, for every Operator with an installed bundle, whether that bundle
// allows the cluster versions of target, and fails (exit status 1) when one does not.
// With name, only that Operator is checked.
func (o *options) checkClusterVersion(ctx context.Context, c client.Client, name string, target olm.Cluster) error {
	if err := target.Validate(); err != nil {
		return fmt.Errorf("--cluster-version/--openshift-version: %w", err)
	}
	st, err := preview.New(c, nil, "").ReadState(ctx)
	if err != nil {
		return err
	}
	list := &operatorsv1alpha1.OperatorList{}
	if err := c.List(ctx, list); err != nil {
		return fmt.Errorf("list Operators: %w", err)
	}
	report := clusterCheckReport{Cluster: target}
	var blocked []string
	for i := range list.Items {
		op := &list.Items[i]
		if op.Status.InstalledBundle == nil || (name != "" && op.Name != name) {
			continue
		}
		chk := checkInstalled(st, op, &target)
		if chk.Result == clusterCheckBlocks {
			blocked = append(blocked, op.Name)
		}
		report.Operators = append(report.Operators, chk)
	}
	if err := o.Print(report, func() *output.Table { return clusterCheckTable(report) }); err != nil {
		return err
	}
	what := clusterVersions(&target)
	if len(blocked) > 0 {
		fmt.Fprintf(o.ErrOut, "%d installed %s cannot run on %s: %s. Upgrade %s first (kubectl olmv1 upgrade NAME --version …) to a version that allows it, or keep the cluster version\n",
			len(blocked), pluralWord(len(blocked), "Operator", "Operators"), what, strings.Join(blocked, ", "), pluralWord(len(blocked), "it", "them"))
		return &command.SilentError{Err: fmt.Errorf("%d Operators block %s", len(blocked), what)}
	}
	fmt.Fprintf(o.ErrOut, "every installed Operator's bundle allows %s\n", what)
	return nil
}

// checkInstalled checks the bundle op installed against target: the catalogs' bundle when a serving
// catalog has it, else the properties recorded in op's status (a bundle installed directly, or gone
// from the catalogs), which carry olm.minKubeVersion and olm.maxOpenShiftVersion but not the CSV.
func checkInstalled(st *preview.State, op *operatorsv1alpha1.Operator, target *olm.Cluster) clusterCheck {
	ib := op.Status.InstalledBundle
	chk := clusterCheck{Operator: op.Name, Package: op.Spec.PackageName, Bundle: ib.Name, Version: ib.Version, Result: clusterCheckAllows}
	b := st.InstalledCatalogBundle(op)
	note := ""
	if b == nil {
		name := ib.Name
		if name == "" {
			name = ib.Source
		}
		b = &olm.Bundle{Name: name, Package: op.Spec.PackageName}
		for _, p := range ib.Properties {
			b.Properties = append(b.Properties, property.Property{Type: p.Type, Value: json.RawMessage(p.Value)})
		}
		note = "no serving catalog has the bundle: only the properties recorded in status.installedBundle were checked (not the CSV's minKubeVersion)"
		if target.KubeVersion != "" {
			chk.Result = clusterCheckNotKnown
		}
	}
	if why := target.CannotRun(b); why != "" {
		chk.Result = clusterCheckBlocks
		if _, after, ok := strings.Cut(why, " skipped: "); ok {
			why = after
		}
		note = why
	}
	chk.Message = note
	return chk
}

func clusterCheckTable(r clusterCheckReport) *output.Table {
	t := output.NewTable("NAME", "PACKAGE", "INSTALLED", strings.ToUpper(clusterVersions(&r.Cluster)), "MESSAGE")
	for _, c := range r.Operators {
		t.Add(c.Operator, output.OrNone(c.Package), c.Bundle+" "+c.Version, c.Result, c.Message)
	}
	return t
}

// clusterVersions names the versions of c: "Kubernetes 1.38.0", "OpenShift 4.18" or both.
func clusterVersions(c *olm.Cluster) string {
	var parts []string
	if c.KubeVersion != "" {
		parts = append(parts, "Kubernetes "+c.KubeVersion)
	}
	if c.OpenShiftVersion != "" {
		parts = append(parts, "OpenShift "+c.OpenShiftVersion)
	}
	return strings.Join(parts, " and ")
}

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
