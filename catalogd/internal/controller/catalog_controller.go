// Package controller holds catalogd's Catalog reconciler: unpack the source, parse and validate the
// file-based catalog, store it and swap it in atomically, and report what is served in status.
package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/catalogd/internal/replica"
	"github.com/olmv1/olmv1/platform/conditionevents"
	"github.com/olmv1/olmv1/platform/objmeta"
	"github.com/olmv1/olmv1/platform/statuspatch"
	"github.com/olmv1/olmv1/platform/step"
)

// Finalizer removes a Catalog's stored and cached content before the Catalog goes away.
const Finalizer = "catalogd.operatorframework.io/delete-content"

// CatalogReconciler reconciles Catalogs. It runs on the leader only and is the only writer of
// status; every other replica serves what the status names through replica.Syncer.
type CatalogReconciler struct {
	Client client.Client
	// Reader reads Catalogs without the cache (start-up clean-up of orphaned content); defaults to
	// the manager's API reader.
	Reader client.Reader
	// Loader fetches, parses and stores content (and removes it); give the same Loader to the
	// replica.Syncer of this process. Its Namespace is where the ConfigMaps and Secrets named by
	// sources are read from, and whose ConfigMaps are watched.
	Loader *replica.Loader
	// ContentBaseURL is the scheme and address of the content endpoint, e.g. https://127.0.0.1:7082;
	// status.contentURL is ContentBaseURL + /catalogs/<name>/all.json.
	ContentBaseURL string
	// Recorder, when set, records Events on Catalogs through conditionevents: one per condition
	// change (eventPolicy) and ContentDeleted when the finalizer removed the content.
	Recorder conditionevents.Recorder
	// Now is the clock (optional, for tests).
	Now func() time.Time
	// MaxConcurrentUnpacks is how many Catalogs are reconciled (unpacked, parsed, stored) at once;
	// 0 means 1. Each costs memory of the order of its largest packages (see docs/catalogd.md,
	// "Sizing").
	MaxConcurrentUnpacks int
}

// SetupWithManager registers the reconciler: it watches Catalogs (spec changes and deletions) and the
// ConfigMaps of Namespace that ConfigMaps sources name.
func (r *CatalogReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.Reader == nil {
		r.Reader = mgr.GetAPIReader()
	}
	if err := mgr.Add(orphanRemover{r: r}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&catalogdv1alpha1.Catalog{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, nameLabelLost(),
			deletingPredicate()))).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.MaxConcurrentUnpacks, 1)}).
		Named("catalog")
	if r.Loader.Namespace != "" {
		cms, err := r.configMapSource(mgr)
		if err != nil {
			return err
		}
		b = b.WatchesRawSource(cms)
	}
	return b.Complete(r)
}

// nameLabelLost passes a Catalog whose name label (catalogdv1alpha1.LabelMetadataName) is missing or
// wrong, so that ensureMetadata puts it back; catalogd's own label patch does not pass (it would
// unpack the Catalog a second time).
func nameLabelLost() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetLabels()[catalogdv1alpha1.LabelMetadataName] != o.GetName()
	})
}

func deletingPredicate() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetDeletionTimestamp() != nil })
}

// Reconcile runs the steps: finalize (when deleting) or ensureMetadata (finalizer, name label) → (paused? report and stop,
// see pause.go) → reportPending → unpack → parse → store (unpack.go), then sets the conditions once
// (status.go) and patches status once. step.Result turns the step error into the result: a
// terminal failure waits for a spec change or the next poll, others are retried with backoff or
// when the server asked.
func (r *CatalogReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	l := log.FromContext(ctx).WithValues("catalog", req.Name)
	ctx = log.IntoContext(ctx, l)
	cat := &catalogdv1alpha1.Catalog{}
	if err := r.Client.Get(ctx, req.NamespacedName, cat); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !cat.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, cat)
	}
	if err := r.ensureMetadata(ctx, cat); err != nil {
		return ctrl.Result{}, err
	}
	if cat.Spec.Paused {
		return r.reconcilePaused(ctx, cat)
	}
	before, err := r.reportPending(ctx, cat)
	if err != nil {
		return ctrl.Result{}, err
	}

	done, stepErr := r.unpackSteps(ctx, cat)
	if stepErr != nil {
		r.keepLastGood(ctx, cat)
		logStepError(l, stepErr)
	}
	served, _ := r.Loader.Store.Get(cat.Name)
	setConditions(cat, outcome(cat.Generation, done, stepErr), served)
	if err := r.patchStatus(ctx, before, cat); err != nil {
		// Not joined with stepErr: a failed patch is retried even after a terminal step error.
		return ctrl.Result{}, err
	}
	return result(cat, stepErr)
}

