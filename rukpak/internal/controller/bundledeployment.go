// Package controller reconciles BundleDeployments: ensureFinalizer → unpack → render → apply →
// checkHealth, then the Unpacked, Installed and Healthy conditions are set in one place and the
// status is patched once (only when it changed). Several BundleDeployments are reconciled at once
// (MaxConcurrentReconciles); applied objects and the EndpointSlices of webhook Services are watched
// through the label-scoped cache (Watches); release records, metadata only, on a cache of their own
// (release_watch.go); Metrics documents rukpak's Prometheus metrics.
package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/apply"
	"github.com/olmv1/olmv1/rukpak/internal/health"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
)

const (
	// Finalizer makes deleting a BundleDeployment uninstall what it applied.
	Finalizer = "core.rukpak.io/uninstall"
	// DeleteCRDsAnnotation set to "true" on a BundleDeployment makes its deletion also delete the
	// CustomResourceDefinitions it installed, and with them every custom resource of those kinds.
	// By default CRDs (and so users' data) are left in place.
	DeleteCRDsAnnotation = "core.rukpak.io/delete-crds-on-uninstall"
	// SkipCRDUpgradeSafetyAnnotation set to "true" disables the CRD upgrade-safety preflight.
	SkipCRDUpgradeSafetyAnnotation = "core.rukpak.io/skip-crd-upgrade-safety"

	// unhealthyRecheck is how often an unhealthy BundleDeployment is looked at again even when no
	// watched object changes (the watches of applied objects and of webhook Services' EndpointSlices
	// usually reconcile it sooner).
	unhealthyRecheck = 30 * time.Second
)

// Preflight checks the objects of a new revision against the cluster before they are applied.
type Preflight func(ctx context.Context, objs []*unstructured.Unstructured) error

// BundleDeploymentReconciler installs BundleDeployments.
type BundleDeploymentReconciler struct {
	// Client reads BundleDeployments and writes their status and finalizer.
	Client client.Client
	// HealthReader reads the applied objects (the label-scoped cache).
	HealthReader client.Reader
	// EndpointReader reads the EndpointSlices of webhook Services; when nil, webhook endpoints are not
	// checked. It reads the API server, not the label-scoped cache, so that slices which do not carry
	// their Service's labels count too; changes of those that do are watched (Watches).
	EndpointReader client.Reader
	// Unpacker fetches spec.source.
	Unpacker source.Unpacker
	// Renderers by provisioner class; a class without one is reported as not supported.
	Renderers map[rukpakv1alpha1.ProvisionerClassName]provisioner.Renderer
	// Engine applies revisions.
	Engine *apply.Engine
	// Preflight runs before a new revision unless the BundleDeployment opts out (optional).
	Preflight Preflight
	// Namespace is rukpak's namespace (Secrets and ConfigMaps named by sources).
	Namespace string
	// Recorder emits events on the BundleDeployment (optional).
	Recorder record.EventRecorder
	// Watches starts label-scoped watches of the applied kinds (optional).
	Watches *Watches
	// ValuesWatch watches the Secrets and ConfigMaps named by helm valuesFrom (optional: without it a
	// change to them is seen at the next reconcile).
	ValuesWatch *ValuesWatch
	// MaxConcurrentReconciles is how many BundleDeployments are reconciled at once (default 1).
	// controller-runtime never reconciles the same BundleDeployment twice at once, and everything a
	// reconcile touches is either its own (its Helm release, its unpack cache key) or safe for
	// concurrent use (the unpacker, the watches, the renderers), so installs of different bundles
	// proceed in parallel.
	MaxConcurrentReconciles int
	// Metrics records step durations, condition counts and revisions (optional).
	Metrics *Metrics
	// RateLimiter spaces the retries of failed reconciles (default: controller-runtime's, per
	// BundleDeployment doubling from 5 ms up to 1000 s).
	RateLimiter workqueue.TypedRateLimiter[reconcile.Request]

	// resync feeds ResyncAll's events to the controller.
	resync chan event.GenericEvent
	// triggers tells health-only reconciles from others; installed remembers what the last apply of
	// each BundleDeployment installed, for them.
	triggers  *triggers
	installed sync.Map // BundleDeployment name → *installedState
	// healthyMarked is, per BundleDeployment, the revision last recorded as Healthy (MarkHealthy).
	healthyMarked sync.Map
}

