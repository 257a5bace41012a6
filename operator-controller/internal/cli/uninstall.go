package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// uninstalled is what uninstall -o yaml|json prints: what was deleted, and with --wait that it is gone.
type uninstalled struct {
	Operator         string `json:"operator"`
	BundleDeployment string `json:"bundleDeployment"`
	// Namespace is the install namespace removed with the Operator ("" when it was not created for it).
	Namespace string `json:"namespace,omitempty"`
	Gone      bool   `json:"gone"`
}

func newUninstallCommand(o *options) *cobra.Command {
	var (
		wait    bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "uninstall NAME",
		Short: "Delete an Operator and everything it installed (users)",
		Long: `Delete the Operator NAME. Its BundleDeployment, and through it every object the bundle installed, is
removed, and so is the install namespace if operator-controller created it for this Operator. With
spec.deletionPolicy Orphan, the BundleDeployment is removed but every installed object and the
namespace stay. With --wait, waits until the Operator, its BundleDeployment and that namespace are gone.`,
		Example: `  kubectl olmv1 uninstall my-operator --wait`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.Client()
			if err != nil {
				return err
			}
			return o.uninstall(cmd.Context(), c, args[0], wait, timeout)
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the Operator, its BundleDeployment and its namespace are gone")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long --wait waits")
	return cmd
}

// uninstall deletes Operator name and, with wait, waits until it, its BundleDeployment and the
// install namespace created for it are gone; it prints what was deleted with -o yaml|json.
func (o *options) uninstall(ctx context.Context, c client.Client, name string, wait bool, timeout time.Duration) error {
	op := &operatorsv1alpha1.Operator{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, op); err != nil {
		return fmt.Errorf("operator %s: %w", name, err)
	}
	ownedNS := ownedInstallNamespace(ctx, c, op)
	if err := c.Delete(ctx, op, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Operator %s: %w", name, err)
	}
	fmt.Fprintf(o.ErrOut, "operator %s deleted\n", name)
	result := uninstalled{Operator: name, BundleDeployment: name, Namespace: ownedNS}
	if wait {
		if err := o.waitUninstalled(ctx, c, name, ownedNS, timeout); err != nil {
			return err
		}
		result.Gone = true
	}
	if o.Output != "table" {
		return o.Print(result, nil)
	}
	return nil
}

// ownedInstallNamespace is op's install namespace when operator-controller created it for op (and
// removes it with op), else "".
func ownedInstallNamespace(ctx context.Context, c client.Client, op *operatorsv1alpha1.Operator) string {
	nsName := op.Status.InstallNamespace
	if nsName == "" {
		return ""
	}
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: nsName}, ns); err == nil && ns.Labels[ownerNameLabel] == op.Name {
		return nsName
	}
	return ""
}

// waitUninstalled prints what of Operator name is left until it, its BundleDeployment and ownedNS
// (when set) are gone, then what was removed.
func (o *options) waitUninstalled(ctx context.Context, c client.Client, name, ownedNS string, timeout time.Duration) error {
	last := ""
	err := o.poll(ctx, timeout, func(ctx context.Context) (bool, string, error) {
		left, err := uninstallLeft(ctx, c, name, ownedNS)
		if err != nil {
			return false, "", err
		}
		state := "waiting for " + strings.Join(left, ", ") + " to be removed"
		if len(left) > 0 && state != last {
			fmt.Fprintf(o.ErrOut, "operator %s: %s\n", name, state)
			last = state
		}
		return len(left) == 0, state, nil
	})
	if err != nil {
		return fmt.Errorf("operator %s: %w", name, err)
	}
	removed := "Operator and BundleDeployment " + name
	if ownedNS != "" {
		removed += ", namespace " + ownedNS
	}
	fmt.Fprintf(o.ErrOut, "operator %s: uninstalled (%s removed)\n", name, removed)
	return nil
}

// uninstallLeft names what is still there of Operator name: the Operator, its BundleDeployment and
// ownedNS (when set).
func uninstallLeft(ctx context.Context, c client.Client, name, ownedNS string) ([]string, error) {
	var left []string
	for _, obj := range []struct {
		what string
		obj  client.Object
		name string
	}{
		{"Operator", &operatorsv1alpha1.Operator{}, name},
		{"BundleDeployment", &rukpakv1alpha1.BundleDeployment{}, name},
		{"Namespace", &corev1.Namespace{}, ownedNS},
	} {
		if obj.name == "" {
			continue
		}
		err := c.Get(ctx, client.ObjectKey{Name: obj.name}, obj.obj)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, err
		default:
			left = append(left, obj.what+" "+obj.name)
		}
	}
	return left, nil
}
