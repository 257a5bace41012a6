package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/output"
)

// upgradeFlags are the flags of upgrade.
type upgradeFlags struct {
	version, channel string
	preview, wait    bool
	timeout          time.Duration
	pf               previewFlags
}

func newUpgradeCommand(o *options) *cobra.Command {
	var uf upgradeFlags
	cmd := &cobra.Command{
		Use:   "upgrade NAME",
		Short: "Upgrade an Operator: change its version range or channel, or approve its pending upgrade; --preview shows what would change (users)",
		Long: `Change what the Operator NAME installs. --version sets spec.version (a version or a semver range)
and --channel spec.channel. An Operator with upgradePolicy Manual is also approved for the version
resolution then chooses (spec.approvedVersion, as approve does); without --version and --channel it
is approved for the upgrade it waits for. An Operator with upgradePolicy Automatic needs --version or
--channel: it upgrades by itself within its spec.

With --preview nothing is changed: the plan is printed instead, computed with operator-controller's
and rukpak's own code against the live cluster: the bundles resolution would choose (dependencies
included) and why, every object that would be created, changed or deleted with a diff against the
live object (server-side apply dry run), the RBAC the operator would hold, and rukpak's CRD
upgrade-safety findings. Bundle images are pulled to render them.`,
		Example: `  kubectl olmv1 upgrade my-operator --version 1.3.0 --preview
  kubectl olmv1 upgrade my-operator --version ">=1.3.0 <2.0.0" --wait
  kubectl olmv1 upgrade my-operator --channel fast --preview -o yaml
  kubectl olmv1 upgrade my-manual-operator --preview          # the upgrade it waits for`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			return o.upgrade(cmd.Context(), c, args[0], uf)
		},
	}
	f := cmd.Flags()
	f.StringVar(&uf.version, "version", "", `new spec.version: a version or a semver range, e.g. 1.3.0 or ">=1.3.0 <2.0.0"`)
	f.StringVar(&uf.channel, "channel", "", "new spec.channel (replaces spec.channels)")
	f.BoolVar(&uf.preview, "preview", false, "print what would change (resolution, objects with diffs, RBAC, CRD upgrade safety) and change nothing")
	f.BoolVar(&uf.wait, "wait", false, "wait until the new version is installed and healthy")
	f.DurationVar(&uf.timeout, "timeout", 5*time.Minute, "how long --wait waits")
	uf.pf.bind(f)
	return cmd
}

// upgrade changes the spec of Operator name as uf says, after the API server validated the change
// in a dry run; with --preview it prints the plan of the change instead.
func (o *options) upgrade(ctx context.Context, c client.Client, name string, uf upgradeFlags) error {
	p := o.newPlanner(c, uf.pf)
	op := &operatorsv1alpha1.Operator{}
	if err := p.c.Get(ctx, client.ObjectKey{Name: name}, op); err != nil {
		return fmt.Errorf("operator %s: %w", name, err)
	}
	st, err := readState(ctx, p.c, p.reader)
	if err != nil {
		return err
	}
	after, err := proposeUpgrade(ctx, st, op, uf.version, uf.channel)
	if err != nil {
		return err
	}
	// The API server validates the change as it would store it.
	dry := after.DeepCopy()
	if err := p.c.Patch(ctx, dry, client.MergeFrom(op), client.DryRunAll); err != nil {
		return fmt.Errorf("operator %s: the API server refuses the change: %w", name, err)
	}
	if uf.preview {
		return o.previewUpgrade(ctx, p, st, op, dry)
	}
	return o.applyUpgrade(ctx, c, op, after, uf.wait, uf.timeout)
}

// previewUpgrade prints the plan of changing op into dry (as the API server would store it).
func (o *options) previewUpgrade(ctx context.Context, p *planner, st *clusterState, op, dry *operatorsv1alpha1.Operator) error {
	plan, err := p.build(ctx, st, proposal{action: "upgrade", after: dry, before: op})
	if err != nil {
		return err
	}
	if err := o.printPlan(plan); err != nil {
		return err
	}
	if plan.Failed != "" {
		return &SilentError{Err: fmt.Errorf("operator %s: resolution would fail", op.Name)}
	}
	return nil
}

