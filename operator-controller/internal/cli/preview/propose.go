package preview

import (
	"context"
	"fmt"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/output"
)

// ProposeUpgrade returns op with the upgrade (a new version range or channel) applied to its spec.
// For upgradePolicy Manual the version that resolution chooses with the new spec is approved;
// without a new version or channel, the upgrade the Operator waits for is.
func (st *State) ProposeUpgrade(ctx context.Context, op *operatorsv1alpha1.Operator, version, channel string) (*operatorsv1alpha1.Operator, error) {
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
		if o.Waiting != nil {
			why += "; " + o.Waiting.Message
		}
		if o.Bundle == nil {
			why = "resolution fails: " + o.Message
		}
		return nil, fmt.Errorf("operator %s (upgradePolicy Manual) has no upgrade to approve: %s", op.Name, why)
	}
	after.Spec.ApprovedVersion = target
	return after, nil
}
