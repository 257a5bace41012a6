package migrate

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	v0 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/command"
)

// Options are what one run of migrate does.
type Options struct {
	// Subscriptions are the namespace/name of the Subscriptions to migrate; with AllNamespaces, every
	// Subscription of the cluster and every migration a previous run left unfinished.
	Subscriptions []string
	AllNamespaces bool
	DryRun        bool
	// Timeout bounds the wait for each Operator to be Installed.
	Timeout      time.Duration
	PollInterval time.Duration
	// StopAfter > 0 stops each migration after that many steps (tests: a crash between steps).
	StopAfter int
}

// NewCommand returns `kubectl olmv1 migrate`.
func NewCommand(o *command.Options) *cobra.Command {
	opts := Options{}
	var ns string
	cmd := &cobra.Command{
		Use:   "migrate [SUBSCRIPTION...] [-n NAMESPACE] | --all-namespaces",
		Short: "Move operators installed by OLM v0 to OLM v1 in place, without restarting them (users)",
		Long: `Move operators that OLM v0 installed (Subscription, OperatorGroup, CSV) to OLM v1, in place: the
Deployments keep running (same pods, same ReplicaSet), CRDs and custom resources stay.

For each Subscription, a Catalog is created for its CatalogSource's image and an Operator for its
package, channel and installed version (pinned), installPlanApproval (as upgradePolicy), the
OperatorGroup's target namespaces (as watchNamespaces), spec.config (as deploymentConfig) and
collisionPolicy IfNoController, so that OLM v1 adopts the objects OLM v0 created. Once the Operator
is Installed, OLM v0 is told to let go: the Subscription is deleted, OLM v0's marks (ownerReferences
to the CSV, olm.owner labels) are removed, the RBAC OLM v1 replaced is deleted, then the CSV
(propagationPolicy Orphan). docs/migration.md explains the order.

The plan is printed first: every object adopted, created, deleted or released, every difference
between the running pod templates and what OLM v1 renders, and what blocks the move (a CSV not
Succeeded, dependencies, an OperatorGroup shared by several Subscriptions, owned APIServices, a
CatalogSource without an image). Webhook operators are moved in place too (spec.config.olmv0).
--dry-run stops there. Every step can be run again: a migration killed at any
point is finished by running migrate again. Until the Operator is Installed nothing of OLM v0 is
changed; to roll back, delete the Operator (its deletionPolicy is Orphan until the migration ends).`,
		Example: `  kubectl olmv1 migrate my-operator -n operators --dry-run
  kubectl olmv1 migrate my-operator -n operators
  kubectl olmv1 migrate operators/my-operator team-a/other-operator
  kubectl olmv1 migrate --all-namespaces --dry-run`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.AllNamespaces == (len(args) > 0) {
				return errors.New("name SUBSCRIPTIONs (with -n NAMESPACE) or use --all-namespaces")
			}
			for _, a := range args {
				key, err := subscriptionKey(ns, a)
				if err != nil {
					return err
				}
				opts.Subscriptions = append(opts.Subscriptions, key)
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			if opts.PollInterval == 0 {
				opts.PollInterval = o.PollInterval
			}
			return Run(cmd.Context(), c, o, opts)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&ns, "namespace", "n", "default", "namespace of the Subscriptions")
	f.BoolVarP(&opts.AllNamespaces, "all-namespaces", "A", false, "migrate every Subscription of the cluster (and finish every migration left unfinished)")
	f.BoolVar(&opts.DryRun, "dry-run", false, "print the plan and change nothing")
	f.DurationVar(&opts.Timeout, "timeout", 5*time.Minute, "how long to wait for each Operator to be Installed")
	return cmd
}

// Run plans and (unless DryRun) runs the migration of each Subscription. A Subscription that cannot
// be migrated is reported and skipped; the error says how many were not migrated.
func Run(ctx context.Context, c client.Client, o *command.Options, opts Options) error {
	keys := opts.Subscriptions
	if opts.AllNamespaces {
		var err error
		if keys, err = allSubscriptions(ctx, c); err != nil {
			return err
		}
		if len(keys) == 0 {
			return writeString(o.Out, "No OLM v0 Subscription found.\n")
		}
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = time.Second
	}
	var plans []*Plan
	failed := 0
	for _, k := range keys {
		ns, name := splitKey(k)
		m, err := Prepare(ctx, c, ns, name)
		if err != nil {
			return fmt.Errorf("Subscription %s: %w", k, err)
		}
		m.Timeout, m.PollInterval = opts.Timeout, opts.PollInterval
		if m.Timeout == 0 {
			m.Timeout = 5 * time.Minute
		}
		plans = append(plans, m.Plan)
		if o.Output == "" || o.Output == "table" {
			if err := m.Plan.Write(o.Out); err != nil {
				return err
			}
		}
		if len(m.Plan.Blockers) > 0 {
			failed++
			continue
		}
		if opts.DryRun || len(m.Plan.Steps) == 0 {
			continue
		}
		m.Log = func(format string, args ...any) { fmt.Fprintf(o.ErrOut, format+"\n", args...) }
		if err := m.Run(ctx, opts.StopAfter); err != nil {
			if errors.Is(err, ErrStopped) {
				return err
			}
			fmt.Fprintf(o.Out, "Subscription %s: %v\n", k, err)
			failed++
			continue
		}
		fmt.Fprintf(o.Out, "Subscription %s: migrated to Operator %s\n", k, m.Operator)
	}
	if o.Output != "" && o.Output != "table" {
		if err := o.Print(plans, nil); err != nil {
			return err
		}
	}
	if opts.DryRun {
		if err := writeString(o.Out, "(dry run: nothing was changed in the cluster)\n"); err != nil {
			return err
		}
	}
	if failed > 0 {
		return &command.SilentError{Err: fmt.Errorf("%d of %d Subscription(s) not migrated", failed, len(keys))}
	}
	return nil
}

// allSubscriptions lists every Subscription, and the Subscriptions of unfinished migrations whose
// Subscription is already deleted.
func allSubscriptions(ctx context.Context, c client.Client) ([]string, error) {
	var subs []v0.Subscription
	if err := listTyped(ctx, c, GVKSubscription, "", &subs); err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, s := range subs {
		set[s.Namespace+"/"+s.Name] = true
	}
	ops := &operatorsv1alpha1.OperatorList{}
	if err := c.List(ctx, ops); err != nil {
		return nil, err
	}
	for _, op := range ops.Items {
		if ns, sub, _, ok := ParseMigratedFrom(op.Annotations[AnnotationMigratedFrom]); ok && op.Annotations[AnnotationMigrationPhase] != PhaseComplete {
			set[ns+"/"+sub] = true
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}

// subscriptionKey is "<namespace>/<name>" for a SUBSCRIPTION argument: a name, in the -n namespace,
// or NAMESPACE/NAME.
func subscriptionKey(ns, arg string) (string, error) {
	switch parts := strings.Split(arg, "/"); {
	case len(parts) == 1 && arg != "":
		return ns + "/" + arg, nil
	case len(parts) == 2 && parts[0] != "" && parts[1] != "":
		return arg, nil
	default:
		return "", fmt.Errorf("subscription %q: name a Subscription as NAME (in the -n namespace) or NAMESPACE/NAME", arg)
	}
}

func splitKey(k string) (string, string) {
	for i := range k {
		if k[i] == '/' {
			return k[:i], k[i+1:]
		}
	}
	return "default", k
}
