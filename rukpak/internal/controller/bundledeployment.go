// Package controller reconciles BundleDeployments: ensureFinalizer → unpack → render (gather what
// the renderer needs from the cluster, then render) → apply → checkHealth, then the Unpacked,
// Installed and Healthy conditions are set in one place (status.go) and the status is patched once
// (only when it changed). A failed step is a step.Error naming the condition it fails, the reason
// and whether retrying can help. Several BundleDeployments are reconciled at once
// (MaxConcurrentReconciles); applied objects and the EndpointSlices of webhook Services are watched
// through the label-scoped cache (Watches); release records, metadata only, on a cache of their own
// (release_watch.go); Metrics documents rukpak's Prometheus metrics.
package controller

import (
	"context"
	"maps"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/olmv1/olmv1/platform/conditionevents"
	"github.com/olmv1/olmv1/platform/statuspatch"
	"github.com/olmv1/olmv1/platform/step"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/apply"
	"github.com/olmv1/olmv1/rukpak/internal/health"
	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
)

const (
	// Finalizer makes deleting a BundleDeployment uninstall what it applied (the API's
	// UninstallFinalizer, which a client may set at creation).
	Finalizer = rukpakv1alpha1.UninstallFinalizer
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
	// Gatherer reads from the cluster what the Renderers need before they render (valuesFrom
	// documents, capabilities, scopes of kinds). Optional: without it only the scopes of kinds are
	// gathered, from Client's RESTMapper; valuesFrom cannot be read and Helm sees its default
	// capabilities.
	Gatherer *provisioner.Gatherer
	// Engine applies revisions.
	Engine *apply.Engine
	// Preflight runs before a new revision unless the BundleDeployment opts out (optional).
	Preflight Preflight
	// Namespace is rukpak's namespace (Secrets and ConfigMaps named by sources).
	Namespace string
	// Recorder, when set, records Events on BundleDeployments, all through conditionevents: one per
	// condition transition (events) and Installed, LeftAlone, RolledBack, Orphaned, UninstallFailed.
	Recorder conditionevents.Recorder
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
	// UnhealthyRecheck is how often the health of an unhealthy BundleDeployment is checked again when
	// no watched object changes (default 30 s; recheck.go).
	UnhealthyRecheck time.Duration
	// RateLimiter spaces the retries of failed reconciles (default: controller-runtime's, per
	// BundleDeployment doubling from 5 ms up to 1000 s).
	RateLimiter workqueue.TypedRateLimiter[reconcile.Request]

	// resync feeds ResyncAll's events to the controller.
	resync chan event.GenericEvent
	// triggers tells health-only reconciles from others; installed remembers what the last apply of
	// each BundleDeployment installed, for them.
	triggers  *triggers
	installed sync.Map // BundleDeployment name → *installedState
	// rechecks schedules the health re-checks of unhealthy BundleDeployments (recheck.go).
	rechecks *rechecks
	// healthyMarked is, per BundleDeployment, the revision last recorded as Healthy (MarkHealthy).
	healthyMarked sync.Map
	// lag holds reconciles back while the cache has not seen this controller's last writes.
	lag statuspatch.Lag
}

// cacheLagRetry is how soon a reconcile held back by the cache's lag (statuspatch.Lag) looks again.
const cacheLagRetry = 200 * time.Millisecond

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
	// history is the revision history that apply left (with a Healthy time recorded since), newest
	// first: status.history without listing the records again.
	history []apply.Revision
}

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
	// probes are the compiled spec.progressionProbes (probes.go), once probesCompiled.
	probes         []*health.Probe
	probesCompiled bool
}