// installedState is what a health-only reconcile needs from the last apply of a BundleDeployment,
// and what the BundleDeployment looked like then.
type installedState struct {
	generation  int64
	annotations map[string]string
	revision    int
	objects     int
	plan        health.Plan
	leftAlone   []string
	description string
	heldBack    string
}

// stepError is a failed step: which condition it fails, with which reason, and whether retrying can
// help.
type stepError struct {
	condition string
	reason    string
	terminal  bool
	// retryAfter, when set, looks again after this long instead of backing off.
	retryAfter time.Duration
	err        error
}

func (e *stepError) Error() string { return e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }

// state is what the steps of one reconcile learn.
type state struct {
	unpacked *source.Result
	hash     string
	objects  []client.Object
	applied  *apply.Result
	// count and plan describe what is installed: the applied objects, or those of the last apply
	// when a health-only reconcile applied nothing.
	count   int
	plan    health.Plan
	healthy error
	// leftAlone are objects a new revision dropped but did not delete: another owner holds them.
	leftAlone []string
	// description is what the renderer chose (the registry+v1 install mode), for the status.
	description string
	// info is recorded with a new revision besides the content hash and resolved source (helm: the
	// chart version and values hash).
	info map[string]interface{}
	// progress is what the progress deadline decided (nil without one, or while healthy).
	progress *progress
	// historyChanged: a revision's record changed (it became Healthy); status.history is refreshed.
	historyChanged bool
}

