package cli

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/output"
)

// waitingVersionRE reads the version of an UpgradeAvailable message of reason SemverGuardRail
// ("2.0.0 is available but waits: …") or UpgradeBlocked ("version 1.1.0 (bundle …) is available but
// blocked: …", held by the installed operator's OperatorCondition).
var waitingVersionRE = regexp.MustCompile(`^(?:(\S+) is available but waits|version (\S+) \(bundle [^)]*\) is available but blocked)`)

// conditionStatus returns the status of a condition ("" when absent), or "Unknown" when it does not
// describe generation (0: any generation).
func conditionStatus(conds []metav1.Condition, typ string, generation int64) string {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil {
		return ""
	}
	if generation != 0 && c.ObservedGeneration != generation {
		return "Unknown"
	}
	return string(c.Status)
}

// conditionsLine is the one-line progress view of an Operator.
func conditionsLine(op *operatorsv1alpha1.Operator) string {
	var parts []string
	for _, t := range []string{operatorsv1alpha1.TypeResolved, operatorsv1alpha1.TypeInstalled, operatorsv1alpha1.TypeHealthy} {
		c := meta.FindStatusCondition(op.Status.Conditions, t)
		if c == nil {
			parts = append(parts, t+"=<none>")
			continue
		}
		parts = append(parts, fmt.Sprintf("%s=%s(%s)", t, c.Status, c.Reason))
	}
	if b := op.Status.ResolvedBundle; b != nil {
		parts = append(parts, "resolved "+b.Version)
	}
	if b := op.Status.InstalledBundle; b != nil {
		parts = append(parts, "installed "+b.Version)
	}
	return strings.Join(parts, " ")
}

// failing describes the first condition that is not True: what a timeout reports.
func failing(op *operatorsv1alpha1.Operator) string {
	for _, t := range []string{operatorsv1alpha1.TypeResolved, operatorsv1alpha1.TypeInstalled, operatorsv1alpha1.TypeHealthy} {
		c := meta.FindStatusCondition(op.Status.Conditions, t)
		if c == nil {
			return t + " not reported yet (is operator-controller running?)"
		}
		if c.Status != metav1.ConditionTrue || c.ObservedGeneration != op.Generation {
			return fmt.Sprintf("%s=%s reason %s: %s", t, c.Status, c.Reason, c.Message)
		}
	}
	return conditionsLine(op)
}

func newStatusCommand(o *options) *cobra.Command {
	var target olm.Cluster
	cmd := &cobra.Command{
		Use:   "status [NAME]",
		Short: "Show Operators: installed and resolved versions, conditions, pending upgrades (users)",
		Long: `Shows the Operators: installed and resolved versions, conditions and pending upgrades (an upgrade
awaiting approval, or a newer major version the semver guard rails hold back).

With --cluster-version (and/or --openshift-version) it checks a cluster upgrade instead: for every
installed Operator (or NAME), whether its installed bundle allows that Kubernetes version (the CSV's
minKubeVersion, olm.minKubeVersion) and OpenShift version (olm.maxOpenShiftVersion), with the check
resolution uses to skip bundles. The bundle is read from the serving catalogs; one that no catalog
serves any more is checked with the properties recorded in its status (Unknown for Kubernetes: the
CSV is not recorded). Exit status 1 when an installed bundle blocks the version.`,
		Example: `  kubectl olmv1 status
  kubectl olmv1 status my-operator
  kubectl olmv1 status my-operator -o yaml
  kubectl olmv1 status --cluster-version 1.38.0
  kubectl olmv1 status --cluster-version 1.31.0 --openshift-version 4.18`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.Client()
			if err != nil {
				return err
			}
			if target.Known() {
				name := ""
				if len(args) == 1 {
					name = args[0]
				}
				return o.checkClusterVersion(cmd.Context(), c, name, target)
			}
			if len(args) == 1 {
				op := &operatorsv1alpha1.Operator{}
				if err := c.Get(cmd.Context(), client.ObjectKey{Name: args[0]}, op); err != nil {
					return fmt.Errorf("operator %s: %w", args[0], err)
				}
				op.ManagedFields = nil
				if o.Output != "table" {
					return o.Print(op, nil)
				}
				return writeOperatorDetails(o, op)
			}
			list := &operatorsv1alpha1.OperatorList{}
			if err := c.List(cmd.Context(), list); err != nil {
				return fmt.Errorf("list Operators: %w", err)
			}
			for i := range list.Items {
				list.Items[i].ManagedFields = nil
			}
			return o.Print(list, func() *output.Table { return operatorTable(list.Items) })
		},
	}
	cmd.Flags().StringVar(&target.KubeVersion, "cluster-version", "", "check whether every installed Operator's bundle allows this Kubernetes `version` (e.g. 1.38.0) before a cluster upgrade; exit status 1 when one does not")
	cmd.Flags().StringVar(&target.OpenShiftVersion, "openshift-version", "", "check whether every installed Operator's bundle allows this OpenShift `version` (olm.maxOpenShiftVersion, e.g. 4.18)")
	return cmd
}

