// Package controller holds catalogd's Catalog reconciler: unpack the source, parse and validate the
// file-based catalog, store it and swap it in atomically, and report what is served in status.
package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/catalogd/internal/replica"
	"github.com/olmv1/olmv1/catalogd/internal/serve"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
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
	// Recorder emits an Event on every condition change (optional).
	Recorder events.EventRecorder
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
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{},
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

func deletingPredicate() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetDeletionTimestamp() != nil })
}

// Reconcile runs the steps: finalize (when deleting) or ensureFinalizer → (paused? report and stop,
// see pause.go) → unpack → parse → store, then sets the conditions once and patches status once.
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
	if err := r.ensureFinalizer(ctx, cat); err != nil {
		return ctrl.Result{}, err
	}
	if cat.Spec.Paused {
		return r.reconcilePaused(ctx, cat)
	}

	before := cat.DeepCopy()
	served, _ := r.Loader.Store.Get(cat.Name)
	if needsPending(cat) {
		// Say that the new generation is being unpacked before a possibly long fetch.
		setConditions(cat, unpackOutcome{reason: catalogdv1alpha1.ReasonPending,
			message: fmt.Sprintf("unpacking generation %d", cat.Generation)}, served)
		if err := r.patchStatus(ctx, before, cat); err != nil {
			return ctrl.Result{}, err
		}
		before = cat.DeepCopy()
	}

	out, stepErr := r.unpackAndStore(ctx, cat)
	if stepErr != nil {
		r.keepLastGood(ctx, cat)
	}
	served, _ = r.Loader.Store.Get(cat.Name)
	setConditions(cat, out, served)
	if err := r.patchStatus(ctx, before, cat); err != nil {
		return ctrl.Result{}, errors.Join(stepErr, err)
	}

	res := ctrl.Result{}
	if pi := cat.Spec.Source.PollInterval(); pi > 0 {
		res.RequeueAfter = pi
	}
	if stepErr != nil && retryable(stepErr) {
		// A server that said when to come back (Retry-After) is asked again then; otherwise the
		// controller's rate limiter backs off exponentially, per Catalog.
		if after := source.RetryAfterOf(stepErr); after > 0 {
			l.Info("unpack failed, retrying when the server asked", "error", stepErr.Error(), "after", after)
			return ctrl.Result{RequeueAfter: after}, nil
		}
		l.Info("unpack failed, retrying with backoff", "error", stepErr.Error())
		return ctrl.Result{}, stepErr
	}
	return res, nil
}

// needsPending is true when the current generation has not been looked at yet.
func needsPending(cat *catalogdv1alpha1.Catalog) bool {
	c := meta.FindStatusCondition(cat.Status.Conditions, catalogdv1alpha1.TypeUnpacked)
	return c == nil || c.ObservedGeneration != cat.Generation
}

// stepError carries the Unpacked reason of a failed step and whether retrying can help.
type stepError struct {
	reason    string
	retryable bool
	err       error
}

func (e *stepError) Error() string { return e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }

func retryable(err error) bool {
	var se *stepError
	if errors.As(err, &se) {
		return se.retryable
	}
	return true
}

// unpackAndStore fetches the source, parses and validates it, and swaps it in. On success it
// updates the status fields that describe the served content; on failure it leaves them alone, so
// they keep describing the last good content, which is still served.
func (r *CatalogReconciler) unpackAndStore(ctx context.Context, cat *catalogdv1alpha1.Catalog) (unpackOutcome, error) {
	res, err := r.Loader.Load(ctx, replica.Request{Catalog: cat.Name, Source: cat.Spec.Source,
		Previous: cat.Status.ResolvedSource, PreviousHash: cat.Status.ContentHash})
	if err != nil {
		return loadFailure(cat.Generation, err)
	}
	if res.Unchanged {
		cat.Status.ServedGeneration = cat.Generation
		return unpackOutcome{reason: catalogdv1alpha1.ReasonUnpackSucceeded,
			message: fmt.Sprintf("generation %d: %s is unchanged (%s)", cat.Generation, res.Resolved.String(), res.Content.Hash)}, nil
	}
	content, rs := res.Content, res.Resolved
	now := metav1.NewTime(r.Now())
	cat.Status.ResolvedSource = &rs
	cat.Status.ContentHash = content.Hash
	cat.Status.LastUnpacked = &now
	cat.Status.ServedGeneration = cat.Generation
	cat.Status.Counts = &catalogdv1alpha1.CatalogCounts{
		Packages: int32(content.Counts.Packages), Channels: int32(content.Counts.Channels), Bundles: int32(content.Counts.Bundles),
	}
	cat.Status.ContentURL = r.ContentBaseURL + serve.URLPath(cat.Name)
	log.FromContext(ctx).Info("unpacked", "hash", content.Hash, "source", rs.String(), "packages", content.Counts.Packages,
		"channels", content.Counts.Channels, "bundles", content.Counts.Bundles, "bytes", content.Size)
	return unpackOutcome{reason: catalogdv1alpha1.ReasonUnpackSucceeded,
		message: fmt.Sprintf("generation %d: unpacked %s (%s)", cat.Generation, rs.String(), content.Hash)}, nil
}