// Reconcile implements reconcile.Reconciler.
func (r *BundleDeploymentReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	bd := &rukpakv1alpha1.BundleDeployment{}
	if err := r.Client.Get(ctx, req.NamespacedName, bd); err != nil {
		if apierrors.IsNotFound(err) {
			r.Metrics.forget(req.Name)
			r.installed.Delete(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !bd.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, bd) // also while paused (pause.go)
	}
	if err := r.ensureFinalizer(ctx, bd); err != nil {
		return ctrl.Result{}, err
	}
	if r.ValuesWatch != nil {
		r.ValuesWatch.Track(bd)
	}
	if bd.Spec.Paused {
		return r.reconcilePaused(ctx, bd)
	}

	orig := bd.DeepCopy()
	st := &state{}
	var err error
	if !r.healthOnly(bd, st) {
		err = r.unpack(ctx, bd, st)
		if err == nil {
			err = r.render(ctx, bd, st)
		}
		if err == nil {
			err = r.apply(ctx, bd, st)
		}
	}
	if err == nil {
		r.checkHealth(ctx, st)
		r.checkProgress(ctx, bd, st)
	}
	r.setStatus(bd, st, err)
	r.Metrics.observe(bd)
	r.emitEvents(orig, bd, st)
	// Most reconciles (drift and health events) change nothing: no request then.
	if !equality.Semantic.DeepEqual(orig.Status, bd.Status) {
		if perr := r.Client.Status().Patch(ctx, bd, client.MergeFrom(orig)); perr != nil {
			return ctrl.Result{}, fmt.Errorf("patching the status of BundleDeployment %q: %w", bd.Name, perr)
		}
	}

	var se *stepError
	switch {
	case errors.As(err, &se) && se.terminal:
		log.FromContext(ctx).Info("cannot proceed until the BundleDeployment or its bundle changes", "reason", se.reason, "message", se.err.Error())
		return ctrl.Result{}, nil
	case errors.As(err, &se) && se.retryAfter > 0:
		log.FromContext(ctx).Info("cannot proceed; looking again later", "reason", se.reason, "message", se.err.Error(), "after", se.retryAfter)
		return ctrl.Result{RequeueAfter: se.retryAfter}, nil
	case err != nil:
		return ctrl.Result{}, err
	case st.progress != nil && st.progress.recheck > 0 && st.progress.recheck < unhealthyRecheck:
		return ctrl.Result{RequeueAfter: st.progress.recheck}, nil // the deadline passes before the re-check
	case st.healthy != nil:
		return ctrl.Result{RequeueAfter: unhealthyRecheck}, nil
	}
	return ctrl.Result{RequeueAfter: bd.Spec.Source.PollInterval()}, nil
}

// healthOnly prepares a reconcile that only checks health, and reports whether this is one: when the
// only events since the last reconcile were status changes of applied objects or endpoint changes,
// and the BundleDeployment is as it was when its installed revision was applied. Drift, deletions of
// applied objects, changes of the BundleDeployment, re-checks and source polls always apply.
func (r *BundleDeploymentReconciler) healthOnly(bd *rukpakv1alpha1.BundleDeployment, st *state) bool {
	if !r.triggers.take(bd.Name) {
		return false
	}
	v, ok := r.installed.Load(bd.Name)
	if !ok {
		return false
	}
	last := v.(*installedState)
	if last.generation != bd.Generation || !maps.Equal(last.annotations, bd.Annotations) || int64(last.revision) != bd.Status.InstalledRevision ||
		!meta.IsStatusConditionTrue(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled) {
		return false
	}
	st.applied = &apply.Result{Revision: last.revision, HeldBack: last.heldBack}
	st.count, st.plan, st.leftAlone, st.description = last.objects, last.plan, last.leftAlone, last.description
	return true
}

func (r *BundleDeploymentReconciler) ensureFinalizer(ctx context.Context, bd *rukpakv1alpha1.BundleDeployment) error {
	if controllerutil.ContainsFinalizer(bd, Finalizer) {
		return nil
	}
	patch := client.MergeFrom(bd.DeepCopy())
	controllerutil.AddFinalizer(bd, Finalizer)
	return r.Client.Patch(ctx, bd, patch)
}

func (r *BundleDeploymentReconciler) finalize(ctx context.Context, bd *rukpakv1alpha1.BundleDeployment) error {
	if !controllerutil.ContainsFinalizer(bd, Finalizer) {
		return nil
	}
	orphan := bd.Spec.DeletionPolicy == rukpakv1alpha1.DeletionPolicyOrphan
	revs, err := r.Engine.History(bd.Name)
	if err != nil {
		if r.Recorder != nil {
			r.Recorder.Eventf(bd, "Warning", "UninstallFailed", "reading the revision history: %v", err)
		}
		return fmt.Errorf("reading the revision history of BundleDeployment %q: %w", bd.Name, err)
	}
	leftAlone, err := r.Engine.Uninstall(ctx, bd.Name, bd.Annotations[DeleteCRDsAnnotation] == "true", orphan)
	if len(leftAlone) > 0 && r.Recorder != nil {
		r.Recorder.Eventf(bd, "Normal", "LeftAlone", "left %d object(s) in place that another owner holds now: %s", len(leftAlone), keyList(leftAlone))
	}
	if err != nil {
		if r.Recorder != nil {
			r.Recorder.Eventf(bd, "Warning", "UninstallFailed", "uninstalling: %v", err)
		}
		return fmt.Errorf("uninstalling BundleDeployment %q: %w", bd.Name, err)
	}
	if orphan && len(revs) > 0 && r.Recorder != nil { // once, not again on the reconcile that sees the finalizer go
		r.Recorder.Event(bd, "Normal", "Orphaned", "deletionPolicy Orphan: every installed object was left in place without rukpak's ownership labels")
	}
	if err := r.Unpacker.Cleanup(ctx, unpackKey(bd)); err != nil {
		return fmt.Errorf("removing the unpacked content of BundleDeployment %q: %w", bd.Name, err)
	}
	patch := client.MergeFrom(bd.DeepCopy())
	controllerutil.RemoveFinalizer(bd, Finalizer)
	if err := r.Client.Patch(ctx, bd, patch); err != nil {
		return client.IgnoreNotFound(err)
	}
	r.Metrics.forget(bd.Name)
	r.installed.Delete(bd.Name)
	r.healthyMarked.Delete(bd.Name)
	if r.ValuesWatch != nil {
		r.ValuesWatch.Forget(bd.Name)
	}
	return nil
}

// keyList names at most five objects.
func keyList(keys []string) string {
	var names []string
	for i, k := range keys {
		if i == 5 {
			names = append(names, fmt.Sprintf("and %d more", len(keys)-5))
			break
		}
		names = append(names, k)
	}
	return strings.Join(names, ", ")
}

func unpackKey(bd *rukpakv1alpha1.BundleDeployment) string { return "bundledeployment/" + bd.Name }

func (r *BundleDeploymentReconciler) unpack(ctx context.Context, bd *rukpakv1alpha1.BundleDeployment, st *state) error {
	defer r.Metrics.observeStep(StepUnpack, time.Now())
	if r.Renderers[bd.Spec.ProvisionerClassName] == nil {
		return &stepError{condition: rukpakv1alpha1.TypeInstalled, reason: rukpakv1alpha1.ReasonInstallFailed, terminal: true,
			err: fmt.Errorf("provisioner %q is not supported by this rukpak; use one of %v", bd.Spec.ProvisionerClassName, r.classes())}
	}
	res, err := r.Unpacker.Unpack(ctx, unpackKey(bd), bd.Spec.Source, source.Options{
		Namespace: r.Namespace,
		Previous:  bd.Status.ResolvedSource,
	})
	if err != nil {
		// retryAfter: a server that said when to come back (Retry-After) is asked again then.
		return &stepError{condition: rukpakv1alpha1.TypeUnpacked, reason: rukpakv1alpha1.ReasonUnpackFailed, retryAfter: source.RetryAfterOf(err), err: err}
	}
	st.unpacked = res
	if res.Unchanged && bd.Status.ContentHash != "" {
		st.hash = bd.Status.ContentHash
		return nil
	}
	st.hash, err = ContentHash(os.DirFS(res.Dir))
	if err != nil {
		return &stepError{condition: rukpakv1alpha1.TypeUnpacked, reason: rukpakv1alpha1.ReasonUnpackFailed,
			err: fmt.Errorf("hashing the unpacked content in %s: %w", res.Dir, err)}
	}
	return nil
}

func (r *BundleDeploymentReconciler) render(ctx context.Context, bd *rukpakv1alpha1.BundleDeployment, st *state) error {
	defer r.Metrics.observeStep(StepRender, time.Now())
	res, err := provisioner.RenderDescribed(ctx, r.Renderers[bd.Spec.ProvisionerClassName], provisioner.Request{
		Content:          os.DirFS(st.unpacked.Dir),
		Name:             bd.Name,
		InstallNamespace: bd.Spec.InstallNamespace,
		Config:           bd.Spec.Config,
	})
	var invalid *provisioner.InvalidBundleError
	switch {
	case errors.As(err, &invalid):
		reason := invalid.Reason
		if reason == "" {
			reason = rukpakv1alpha1.ReasonInvalidBundle
		}
		return &stepError{condition: rukpakv1alpha1.TypeUnpacked, reason: reason, terminal: true, err: err}
	case err != nil:
		return &stepError{condition: rukpakv1alpha1.TypeUnpacked, reason: rukpakv1alpha1.ReasonInvalidBundle, err: fmt.Errorf("rendering the bundle: %w", err)}
	}
	st.objects, st.description = res.Objects, res.Description
	if rd, ok := r.Renderers[bd.Spec.ProvisionerClassName].(revisionDescriber); ok {
		st.info = map[string]interface{}{}
		for k, v := range rd.RevisionInfo(bd.Name) {
			st.info[k] = v
		}
	}
	return nil
}

// revisionDescriber is a Renderer that tells what its last render of a BundleDeployment used, to be
// recorded with a new revision (the helm renderer: chart version and values hash).
type revisionDescriber interface {
	RevisionInfo(name string) map[string]string
}

// applyRequest is what every apply of bd has in common: names, policies and the preflight.
func (r *BundleDeploymentReconciler) applyRequest(bd *rukpakv1alpha1.BundleDeployment) apply.Request {
	req := apply.Request{
		Name:            bd.Name,
		Namespace:       bd.Spec.InstallNamespace,
		CollisionPolicy: bd.Spec.CollisionPolicy,
		Attempt:         attempt(bd),
	}
	if r.Preflight != nil && bd.Annotations[SkipCRDUpgradeSafetyAnnotation] != "true" {
		req.Preflight = r.Preflight
	}
	return req
}

func (r *BundleDeploymentReconciler) apply(ctx context.Context, bd *rukpakv1alpha1.BundleDeployment, st *state) error {
	req := r.applyRequest(bd)
	req.Objects = st.objects
	req.Info = map[string]interface{}{"contentHash": st.hash, "resolvedSource": st.unpacked.ResolvedSource}
	for k, v := range st.info {
		req.Info[k] = v
	}
	start := time.Now()
	res, err := r.Engine.Apply(ctx, req)
	r.Metrics.observeStep(StepApply, start)
	r.Metrics.observeApply(res, err)
	var ae *apply.Error
	if errors.As(err, &ae) {
		se := &stepError{condition: rukpakv1alpha1.TypeInstalled, reason: ae.Reason, terminal: ae.Reason == apply.ReasonPreflightFailed, err: err}
		if ae.Reason == apply.ReasonObjectConflict {
			// The colliding object is not watched (it is not ours): look again now and then, and at
			// once when the BundleDeployment changes (e.g. its collisionPolicy).
			se.retryAfter = unhealthyRecheck
		}
		return se
	}
	if err != nil {
		return &stepError{condition: rukpakv1alpha1.TypeInstalled, reason: rukpakv1alpha1.ReasonInstallFailed, err: err}
	}
	if err := r.installedRevision(ctx, bd, st, res); err != nil {
		return &stepError{condition: rukpakv1alpha1.TypeInstalled, reason: rukpakv1alpha1.ReasonInstallFailed,
			err: fmt.Errorf("installed revision %d but cannot watch its objects for drift: %w", res.Revision, err)}
	}
	return nil
}

func (r *BundleDeploymentReconciler) checkHealth(ctx context.Context, st *state) {
	defer r.Metrics.observeStep(StepHealth, time.Now())
	reader := r.HealthReader
	if reader == nil {
		reader = r.Client
	}
	st.healthy = st.plan.Check(ctx, reader, r.EndpointReader)
}

// setStatus is the one place conditions are decided.
func (r *BundleDeploymentReconciler) setStatus(bd *rukpakv1alpha1.BundleDeployment, st *state, err error) {
	gen := bd.Generation
	set := func(typ string, status metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&bd.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen})
	}
	bd.Status.ObservedGeneration = gen
	setNotPaused(bd)
	var se *stepError
	if err != nil && !errors.As(err, &se) {
		se = &stepError{condition: rukpakv1alpha1.TypeInstalled, reason: rukpakv1alpha1.ReasonInstallFailed, err: err}
	}

	if st.unpacked != nil {
		bd.Status.ResolvedSource = st.unpacked.ResolvedSource.DeepCopy()
		bd.Status.ContentHash = st.hash
	}
	switch {
	case se != nil && se.condition == rukpakv1alpha1.TypeUnpacked:
		set(rukpakv1alpha1.TypeUnpacked, metav1.ConditionFalse, se.reason, se.Error())
	case st.unpacked != nil:
		set(rukpakv1alpha1.TypeUnpacked, metav1.ConditionTrue, rukpakv1alpha1.ReasonUnpackSucceeded,
			fmt.Sprintf("unpacked %s (%s)", st.unpacked.ResolvedSource.String(), st.hash))
	case meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeUnpacked) == nil:
		set(rukpakv1alpha1.TypeUnpacked, metav1.ConditionUnknown, rukpakv1alpha1.ReasonUnpackPending, "waiting for the bundle to be unpacked")
	}

	installed := bd.Status.InstalledRevision > 0
	switch {
	case st.applied != nil:
		bd.Status.InstalledRevision = int64(st.applied.Revision)
		msg := fmt.Sprintf("revision %d is installed (%d objects)", st.applied.Revision, st.count)
		if st.description != "" {
			msg = fmt.Sprintf("revision %d is installed (%d objects, %s)", st.applied.Revision, st.count, st.description)
		}
		if len(st.leftAlone) > 0 {
			msg += fmt.Sprintf("; %d object(s) earlier revisions installed were left in place because another owner holds them now: %s",
				len(st.leftAlone), keyList(st.leftAlone))
		}
		if st.applied.HeldBack != "" {
			set(rukpakv1alpha1.TypeInstalled, metav1.ConditionFalse, rukpakv1alpha1.ReasonUpgradeFailed, fmt.Sprintf(
				"the content the spec asks for was rolled back and is not applied again until spec.source or spec.config changes, or the annotation %s is set to a new value: %s; %s",
				RetryUpgradeAnnotation, st.applied.HeldBack, msg))
		} else {
			set(rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded, msg)
		}
		// Re-applying the deployed revision leaves the history as it is, unless it does not show that
		// revision yet (a crash between recording a revision and writing the status).
		if st.applied.Changed || st.historyChanged || len(bd.Status.History) == 0 || bd.Status.History[0].Revision != int64(st.applied.Revision) {
			r.setHistory(bd)
		}
	case se != nil && se.condition == rukpakv1alpha1.TypeInstalled:
		msg := se.Error()
		if installed {
			msg += fmt.Sprintf(" (revision %d stays installed)", bd.Status.InstalledRevision)
		}
		set(rukpakv1alpha1.TypeInstalled, metav1.ConditionFalse, se.reason, msg)
		r.setHistory(bd)
	case !installed:
		set(rukpakv1alpha1.TypeInstalled, metav1.ConditionFalse, rukpakv1alpha1.ReasonInstallPending, "nothing is installed until the bundle is unpacked and rendered")
	}

	switch {
	case st.progress != nil && st.progress.exceeded && !st.progress.rolledBack && st.healthy != nil:
		reason := rukpakv1alpha1.ReasonProgressDeadlineExceeded
		if st.progress.blocked != "" {
			reason = rukpakv1alpha1.ReasonRollbackBlocked
		}
		set(rukpakv1alpha1.TypeHealthy, metav1.ConditionFalse, reason, st.progress.message(st.healthy))
	case st.applied != nil && st.healthy == nil:
		set(rukpakv1alpha1.TypeHealthy, metav1.ConditionTrue, rukpakv1alpha1.ReasonHealthy, "every installed object is ready")
	case st.applied != nil:
		set(rukpakv1alpha1.TypeHealthy, metav1.ConditionFalse, rukpakv1alpha1.ReasonUnhealthy, st.healthy.Error())
	case bd.Status.InstalledRevision == 0:
		set(rukpakv1alpha1.TypeHealthy, metav1.ConditionUnknown, rukpakv1alpha1.ReasonHealthUnknown, "nothing is installed yet")
	}
}

