package migrate

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
)

// ErrStopped is returned when Migrator.StopAfter stopped a migration between two steps.
var ErrStopped = errors.New("stopped between steps (StopAfter)")

// Step is one step of a migration. Each is idempotent and decides from the cluster whether it has
// anything left to do, so a migration killed anywhere is finished by running migrate again.
type Step struct {
	Name string
	// skipFrom: the step is skipped once the Operator's phase reached it ("" never skipped).
	skipFrom string
	do       func(ctx context.Context, m *Migration) error
}

// Steps are the steps of a migration, in order. See docs/migration.md for why in this order.
var Steps = []Step{
	{Name: "mark the Subscription as being migrated", skipFrom: PhaseReleasing, do: annotateSubscription},
	{Name: "create the Catalog", skipFrom: PhaseReleasing, do: createCatalog},
	{Name: "clear the controller flag of ownerReferences to the CSV on the objects to adopt", skipFrom: PhaseReleasing, do: clearControllerFlags},
	{Name: "create the Operator (collisionPolicy IfNoController, deletionPolicy Orphan)", skipFrom: PhaseReleasing, do: createOperator},
	{Name: "wait until the Operator is Installed and Healthy and OLM v1 owns every adopted object", skipFrom: PhaseReleasing, do: waitInstalled},
	{Name: "record phase Releasing on the Operator", skipFrom: PhaseReleasing, do: setPhase(PhaseReleasing)},
	{Name: "delete the Subscription (OLM v0 stops resolving and upgrading)", skipFrom: PhaseComplete, do: deleteSubscription},
	{Name: "remove OLM v0's labels from cluster-scoped objects (OLM v0 deletes what they select with the CSV)", skipFrom: PhaseComplete, do: releaseClusterScoped},
	{Name: "remove ownerReferences to the CSV (the garbage collector deletes what they point from)", skipFrom: PhaseComplete, do: removeOwnerReferences},
	{Name: "delete OLM v0's RBAC that OLM v1 replaced", skipFrom: PhaseComplete, do: deleteSuperseded},
	{Name: "delete the CSV (propagationPolicy Orphan), its copies and its OperatorCondition", skipFrom: PhaseComplete, do: deleteCSV},
	{Name: "remove OLM v0's labels from the remaining objects", skipFrom: PhaseComplete, do: releaseNamespaced},
	{Name: "set deletionPolicy Delete and phase Complete on the Operator", skipFrom: PhaseComplete, do: complete},
}

// Migration is one Subscription's migration in progress.
type Migration struct {
	c client.Client
	// Namespace, Subscription and CSV name the OLM v0 installation.
	Namespace, Subscription, CSV, Package string
	// Operator is the name of the Operator replacing it.
	Operator string
	Target   *Target
	Plan     *Plan
	// Timeout bounds the wait for Installed; PollInterval is how often it reads.
	Timeout, PollInterval time.Duration
	// Log receives one line per step run.
	Log func(format string, args ...any)
}

// Run runs the steps not yet done. stopAfter > 0 returns ErrStopped after that many steps have run
// (tests: a crash between two steps).
func (m *Migration) Run(ctx context.Context, stopAfter int) error {
	ran := 0
	for i, s := range Steps {
		op, err := m.operator(ctx)
		if err != nil {
			return err
		}
		phase := ""
		if op != nil {
			phase = op.Annotations[AnnotationMigrationPhase]
		}
		if phaseReached(phase, s.skipFrom) {
			continue
		}
		if m.Log != nil {
			m.Log("step %d/%d: %s", i+1, len(Steps), s.Name)
		}
		if err := s.do(ctx, m); err != nil {
			return fmt.Errorf("step %d (%s): %w", i+1, s.Name, err)
		}
		ran++
		if stopAfter > 0 && ran >= stopAfter {
			return ErrStopped
		}
	}
	return nil
}

var phaseOrder = map[string]int{"": 0, PhaseAdopting: 1, PhaseReleasing: 2, PhaseComplete: 3}

func phaseReached(phase, from string) bool {
	return from != "" && phaseOrder[phase] >= phaseOrder[from]
}

func (m *Migration) operator(ctx context.Context) (*operatorsv1alpha1.Operator, error) {
	op := &operatorsv1alpha1.Operator{}
	if err := m.c.Get(ctx, types.NamespacedName{Name: m.Operator}, op); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	if op.Annotations[AnnotationMigratedFrom] != MigratedFrom(m.Namespace, m.Subscription, m.CSV) {
		return nil, fmt.Errorf("Operator %s exists and was not created by this migration (annotation %s is %q): delete or rename it, or keep this operator on OLM v0",
			m.Operator, AnnotationMigratedFrom, op.Annotations[AnnotationMigratedFrom])
	}
	return op, nil
}

func (m *Migration) v0(ctx context.Context) (*V0, error) {
	return ReadV0(ctx, m.c, m.Namespace, m.Subscription, m.CSV, m.Package)
}
