package cli

// pause and resume set spec.paused of an Operator (`pause|resume NAME`) or a Catalog
// (`catalog pause|resume NAME`) with one merge patch and report the Paused condition that the
// controller (operator-controller or catalogd) sets in answer. --wait waits until that condition
// describes the current generation and says what was asked.

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/output"
)

// pausable is an object with spec.paused and a Paused condition: an Operator or a Catalog.
type pausable struct {
	kind       string // "operator" or "catalog", as messages name it
	command    string // the command that pauses and resumes it, e.g. "kubectl olmv1 catalog"
	controller string // who reports the Paused condition
	condition  string // the Paused condition's type
	obj        client.Object
	paused     func() bool
	conditions func() []metav1.Condition
}

func pausableOperator() *pausable {
	op := &operatorsv1alpha1.Operator{}
	return &pausable{kind: "operator", command: "kubectl olmv1", controller: "operator-controller", condition: operatorsv1alpha1.TypePaused, obj: op,
		paused: func() bool { return op.Spec.Paused }, conditions: func() []metav1.Condition { return op.Status.Conditions }}
}

func pausableCatalog() *pausable {
	cat := &catalogdv1alpha1.Catalog{}
	return &pausable{kind: "catalog", command: "kubectl olmv1 catalog", controller: "catalogd", condition: catalogdv1alpha1.TypePaused, obj: cat,
		paused: func() bool { return cat.Spec.Paused }, conditions: func() []metav1.Condition { return cat.Status.Conditions }}
}

// pauseReport is what pause and resume print with -o yaml|json.
type pauseReport struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Paused is spec.paused after the command.
	Paused bool `json:"paused"`
	// Changed is false when spec.paused already had the value asked for (nothing was patched).
	Changed bool `json:"changed"`
	// Condition is the Paused condition when it describes the current generation, else nil.
	Condition *metav1.Condition `json:"condition,omitempty"`
}

func newPauseCommand(o *options, newTarget func() *pausable, pause bool) *cobra.Command {
	var (
		wait    bool
		timeout time.Duration
	)
	t := newTarget()
	cmd := &cobra.Command{Args: cobra.ExactArgs(1)}
	switch {
	case t.kind == "operator" && pause:
		cmd.Use, cmd.Short = "pause NAME", "Pause an Operator: it stays on its installed bundle until resumed (users)"
		cmd.Long = `Set spec.paused of the Operator NAME to true (a merge patch). operator-controller then keeps it on its
installed bundle whatever its spec or the catalogs say, and pauses its BundleDeployment: nothing is
unpacked, applied or pruned, and drift is not reverted. The Paused condition says since when.
Deleting a paused Operator still uninstalls it. With --wait, waits until operator-controller reports
Paused=True for the current generation, and prints its message.`
		cmd.Example = `  kubectl olmv1 pause my-operator --wait
  kubectl olmv1 pause my-operator -o yaml`
	case t.kind == "operator":
		cmd.Use, cmd.Short = "resume NAME", "Resume a paused Operator: it follows its spec and the catalogs again (users)"
		cmd.Long = `Set spec.paused of the Operator NAME to false (a merge patch). operator-controller resolves it again
at once, so an upgrade that became available during the pause is installed right away. With --wait,
waits until operator-controller reports Paused=False for the current generation (use
` + "`kubectl olmv1 status NAME`" + ` to follow the upgrade).`
		cmd.Example = `  kubectl olmv1 resume my-operator --wait`
	case pause:
		cmd.Use, cmd.Short = "pause NAME", "Pause a Catalog: nothing is unpacked or polled, its current content stays served (users)"
		cmd.Long = `Set spec.paused of the Catalog NAME to true (a merge patch). catalogd then stops unpacking and
polling it; spec and source changes are not acted on, and the content it serves now stays served.
With --wait, waits until catalogd reports Paused=True for the current generation, and prints its
message.`
		cmd.Example = `  kubectl olmv1 catalog pause operatorhub --wait`
	default:
		cmd.Use, cmd.Short = "resume NAME", "Resume a paused Catalog: what changed during the pause is unpacked at once (users)"
		cmd.Long = `Set spec.paused of the Catalog NAME to false (a merge patch). catalogd resolves its source again at
once and unpacks whatever changed during the pause. With --wait, waits until catalogd reports
Paused=False for the current generation and then until the current spec is served, as
` + "`catalog add --wait`" + ` does.`
		cmd.Example = `  kubectl olmv1 catalog resume operatorhub --wait`
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c, err := o.Client()
		if err != nil {
			return err
		}
		t := newTarget()
		rep, err := o.setPaused(cmd.Context(), c, t, args[0], pause, wait, timeout)
		if err != nil {
			return err
		}
		if wait && t.kind == "catalog" && !pause {
			if err := o.waitCatalogServing(cmd.Context(), c, args[0], timeout); err != nil {
				return fmt.Errorf("catalog %s: resumed, but %w", args[0], err)
			}
		}
		return o.Print(rep, func() *output.Table { return pauseTable(rep) })
	}
	cmd.Flags().BoolVar(&wait, "wait", false, fmt.Sprintf("wait until %s reports Paused=%s for the current generation", t.controller, conditionWord(pause)))
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long --wait waits")
	return cmd
}