// Reconcile implements reconcile.Reconciler.
func (r *BundleDeploymentReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	bd := &rukpakv1alpha1.BundleDeployment{}
	if err := r.Client.Get(ctx, req.NamespacedName, bd); err != nil {
		if apierrors.IsNotFound(err) {
			r.Metrics.forget(req.Name)
			r.installed.Delete(req.Name)
			r.rechecks.forget(req.Name)
			r.lag.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.lag.Behind(bd) {
		// The cache has not seen this controller's last write (a status patch, the finalizer) yet:
		// this read would apply again, record the same transitions' Events twice and patch the same
		// status again. The events that asked for this reconcile stay noted for the next one.
		return ctrl.Result{RequeueAfter: cacheLagRetry}, nil
	}
	if !bd.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, bd) // also while paused (pause.go)
	}
	read := bd.ResourceVersion
	if err := r.ensureFinalizer(ctx, bd); err != nil {
		return ctrl.Result{}, err
	}
	if bd.ResourceVersion != read {
		r.lag.Wrote(bd, read)
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
		for _, next := range []func(context.Context, *rukpakv1alpha1.BundleDeployment, *state) error{r.compileProbes, r.unpack, r.render, r.apply} {
			if err = next(ctx, bd, st); err != nil {
				break
			}
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
	patched, perr := statuspatch.IfChanged(ctx, r.Client, "BundleDeployment", orig, bd, bundleDeploymentStatus)
	if perr != nil {
		return ctrl.Result{}, perr
	}
	if patched {
		r.lag.Wrote(bd, orig.ResourceVersion)
	}
	return r.result(ctx, bd, st, err)
}

func bundleDeploymentStatus(bd *rukpakv1alpha1.BundleDeployment) rukpakv1alpha1.BundleDeploymentStatus {
	return bd.Status
}

// result is what Reconcile returns after its steps ended with err (step.Result, as catalogd and
// operator-controller): a terminal step error is returned as controller-runtime's terminal error and
// not retried (nothing is looked at again until the BundleDeployment or a watched object changes),
// unless the source polls; a step error with RetryAfter looks again then; any other error backs off.
func (r *BundleDeploymentReconciler) result(ctx context.Context, bd *rukpakv1alpha1.BundleDeployment, st *state, err error) (ctrl.Result, error) {
	se, _ := step.As(err)
	switch {
	case se != nil && se.Terminal:
		// Returned as controller-runtime's terminal error (not retried, counted in
		// controller_runtime_terminal_reconcile_errors_total), as catalogd and operator-controller do;
		// a source with a poll interval is still polled (the bundle may be republished).
		log.FromContext(ctx).Info("cannot proceed until the BundleDeployment or its bundle changes", "reason", se.Reason, "message", se.Err.Error())
	case se != nil && se.RetryAfter > 0:
		log.FromContext(ctx).Info("cannot proceed; looking again later", "reason", se.Reason, "message", se.Err.Error(), "after", se.RetryAfter)
	}
	every := r.UnhealthyRecheck
	if every <= 0 {
		every = unhealthyRecheck
	}
	health, poll := recheck(bd, st, every)
	if err != nil {
		return step.Result(err, poll) // the retry or back-off looks again; no re-check is scheduled
	}
	switch {
	case health == 0:
		r.rechecks.cancel(bd.Name)
	case !r.rechecks.after(bd.Name, health):
		poll = ctrl.Result{RequeueAfter: health} // no rechecks (not started): a requeue, which applies
	}
	return step.Result(nil, poll)
}

// recheck is when a successful reconcile looks again: a health check (recheck.go) when the progress
// deadline passes, if that is before the next re-check, or after every while unhealthy (0: none); and
// a full reconcile at the source's poll interval.
func recheck(bd *rukpakv1alpha1.BundleDeployment, st *state, every time.Duration) (health time.Duration, poll ctrl.Result) {
	poll = ctrl.Result{RequeueAfter: bd.Spec.Source.PollInterval()}
	switch {
	case st.progress != nil && st.progress.recheck > 0 && st.progress.recheck < every:
		return st.progress.recheck, poll
	case st.healthy != nil:
		return every, poll
	}
	return 0, poll
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
	// Status read (3): the installed revision and Installed=True must be what the last apply left.
	if last.generation != bd.Generation || !maps.Equal(last.annotations, bd.Annotations) || int64(last.revision) != bd.Status.InstalledRevision ||
		!meta.IsStatusConditionTrue(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled) {
		return false
	}
	st.applied = &apply.Result{Revision: last.revision, HeldBack: last.heldBack, History: last.history}
	st.count, st.plan, st.leftAlone, st.description = last.objects, last.plan, last.leftAlone, last.description
	return true
}
