package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/equality"
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
			c, err := o.Client()
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
	ro := p.Client()
	op := &operatorsv1alpha1.Operator{}
	if err := ro.Get(ctx, client.ObjectKey{Name: name}, op); err != nil {
		return fmt.Errorf("operator %s: %w", name, err)
	}
	st, err := p.ReadState(ctx)
	if err != nil {
		return err
	}
	after, err := st.ProposeUpgrade(ctx, op, uf.version, uf.channel)
	if err != nil {
		return err
	}
	// The API server validates the change as it would store it.
	dry := after.DeepCopy()
	if err := ro.Patch(ctx, dry, client.MergeFrom(op), client.DryRunAll); err != nil {
		return fmt.Errorf("operator %s: the API server refuses the change: %w", name, err)
	}
	if uf.preview {
		return o.previewUpgrade(ctx, p, st, op, dry)
	}
	return o.applyUpgrade(ctx, c, op, after, uf.wait, uf.timeout)
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
	return o.Print(after, func() *output.Table { return operatorTable([]operatorsv1alpha1.Operator{*after}) })
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
