package cli

import (
	"fmt"
	"regexp"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/output"
)

var approvedVersionRE = regexp.MustCompile(`"approvedVersion":"([^"]+)"`)

// awaitingVersion extracts the version an UpgradeAvailable message offers for approval.
func awaitingVersion(msg string) string {
	if m := approvedVersionRE.FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	return ""
}

func newApproveCommand(o *options) *cobra.Command {
	var (
		version string
		wait    bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "approve NAME",
		Short: "Approve the upgrade a Manual Operator is waiting for (users)",
		Long: `An Operator with upgradePolicy Manual stays on its installed version and reports the version it would
move to in its UpgradeAvailable condition. approve sets spec.approvedVersion to that version (or to
--version), and with --wait waits until it is installed and healthy.`,
		Example: `  kubectl olmv1 approve my-operator --wait
  kubectl olmv1 approve my-operator --version 1.3.0`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.Client()
			if err != nil {
				return err
			}
			op := &operatorsv1alpha1.Operator{}
			if err := c.Get(cmd.Context(), client.ObjectKey{Name: args[0]}, op); err != nil {
				return fmt.Errorf("operator %s: %w", args[0], err)
			}
			if op.Spec.UpgradePolicy != operatorsv1alpha1.UpgradePolicyManual {
				return fmt.Errorf("operator %s has upgradePolicy %s: it upgrades without approval (approve is for upgradePolicy Manual)", args[0], output.OrNone(string(op.Spec.UpgradePolicy)))
			}
			v := version
			if v == "" {
				u := meta.FindStatusCondition(op.Status.Conditions, operatorsv1alpha1.TypeUpgradeAvailable)
				if u == nil || u.Status != metav1.ConditionTrue || u.Reason != operatorsv1alpha1.ReasonUpgradeAwaitingApproval {
					state := "no UpgradeAvailable condition yet"
					if u != nil {
						state = fmt.Sprintf("UpgradeAvailable=%s reason %s: %s", u.Status, u.Reason, u.Message)
					}
					return fmt.Errorf("operator %s has no upgrade awaiting approval (%s); pass --version to approve a version explicitly", args[0], state)
				}
				if v = awaitingVersion(u.Message); v == "" {
					return fmt.Errorf("operator %s: cannot read the offered version from %q; pass --version", args[0], u.Message)
				}
			}
			patch := []byte(fmt.Sprintf(`{"spec":{"approvedVersion":%q}}`, v))
			if err := c.Patch(cmd.Context(), op, client.RawPatch(types.MergePatchType, patch)); err != nil {
				return fmt.Errorf("operator %s: approve %s: %w", args[0], v, err)
			}
			fmt.Fprintf(o.ErrOut, "operator %s: approved version %s\n", args[0], v)
			if wait {
				if op, err = o.waitInstalled(cmd.Context(), c, args[0], timeout, v); err != nil {
					return err
				}
			}
			op.ManagedFields = nil
			return o.Print(op, func() *output.Table { return operatorTable([]operatorsv1alpha1.Operator{*op}) })
		},
	}
	cmd.Flags().StringVar(&version, "version", "", "the version to approve (default: the one UpgradeAvailable offers)")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the approved version is installed and healthy")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long --wait waits")
	return cmd
}