func operatorTable(ops []operatorsv1alpha1.Operator) *output.Table {
	t := output.NewTable("NAME", "PACKAGE", "INSTALLED", "RESOLVED", "INSTALLED?", "HEALTHY", "UPGRADE", "NAMESPACE", "MESSAGE")
	for _, op := range ops {
		inst, res := "", ""
		if op.Status.InstalledBundle != nil {
			inst = op.Status.InstalledBundle.Version
		}
		if op.Status.ResolvedBundle != nil {
			res = op.Status.ResolvedBundle.Version
		}
		upgrade := ""
		if u := meta.FindStatusCondition(op.Status.Conditions, operatorsv1alpha1.TypeUpgradeAvailable); u != nil && u.Status == metav1.ConditionTrue {
			upgrade = u.Reason
			v := awaitingVersion(u.Message)
			if m := waitingVersionRE.FindStringSubmatch(u.Message); v == "" && m != nil {
				v = m[1] + m[2] // held back by the semver guard rails, or by the operator
			}
			if v != "" {
				upgrade = v + " (" + u.Reason + ")"
			}
		}
		g := op.Generation
		msg := ""
		if conditionStatus(op.Status.Conditions, operatorsv1alpha1.TypeInstalled, g) != "True" || conditionStatus(op.Status.Conditions, operatorsv1alpha1.TypeHealthy, g) != "True" {
			msg = failing(&op)
		}
		t.Add(op.Name, op.Spec.PackageName, output.OrNone(inst), output.OrNone(res),
			output.OrNone(conditionStatus(op.Status.Conditions, operatorsv1alpha1.TypeInstalled, g)),
			output.OrNone(conditionStatus(op.Status.Conditions, operatorsv1alpha1.TypeHealthy, g)),
			output.OrNone(upgrade), output.OrNone(op.Status.InstallNamespace), msg)
	}
	return t
}

func writeOperatorDetails(o *options, op *operatorsv1alpha1.Operator) error {
	w := o.Out
	bundle := func(b *operatorsv1alpha1.BundleMetadata) string {
		if b == nil {
			return "<none>"
		}
		if b.Name == "" { // a direct bundle: known by its source only
			return b.Source
		}
		return fmt.Sprintf("%s %s (catalog %s, %s)", b.Name, b.Version, b.Catalog, b.Source)
	}
	policy := string(op.Spec.UpgradePolicy)
	if policy == "" {
		policy = string(operatorsv1alpha1.UpgradePolicyAutomatic)
	}
	fmt.Fprintf(w, "Name:              %s\n", op.Name)
	fmt.Fprintf(w, "Package:           %s\n", op.Spec.PackageName)
	if op.Spec.IsDirect() {
		fmt.Fprintf(w, "Source:            bundle %s, format %s (installed directly, no resolution)\n", directSourceName(op), op.Spec.Source.Bundle.Format)
	}
	fmt.Fprintf(w, "Version range:     %s\n", output.OrNone(op.Spec.Version))
	fmt.Fprintf(w, "Channel:           %s\n", output.OrNone(op.Spec.Channel))
	fmt.Fprintf(w, "Upgrade policy:    %s\n", policy)
	if !op.Spec.IsDirect() {
		scope := op.Spec.UpgradeScope
		if scope == "" {
			scope = operatorsv1alpha1.UpgradeScopeSemverCompatible
		}
		fmt.Fprintf(w, "Upgrade scope:     %s\n", scope)
	}
	if op.Spec.ApprovedVersion != "" {
		fmt.Fprintf(w, "Approved version:  %s\n", op.Spec.ApprovedVersion)
	}
	fmt.Fprintf(w, "Namespace:         %s\n", output.OrNone(op.Status.InstallNamespace))
	fmt.Fprintf(w, "Installed bundle:  %s\n", bundle(op.Status.InstalledBundle))
	fmt.Fprintf(w, "Resolved bundle:   %s\n", bundle(op.Status.ResolvedBundle))
	fmt.Fprintln(w, "Conditions:")
	t := output.NewTable("  TYPE", "STATUS", "REASON", "CURRENT", "MESSAGE")
	for _, c := range op.Status.Conditions {
		current := "yes"
		if c.ObservedGeneration != op.Generation {
			current = fmt.Sprintf("no (generation %d of %d)", c.ObservedGeneration, op.Generation)
		}
		t.Add("  "+c.Type, string(c.Status), c.Reason, current, c.Message)
	}
	return t.Write(w)
}