// setHistory copies the newest deployed and superseded revisions into status.history.
func (r *BundleDeploymentReconciler) setHistory(bd *rukpakv1alpha1.BundleDeployment) {
	revs, err := r.Engine.History(bd.Name)
	if err != nil {
		return
	}
	var hist []rukpakv1alpha1.BundleDeploymentRevision
	for _, rev := range revs {
		if rev.Status != "deployed" && rev.Status != "superseded" {
			continue
		}
		h := rukpakv1alpha1.BundleDeploymentRevision{Revision: int64(rev.Version), InstalledAt: metav1.NewTime(rev.Deployed), Description: rev.Description}
		if !rev.HealthyAt.IsZero() {
			t := metav1.NewTime(rev.HealthyAt)
			h.HealthyAt = &t
		}
		h.ContentHash, _ = rev.Info["contentHash"].(string)
		h.ChartVersion, _ = rev.Info[InfoChartVersion].(string)
		h.ValuesHash, _ = rev.Info[InfoValuesHash].(string)
		h.ResolvedSource = resolvedFromInfo(rev.Info["resolvedSource"])
		hist = append(hist, h)
		if len(hist) == 10 {
			break
		}
	}
	bd.Status.History = hist
}

func (r *BundleDeploymentReconciler) emitEvents(orig, bd *rukpakv1alpha1.BundleDeployment, st *state) {
	if r.Recorder == nil {
		return
	}
	if st.applied != nil && st.applied.Changed {
		r.Recorder.Eventf(bd, "Normal", "Installed", "installed revision %d (%s)", st.applied.Revision, st.hash)
	}
	if st.applied != nil && st.applied.Changed && len(st.leftAlone) > 0 {
		r.Recorder.Eventf(bd, "Normal", "LeftAlone", "revision %d no longer contains %d object(s) but another owner holds them now, so they were left in place: %s",
			st.applied.Revision, len(st.leftAlone), keyList(st.leftAlone))
	}
	for _, typ := range []string{rukpakv1alpha1.TypeUnpacked, rukpakv1alpha1.TypeInstalled, rukpakv1alpha1.TypeHealthy} { // not Paused: reconcilePaused reports it
		now := meta.FindStatusCondition(bd.Status.Conditions, typ)
		before := meta.FindStatusCondition(orig.Status.Conditions, typ)
		if now == nil || now.Status == metav1.ConditionTrue || (before != nil && before.Reason == now.Reason && before.Message == now.Message) {
			continue
		}
		if now.Status == metav1.ConditionFalse {
			r.Recorder.Event(bd, "Warning", now.Reason, now.Message)
		}
	}
}

func (r *BundleDeploymentReconciler) classes() []rukpakv1alpha1.ProvisionerClassName {
	var out []rukpakv1alpha1.ProvisionerClassName
	for _, c := range []rukpakv1alpha1.ProvisionerClassName{rukpakv1alpha1.ProvisionerPlain, rukpakv1alpha1.ProvisionerRegistry,
		rukpakv1alpha1.ProvisionerHelm, rukpakv1alpha1.ProvisionerKustomize} {
		if r.Renderers[c] != nil {
			out = append(out, c)
		}
	}
	return out
}