// loadFailure turns a failed load of generation gen into the Unpacked outcome and a step error.
func loadFailure(gen int64, err error) (unpackOutcome, error) {
	var le *replica.LoadError
	if !errors.As(err, &le) {
		return unpackOutcome{reason: catalogdv1alpha1.ReasonUnpackFailed, message: fmt.Sprintf("generation %d: %v", gen, err)},
			&stepError{reason: catalogdv1alpha1.ReasonUnpackFailed, retryable: true, err: err}
	}
	switch le.Stage {
	case replica.StageUnpack:
		return unpackOutcome{reason: catalogdv1alpha1.ReasonUnpackFailed, message: fmt.Sprintf("generation %d: %v", gen, le.Err)},
			&stepError{reason: catalogdv1alpha1.ReasonUnpackFailed, retryable: source.IsRetryable(le.Err), err: le.Err}
	case replica.StageInvalid:
		return unpackOutcome{reason: catalogdv1alpha1.ReasonInvalidCatalog,
				message: fmt.Sprintf("generation %d: %s is not a valid file-based catalog: %v", gen, le.Resolved.String(), le.Err)},
			&stepError{reason: catalogdv1alpha1.ReasonInvalidCatalog, err: le.Err}
	}
	return unpackOutcome{reason: catalogdv1alpha1.ReasonUnpackFailed, message: fmt.Sprintf("generation %d: %v", gen, le.Err)},
		&stepError{reason: catalogdv1alpha1.ReasonUnpackFailed, retryable: true, err: le.Err}
}

// keepLastGood runs after the current spec failed: when the store does not hold the content the
// status names (this replica was restarted on an empty store, or took over from a leader that
// unpacked it), it loads exactly that content again, so that the last good content stays served.
// A failure is only logged: Serving then says nothing is served.
func (r *CatalogReconciler) keepLastGood(ctx context.Context, cat *catalogdv1alpha1.Catalog) {
	if err := r.loadWhatStatusNames(ctx, cat); err != nil {
		log.FromContext(ctx).Info("the last good content cannot be loaded again either", "hash", cat.Status.ContentHash,
			"source", cat.Status.ResolvedSource.String(), "error", err.Error())
	}
}

// loadWhatStatusNames makes the store hold the content the status names when it does not: it
// loads exactly status.resolvedSource (replica.PinnedSource: the image digest, the git commit) and
// stores it only if its hash is status.contentHash, the way every other replica does. It does
// nothing when the store already holds it or the status names nothing.
func (r *CatalogReconciler) loadWhatStatusNames(ctx context.Context, cat *catalogdv1alpha1.Catalog) error {
	want := cat.Status.ContentHash
	if want == "" || cat.Status.ResolvedSource == nil {
		return nil
	}
	if cur, ok := r.Loader.Store.Get(cat.Name); ok && cur.Hash == want {
		return nil
	}
	src, err := replica.PinnedSource(cat.Spec.Source, cat.Status.ResolvedSource)
	if err == nil {
		_, err = r.Loader.Load(ctx, replica.Request{Catalog: cat.Name, Source: src, WantHash: want})
	}
	if err != nil {
		return err
	}
	log.FromContext(ctx).Info("serving the content the status names again", "hash", want, "source", cat.Status.ResolvedSource.String())
	return nil
}

func (r *CatalogReconciler) ensureFinalizer(ctx context.Context, cat *catalogdv1alpha1.Catalog) error {
	if controllerutil.ContainsFinalizer(cat, Finalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(cat.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.AddFinalizer(cat, Finalizer)
	return r.Client.Patch(ctx, cat, patch)
}

// finalize removes everything stored for the catalog, then the finalizer.
func (r *CatalogReconciler) finalize(ctx context.Context, cat *catalogdv1alpha1.Catalog) error {
	if !controllerutil.ContainsFinalizer(cat, Finalizer) {
		return nil
	}
	if err := r.Loader.Remove(ctx, cat.Name, nil); err != nil {
		return err
	}
	r.event(cat, corev1.EventTypeNormal, "ContentDeleted", "Delete", "removed the stored content of the catalog")
	patch := client.MergeFrom(cat.DeepCopy())
	controllerutil.RemoveFinalizer(cat, Finalizer)
	if err := r.Client.Patch(ctx, cat, patch); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// patchStatus writes status when it changed and emits an Event for each condition that changed.
func (r *CatalogReconciler) patchStatus(ctx context.Context, before, after *catalogdv1alpha1.Catalog) error {
	if equality.Semantic.DeepEqual(before.Status, after.Status) {
		return nil
	}
	if err := r.Client.Status().Patch(ctx, after, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("updating the status of catalog %q: %w", after.Name, err)
	}
	if old, cur := meta.FindStatusCondition(before.Status.Conditions, catalogdv1alpha1.TypePaused),
		meta.FindStatusCondition(after.Status.Conditions, catalogdv1alpha1.TypePaused); cur != nil && cur.Status == metav1.ConditionTrue &&
		(old == nil || old.Status != metav1.ConditionTrue) {
		r.event(after, corev1.EventTypeNormal, catalogdv1alpha1.ReasonPaused, "Pause", "%s", cur.Message)
	}
	for _, t := range []string{catalogdv1alpha1.TypeUnpacked, catalogdv1alpha1.TypeServing} {
		old := meta.FindStatusCondition(before.Status.Conditions, t)
		cur := meta.FindStatusCondition(after.Status.Conditions, t)
		if cur == nil || (old != nil && old.Status == cur.Status && old.Reason == cur.Reason && old.Message == cur.Message) {
			continue
		}
		typ := corev1.EventTypeNormal
		if cur.Status == metav1.ConditionFalse && cur.Reason != catalogdv1alpha1.ReasonPending {
			typ = corev1.EventTypeWarning
		}
		if cur.Reason == catalogdv1alpha1.ReasonServingPreviousContent {
			typ = corev1.EventTypeWarning
		}
		r.event(after, typ, cur.Reason, t, "%s=%s: %s", t, cur.Status, cur.Message)
	}
	return nil
}

func (r *CatalogReconciler) event(cat *catalogdv1alpha1.Catalog, typ, reason, action, note string, args ...any) {
	if r.Recorder == nil {
		return
	}
	r.Recorder.Eventf(cat, nil, typ, reason, action, note, args...)
}