// result is what Reconcile returns after the unpack steps ended with stepErr: success and terminal
// failures look again at the next poll (spec.source's pollInterval, if any: an image republished
// under the same tag may fix it); other failures are retried when the server asked (Retry-After),
// else with the controller's per-Catalog exponential backoff.
func result(cat *catalogdv1alpha1.Catalog, stepErr error) (ctrl.Result, error) {
	ok := ctrl.Result{}
	if pi := cat.Spec.Source.PollInterval(); pi > 0 {
		ok.RequeueAfter = pi
	}
	return step.Result(stepErr, ok)
}

// reportPending says that the current generation is being unpacked, before a possibly long fetch,
// when it has not been looked at yet. It returns the Catalog as its status now stands.
func (r *CatalogReconciler) reportPending(ctx context.Context, cat *catalogdv1alpha1.Catalog) (*catalogdv1alpha1.Catalog, error) {
	before := cat.DeepCopy()
	c := meta.FindStatusCondition(cat.Status.Conditions, catalogdv1alpha1.TypeUnpacked)
	if c != nil && c.ObservedGeneration == cat.Generation {
		return before, nil
	}
	served, _ := r.Loader.Store.Get(cat.Name)
	setConditions(cat, unpackOutcome{reason: catalogdv1alpha1.ReasonPending,
		message: fmt.Sprintf("unpacking generation %d", cat.Generation)}, served)
	if err := r.patchStatus(ctx, before, cat); err != nil {
		return nil, err
	}
	return cat.DeepCopy(), nil
}

// logStepError says how a failed unpack step is retried.
func logStepError(l logr.Logger, err error) {
	se, _ := step.As(err)
	switch {
	case se != nil && se.RetryAfter > 0:
		l.Info("unpack failed, retrying when the server asked", "error", err.Error(), "after", se.RetryAfter)
	case step.IsTerminal(err):
		l.Info("unpack failed, retrying cannot help: waiting for a spec change or the next poll", "error", err.Error())
	default:
		l.Info("unpack failed, retrying with backoff", "error", err.Error())
	}
}

// ensureMetadata gives the Catalog catalogd's finalizer and the name label
// (catalogdv1alpha1.LabelMetadataName), in one patch when either is missing or the label was
// changed.
func (r *CatalogReconciler) ensureMetadata(ctx context.Context, cat *catalogdv1alpha1.Catalog) error {
	return objmeta.Ensure(ctx, r.Client, cat, "Catalog", Finalizer, map[string]string{catalogdv1alpha1.LabelMetadataName: cat.Name})
}

// finalize removes everything stored for the catalog, then the finalizer.
func (r *CatalogReconciler) finalize(ctx context.Context, cat *catalogdv1alpha1.Catalog) error {
	if !controllerutil.ContainsFinalizer(cat, Finalizer) {
		return nil
	}
	if err := r.Loader.Remove(ctx, cat.Name, nil); err != nil {
		return err
	}
	conditionevents.Normal(r.Recorder, cat, "ContentDeleted", "Delete", "removed the stored content of the catalog")
	return client.IgnoreNotFound(objmeta.RemoveFinalizer(ctx, r.Client, cat, "Catalog", Finalizer))
}

// eventPolicy is catalogd's: Paused=False is no failure, a Pending Unpacked is progress, and
// serving the previous content is a Warning although Serving is True.
var eventPolicy = conditionevents.Policy{
	NotFailures: []string{catalogdv1alpha1.TypePaused},
	Progressing: []string{catalogdv1alpha1.ReasonPending},
	Warnings:    []string{catalogdv1alpha1.ReasonServingPreviousContent},
}

// patchStatus writes status when it changed and records an Event for each condition transition.
func (r *CatalogReconciler) patchStatus(ctx context.Context, before, after *catalogdv1alpha1.Catalog) error {
	patched, err := statuspatch.IfChanged(ctx, r.Client, "Catalog", before, after, catalogStatus)
	if patched {
		eventPolicy.Record(r.Recorder, after, before.Status.Conditions, after.Status.Conditions)
	}
	return err
}

func catalogStatus(c *catalogdv1alpha1.Catalog) catalogdv1alpha1.CatalogStatus { return c.Status }