// applyUpgrade patches op into after, with wait waits until the approved version is installed and
// healthy, and prints the Operator.
func (o *options) applyUpgrade(ctx context.Context, c client.Client, op, after *operatorsv1alpha1.Operator, wait bool, timeout time.Duration) error {
	name := op.Name
	if err := c.Patch(ctx, after, client.MergeFrom(op)); err != nil {
		return fmt.Errorf("operator %s: %w", name, err)
	}
	fmt.Fprintf(o.ErrOut, "operator %s: %s\n", name, specChange(op, after))
	if wait {
		var err error
		if after, err = o.waitInstalled(ctx, c, name, timeout, after.Spec.ApprovedVersion); err != nil {
			return err
		}
	}
	after.ManagedFields = nil
	return o.print(after, func() *output.Table { return operatorTable([]operatorsv1alpha1.Operator{*after}) })
}

// proposeUpgrade returns op with the upgrade applied to its spec. For upgradePolicy Manual the
// version that resolution chooses with the new spec is approved; without a new version or channel,
// the upgrade the Operator waits for is.
func proposeUpgrade(ctx context.Context, st *clusterState, op *operatorsv1alpha1.Operator, version, channel string) (*operatorsv1alpha1.Operator, error) {
	after := op.DeepCopy()
	if version != "" {
		after.Spec.Version = version
	}
	if channel != "" {
		after.Spec.Channel, after.Spec.Channels = channel, nil // the API refuses both set
	}
	if after.Spec.UpgradePolicy != operatorsv1alpha1.UpgradePolicyManual {
		if version == "" && channel == "" {
			return nil, fmt.Errorf("operator %s has upgradePolicy %s: it upgrades by itself within its spec; pass --version or --channel to change what it installs",
				op.Name, output.OrNone(string(op.Spec.UpgradePolicy)))
		}
		return after, nil
	}
	after.Spec.ApprovedVersion = ""
	ops := make([]operatorsv1alpha1.Operator, 0, len(st.ops))
	for _, o := range st.ops {
		if o.Name == after.Name {
			o = *after
		}
		ops = append(ops, o)
	}
	o := st.resolve(ctx, ops)[after.Name]
	installed := installedOf(st, after)
	target := ""
	switch {
	case o.UpgradeAvailable != nil:
		target = o.UpgradeAvailable.Version
	case o.Bundle != nil && (installed == nil || o.Bundle.Version != installed.Version):
		// The installed version is outside the new range: the range change itself is the approval.
		target = o.Bundle.Version
	}
	if target == "" {
		why := "it is on the newest version its spec allows"
		if o.Bundle == nil {
			why = "resolution fails: " + o.Message
		}
		return nil, fmt.Errorf("operator %s (upgradePolicy Manual) has no upgrade to approve: %s", op.Name, why)
	}
	after.Spec.ApprovedVersion = target
	return after, nil
}

// specChange describes what an upgrade changed in the spec.
func specChange(before, after *operatorsv1alpha1.Operator) string {
	if equality.Semantic.DeepEqual(before.Spec, after.Spec) {
		return "spec unchanged"
	}
	msg := "upgrading:"
	for _, f := range []struct{ name, from, to string }{
		{"version", before.Spec.Version, after.Spec.Version},
		{"channel", before.Spec.Channel, after.Spec.Channel},
		{"approvedVersion", before.Spec.ApprovedVersion, after.Spec.ApprovedVersion},
	} {
		if f.from != f.to {
			msg += fmt.Sprintf(" spec.%s %s -> %s", f.name, output.OrNone(f.from), output.OrNone(f.to))
		}
	}
	return msg
}

// installDryRun prints the plan of installing op (not created yet): the API server validates and
// defaults it in a dry run, then it is resolved with every other Operator.
func (o *options) installDryRun(ctx context.Context, c client.Client, op *operatorsv1alpha1.Operator, pf previewFlags) error {
	p := o.newPlanner(c, pf)
	dry := op.DeepCopy()
	if err := p.c.Create(ctx, dry, client.DryRunAll); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("operator %s already exists: preview a change with `kubectl olmv1 upgrade %s --preview`", op.Name, op.Name)
		}
		return fmt.Errorf("create Operator %s (dry run): %w", op.Name, err)
	}
	// It would be the newest Operator; its UID is assigned when it is created.
	dry.UID, dry.CreationTimestamp = "", metav1.NewTime(p.now())
	st, err := readState(ctx, p.c, p.reader)
	if err != nil {
		return err
	}
	plan, err := p.build(ctx, st, proposal{action: "install", after: dry})
	if err != nil {
		return err
	}
	if err := o.printPlan(plan); err != nil {
		return err
	}
	if plan.Failed != "" {
		return &SilentError{Err: fmt.Errorf("operator %s would not be installed", op.Name)}
	}
	return nil
}