// setPaused sets spec.paused of the object named name to pause (unless it has that value already),
// optionally waits for the Paused condition to say so, and reports on stderr what happened and what
// the condition says.
func (o *options) setPaused(ctx context.Context, c client.Client, t *pausable, name string, pause, wait bool, timeout time.Duration) (*pauseReport, error) {
	key := client.ObjectKey{Name: name}
	if err := c.Get(ctx, key, t.obj); err != nil {
		return nil, fmt.Errorf("%s %s: %w", t.kind, name, err)
	}
	rep := &pauseReport{Kind: t.kind, Name: name, Paused: pause}
	if t.paused() == pause {
		if pause {
			fmt.Fprintf(o.ErrOut, "%s %s is already paused (spec.paused is true); nothing changed\n", t.kind, name)
		} else {
			fmt.Fprintf(o.ErrOut, "%s %s is not paused (spec.paused is false); nothing changed\n", t.kind, name)
		}
	} else {
		patch := fmt.Sprintf(`{"spec":{"paused":%t}}`, pause)
		if err := c.Patch(ctx, t.obj, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			return nil, fmt.Errorf("%s %s: set spec.paused to %t: %w", t.kind, name, pause, err)
		}
		rep.Changed = true
		what := "paused"
		if !pause {
			what = "resumed"
		}
		fmt.Fprintf(o.ErrOut, "%s %s %s (spec.paused set to %t)\n", t.kind, name, what, pause)
	}

	if wait {
		want := metav1.ConditionStatus(conditionWord(pause))
		last := ""
		err := o.poll(ctx, timeout, func(ctx context.Context) (bool, string, error) {
			if err := c.Get(ctx, key, t.obj); err != nil {
				return false, "", err
			}
			state := conditionState(t.conditions(), t.condition, t.obj.GetGeneration())
			line := fmt.Sprintf("%s %s: Paused=%s", t.kind, name, state)
			if line != last {
				fmt.Fprintln(o.ErrOut, line)
				last = line
			}
			p := currentCondition(t.conditions(), t.condition, t.obj.GetGeneration())
			return p != nil && p.Status == want, "Paused=" + state, nil
		})
		if err != nil {
			return nil, fmt.Errorf("%s %s: waiting for Paused=%s (is %s running?): %w", t.kind, name, want, t.controller, err)
		}
	}

	p := currentCondition(t.conditions(), t.condition, t.obj.GetGeneration())
	switch {
	case p != nil && p.Status == metav1.ConditionStatus(conditionWord(pause)):
		rep.Condition = p
		fmt.Fprintf(o.ErrOut, "%s %s: Paused=%s: %s\n", t.kind, name, p.Status, p.Message)
	case pause:
		fmt.Fprintf(o.ErrOut, "%s %s: %s has not reported Paused=True for this change yet (--wait waits for it; %s resume %s undoes the pause)\n",
			t.kind, name, t.controller, t.command, name)
	default:
		fmt.Fprintf(o.ErrOut, "%s %s: %s has not reported Paused=False for this change yet (--wait waits for it)\n", t.kind, name, t.controller)
	}
	return rep, nil
}

func pauseTable(rep *pauseReport) *output.Table {
	t := output.NewTable("NAME", "SPEC.PAUSED", "CONDITION", "MESSAGE")
	cond, msg := "not reported yet", ""
	if rep.Condition != nil {
		cond, msg = "Paused="+string(rep.Condition.Status), rep.Condition.Message
	}
	t.Add(rep.Name, fmt.Sprint(rep.Paused), cond, msg)
	return t
}

// currentCondition is the condition of type typ when it describes generation, else nil.
func currentCondition(conds []metav1.Condition, typ string, generation int64) *metav1.Condition {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil || c.ObservedGeneration != generation {
		return nil
	}
	return c
}

// conditionState describes a condition for a progress line.
func conditionState(conds []metav1.Condition, typ string, generation int64) string {
	c := meta.FindStatusCondition(conds, typ)
	switch {
	case c == nil:
		return "<none>"
	case c.ObservedGeneration != generation:
		return fmt.Sprintf("%s (%s, of generation %d; the current one is %d)", c.Status, c.Reason, c.ObservedGeneration, generation)
	}
	return fmt.Sprintf("%s (%s)", c.Status, c.Reason)
}

func conditionWord(b bool) string {
	if b {
		return string(metav1.ConditionTrue)
	}
	return string(metav1.ConditionFalse)
}
