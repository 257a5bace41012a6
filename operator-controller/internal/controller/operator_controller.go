// Package controller holds operator-controller's reconciler: for each Operator it fetches every
// Operator, the serving Catalogs and the BundleDeployments, resolves them all together
// (deppy/pkg/operators), then writes this Operator's Namespace, BundleDeployment and status.
package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/deppy/pkg/olm"
	operators "github.com/olmv1/olmv1/deppy/pkg/operators"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/catalogs"
	"github.com/olmv1/olmv1/platform/conditionevents"
	"github.com/olmv1/olmv1/platform/statuspatch"
	"github.com/olmv1/olmv1/platform/step"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// OperatorReconciler reconciles Operators.
type OperatorReconciler struct {
	// Client reads Operators, Catalogs and BundleDeployments (cached) and writes.
	Client client.Client
	// APIReader reads Namespaces directly from the API server (they are not cached).
	APIReader client.Reader
	// Catalogs reads and caches catalog content.
	Catalogs *catalogs.Cache
	// Metrics, when set, records resolution durations and Operator states.
	Metrics *Metrics
	// Recorder, when set, records Events on Operators: one per condition transition (conditionEvents)
	// and the dependency Operators created and deleted, all through conditionevents.
	Recorder conditionevents.Recorder
	// MaxConcurrentReconciles is how many Operators are reconciled at once (0: 16). Resolution itself
	// runs one at a time and its result is shared by every Operator; what runs in parallel is each
	// Operator's own writes (namespace, BundleDeployment, status).
	MaxConcurrentReconciles int
	// ClusterVersion, when set, returns the cluster's version (Kubernetes, and OpenShift on
	// OpenShift) that bundles must run on: a bundle whose minKubeVersion is above it (or whose
	// olm.maxOpenShiftVersion is below it) is skipped, and the Resolved condition names it. It is
	// called on each resolution and should be cheap (cluster.VersionCache). nil, or a nil version,
	// checks nothing.
	ClusterVersion func(context.Context) (*olm.Cluster, error)
	// NoOperatorConditions turns OperatorConditions off (operatorcondition.go): none is created,
	// watched or read, no upgrade is held and OPERATOR_CONDITION_NAME is not set. main sets it when
	// the OperatorCondition CRD is not installed (the chart's CRDs were not applied after an
	// upgrade of OLM), so that operator-controller still works as before.
	NoOperatorConditions bool
	// DirectBundles, when set, reads the package, version and dependencies of installed direct
	// bundles (spec.source.type Bundle, format RegistryV1) from their content and checks the
	// dependencies against the cluster (directinspect.go). nil reports direct bundles by source only.
	DirectBundles *DirectBundleReader

	mu          sync.Mutex
	lastIdx     *olm.Index
	lastReqs    []operators.Request
	lastCluster string
	lastOut     map[string]operators.Outcome
	// inputs counts the changes to what resolution reads once SetupWithManager made the informers
	// count them (inputsCounted; a reconciler without informers never reuses a resolution without
	// listing); last is what the last resolution read (resolvecache.go).
	inputs        inputEpoch
	inputsCounted bool
	last          *lastResolution
}

// +kubebuilder:rbac:groups=operators.operatorframework.io,resources=operators,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=operators.operatorframework.io,resources=operators/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=core.rukpak.io,resources=bundledeployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=catalogd.operatorframework.io,resources=catalogs,verbs=get;list;watch
// +kubebuilder:rbac:groups=metadata.catalogd.operatorframework.io,resources=catalogmetadata,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;create;update

// Reconcile runs the steps for one Operator: ensureFinalizer → resolution (skipped for a direct
// bundle, spec.source.type Bundle) → apply (install, installDirect or ensureSettings) → setStatus →
// patchStatus (one status write, and an Event per condition transition). A step that fails returns
// a step.Error naming the condition and reason it sets; setStatus reads them from there and
// step.Result turns them into the result: resolution that could not run is looked at again after
// retryResolution, an install that retrying cannot fix (a terminal error) is not retried, and any
// other failure is retried with backoff.
func (r *OperatorReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	op, err := r.getOperator(ctx, req.NamespacedName)
	if op == nil || err != nil {
		return ctrl.Result{}, err
	}
	if !op.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.finalize(ctx, op)
	}
	if err := r.ensureFinalizer(ctx, op); err != nil {
		return ctrl.Result{}, err
	}
	before := op.DeepCopy()
	bd, err := r.currentBundleDeployment(ctx, op)
	if err != nil {
		return ctrl.Result{}, err
	}
	obs := observations{bd: bd, direct: op.Spec.IsDirect()}
	if !obs.direct {
		obs = r.resolution(ctx, op, bd)
		r.holdUpgrade(ctx, op, &obs)
	}
	r.apply(ctx, op, &obs)
	if obs.direct {
		obs.directReport = r.inspectDirect(ctx, op, obs.bd)
	}
	if !obs.direct && obs.bd != nil && obs.applyErr == nil {
		obs.applyErr = installFailed(r.ensureOperatorCondition(ctx, op, obs.bd))
	}
	setStatus(op, obs)
	if err := r.patchStatus(ctx, before, op); err != nil {
		return ctrl.Result{}, err
	}
	return step.Result(obs.err(), ctrl.Result{RequeueAfter: obs.directReport.recheck()})
}

// getOperator reads the Operator; nil when it is gone (its metrics are forgotten).
func (r *OperatorReconciler) getOperator(ctx context.Context, key types.NamespacedName) (*operatorsv1alpha1.Operator, error) {
	op := &operatorsv1alpha1.Operator{}
	if err := r.Client.Get(ctx, key, op); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
		if r.Metrics != nil {
			r.Metrics.Forget(key.Name)
		}
		return nil, nil
	}
	return op, nil
}

// resolution resolves op, whose BundleDeployment is bd, and starts the observations with the
// outcome and the bundles of op's package in the index it read (where the installed image is looked
// up). Resolution that could not run fails Resolved (ResolutionFailed) and is looked at again after
// retryResolution.
func (r *OperatorReconciler) resolution(ctx context.Context, op *operatorsv1alpha1.Operator, bd *rukpakv1alpha1.BundleDeployment) observations {
	obs := observations{bd: bd}
	outcome, idx, cats, err := r.resolve(ctx, op, bd)
	obs.catalogs = cats
	if idx != nil {
		obs.packageBundles = idx.Bundles(op.Spec.PackageName)
	}
	if err != nil {
		log.FromContext(ctx).Info("resolution could not run", "error", err.Error())
		obs.resolveErr = step.Failed(operatorsv1alpha1.TypeResolved, operatorsv1alpha1.ReasonResolutionFailed, err).After(retryResolution(err))
		return obs
	}
	obs.outcome = &outcome
	return obs
}

// apply writes what the resolution asks for and records it in obs: nothing while op is paused before
// anything was installed; op's direct bundle (installDirect); op's settings only when its
// OperatorCondition holds the resolved upgrade (holdUpgrade); the resolved bundle (install); or,
// when nothing resolved, op's settings (config, policies, pause: what needs no resolution) to the
// installed BundleDeployment, which stays (orphaning an Operator whose catalog is gone, or changing
// its config, must work).
func (r *OperatorReconciler) apply(ctx context.Context, op *operatorsv1alpha1.Operator, obs *observations) {
	switch {
	case op.Spec.Paused && obs.bd == nil:
		obs.pausedBeforeInstall = true
	case obs.direct:
		obs.applyErr = r.installDirect(ctx, op, obs)
	case obs.held != nil:
		// The installed bundle stays; its settings still apply.
		bd, changed, err := r.ensureSettings(ctx, op, obs.bd)
		obs.bd, obs.settingsApplied, obs.applyErr = bd, changed, installFailed(err)
	case obs.outcome != nil && obs.outcome.Bundle != nil:
		obs.applyErr = r.install(ctx, op, obs)
	case obs.bd != nil:
		bd, changed, err := r.ensureSettings(ctx, op, obs.bd)
		obs.bd, obs.settingsApplied, obs.applyErr = bd, changed, installFailed(err)
	}
}

// install writes the resolved bundle: its install namespace, its BundleDeployment, then the
// Operators of its dependencies. obs gets the namespace, the BundleDeployment as written and the
// dependencies.
func (r *OperatorReconciler) install(ctx context.Context, op *operatorsv1alpha1.Operator, obs *observations) *step.Error {
	b := obs.outcome.Bundle
	ns := installNamespace(op, obs.bd, b)
	obs.namespace = ns
	if err := r.ensureNamespaceUnlessInstalled(ctx, op, obs.bd, ns); err != nil {
		return installFailed(err)
	}
	bd, err := r.ensureBundleDeployment(ctx, op, obs.bd, b, ns, obs.catalogs)
	if err != nil {
		return installFailed(err)
	}
	obs.bd = bd
	deps, err := r.ensureDependencies(ctx, op, b)
	obs.dependencies = deps
	return installFailed(err)
}

// installFailed is err as a failure of the Installed condition: the step.Error err carries (a
// terminal one from ensureBundleDeployment), else InstallationFailed, retried with backoff. Nil when
// err is.
func installFailed(err error) *step.Error {
	if err == nil {
		return nil
	}
	if se, ok := step.As(err); ok {
		return se
	}
	return step.Failed(operatorsv1alpha1.TypeInstalled, operatorsv1alpha1.ReasonInstallationFailed, err)
}

// patchStatus writes op's status when it differs from before's (the one status write of a
// reconcile), records an Event per condition transition (conditionEvents) and op's state in the
// metrics.
func (r *OperatorReconciler) patchStatus(ctx context.Context, before, op *operatorsv1alpha1.Operator) error {
	// Status reads: the previous status against the one setStatus wrote, to patch only a change and
	// to record an Event per condition transition (bookkeeping, never an input of what is written).
	patched, err := statuspatch.IfChanged(ctx, r.Client, "Operator", before, op, operatorStatus)
	if err != nil {
		return err
	}
	if patched {
		conditionEvents.Record(r.Recorder, op, before.Status.Conditions, op.Status.Conditions)
	}
	if r.Metrics != nil {
		r.Metrics.observe(op)
	}
	return nil
}

func operatorStatus(op *operatorsv1alpha1.Operator) operatorsv1alpha1.OperatorStatus {
	return op.Status
}

// retryResolution is when to reconcile again after resolution could not run: 30 s, or sooner when
// the content read of a catalog was not what its status names (catalogd is still loading it, and no
// Catalog event will say when it is done): when the catalog cache reads it again, with backoff.
func retryResolution(err error) time.Duration {
	var mismatch *catalogs.ContentMismatchError
	if errors.As(err, &mismatch) && mismatch.RetryAfter > 0 {
		return mismatch.RetryAfter
	}
	return 30 * time.Second
}

// DefaultMaxConcurrentReconciles is the number of Operators reconciled at once when
// OperatorReconciler.MaxConcurrentReconciles is not set. A reconcile spends its time waiting on
// its writes one after another (the finalizer, the namespace, the BundleDeployment, the
// OperatorCondition and its Role and RoleBinding, the status), not on CPU: with 4 workers the
// upgrade of 1,000 Operators was paced by operator-controller (each BundleDeployment Installed as
// soon as it was written, the cores 93 % busy); with 16 the cores are the limit
// (BenchmarkOperatorsInstall, docs/performance.md "Operator-controller's workers").
const DefaultMaxConcurrentReconciles = 16

func (r *OperatorReconciler) currentBundleDeployment(ctx context.Context, op *operatorsv1alpha1.Operator) (*rukpakv1alpha1.BundleDeployment, error) {
	bd := &rukpakv1alpha1.BundleDeployment{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: op.Name}, bd); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting BundleDeployment %q: %w", op.Name, err)
	}
	if !metav1.IsControlledBy(bd, op) {
		return nil, fmt.Errorf("BundleDeployment %q exists but is not owned by Operator %q: delete or rename it", bd.Name, op.Name)
	}
	return bd, nil
}

// resolve resolves every Operator together and returns op's outcome, the index it resolved
// against (nil when none was read) and the Catalogs it read (whose bundleVerify the resolved
// bundle's BundleDeployment gets); bd is op's BundleDeployment as this reconcile read it. Results
// are reused while the requests and the catalogs' content are unchanged, and when the only change
// is that Operators installed what they were resolved to (outcomesStillHold). When no informer has
// seen a change to what resolution reads since the last resolution, and op and bd are those it
// read, nothing is listed at all (resolvecache.go).
//
// The inputs are read under the lock: reconciles that waited for another one's resolution read the
// cache as it is now, usually find the same requests, and reuse its result instead of resolving again
// for a state that is already gone.
func (r *OperatorReconciler) resolve(ctx context.Context, op *operatorsv1alpha1.Operator, bd *rukpakv1alpha1.BundleDeployment) (operators.Outcome, *olm.Index, []catalogdv1alpha1.Catalog, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Read before listing: a change counted after this makes the next reconcile list again.
	epoch := r.inputs.load()
	var cluster *olm.Cluster
	if r.ClusterVersion != nil {
		var err error
		if cluster, err = r.ClusterVersion(ctx); err != nil {
			// Resolve with the last version read (or none) rather than not at all.
			log.FromContext(ctx).Info("reading the cluster's version failed; bundles' minKubeVersion is checked against the last version read, if any", "error", err.Error())
		}
	}
	clusterKey := ""
	if cluster != nil {
		clusterKey = cluster.KubeVersion + "\x00" + cluster.OpenShiftVersion
	}
	if l := r.last; r.inputsCounted && l.answers(epoch, clusterKey, op, bd) {
		if msg, bad := l.invalid[op.Name]; bad {
			return operators.Outcome{Message: msg}, nil, l.cats, nil
		}
		if o, ok := r.lastOut[op.Name]; ok {
			return o, l.idx, l.cats, nil
		}
	}
	// The Operators and BundleDeployments are only read here: they are listed from the cache without
	// a deep copy of each, which every reconcile paid for every Operator (O(n²) for n Operators).
	ops := &operatorsv1alpha1.OperatorList{}
	if err := r.Client.List(ctx, ops, client.UnsafeDisableDeepCopy); err != nil {
		return operators.Outcome{}, nil, nil, fmt.Errorf("listing Operators: %w", err)
	}
	cats := &catalogdv1alpha1.CatalogList{}
	if err := r.Client.List(ctx, cats); err != nil {
		return operators.Outcome{}, nil, nil, fmt.Errorf("listing Catalogs: %w", err)
	}
	bdList := &rukpakv1alpha1.BundleDeploymentList{}
	if err := r.Client.List(ctx, bdList, client.MatchingLabels{LabelOwnerKind: "Operator"}, client.UnsafeDisableDeepCopy); err != nil {
		return operators.Outcome{}, nil, nil, fmt.Errorf("listing BundleDeployments: %w", err)
	}
	bds := map[string]*rukpakv1alpha1.BundleDeployment{}
	for i := range bdList.Items {
		bd := &bdList.Items[i]
		if owner := metav1.GetControllerOf(bd); owner != nil && owner.Kind == "Operator" && owner.Name == bd.Labels[LabelOwnerName] {
			bds[owner.Name] = bd
		}
	}
	reqs, invalid := requests(ops.Items, bds, cats.Items)
	if msg, bad := invalid[op.Name]; bad {
		return operators.Outcome{Message: msg}, nil, cats.Items, nil
	}
	// Only the packages the requests name, and those their bundles depend on, are read.
	roots := make([]string, 0, len(reqs))
	for _, rq := range reqs {
		roots = append(roots, rq.Package)
	}
	idx, _, err := r.Catalogs.IndexFor(ctx, cats.Items, roots)
	if err != nil {
		return operators.Outcome{}, nil, nil, fmt.Errorf("reading catalog content: %w", err)
	}
	if r.lastIdx != idx || r.lastCluster != clusterKey || !outcomesStillHold(idx, r.lastReqs, reqs, r.lastOut) {
		start := time.Now()
		r.lastOut = operators.ResolveWith(ctx, idx, reqs, operators.Options{Cluster: cluster})
		if r.Metrics != nil {
			r.Metrics.ResolutionSeconds.Observe(time.Since(start).Seconds())
		}
		r.lastIdx, r.lastReqs, r.lastCluster = idx, reqs, clusterKey
	}
	seen := make(map[string]inputSeen, len(ops.Items))
	for i := range ops.Items {
		seen[ops.Items[i].Name] = seenOf(&ops.Items[i], bds[ops.Items[i].Name])
	}
	r.last = &lastResolution{epoch: epoch, cluster: clusterKey, seen: seen, invalid: invalid, idx: idx, cats: cats.Items}
	o, ok := r.lastOut[op.Name]
	if !ok {
		return operators.Outcome{}, idx, nil, fmt.Errorf("operator %q was not part of the resolution (is it being deleted?)", op.Name)
	}
	return o, idx, cats.Items, nil
}

// ensureBundleDeployment creates or updates op's BundleDeployment so that it installs b, verified
// under the bundleVerify of b's catalog among cats (the Catalogs the resolution read). What the
// API would refuse whatever the retry (an unsupported bundle, an invalid object) is a terminal
// Installed failure.
func (r *OperatorReconciler) ensureBundleDeployment(ctx context.Context, op *operatorsv1alpha1.Operator, have *rukpakv1alpha1.BundleDeployment, b *operators.Bundle, ns string,
	cats []catalogdv1alpha1.Catalog) (*rukpakv1alpha1.BundleDeployment, error) {
	verify, err := bundleVerify(cats, b.Catalog)
	if err != nil {
		return have, err
	}
	want, err := desiredBundleDeployment(op, b, ns, verify)
	if err != nil {
		return have, step.Terminal(operatorsv1alpha1.TypeInstalled, operatorsv1alpha1.ReasonInstallationFailed, err)
	}
	if !r.NoOperatorConditions && wantsConditionEnv(have, &want.Spec, b.Name) {
		withConditionEnv(&want.Spec, b.Name)
	}
	return r.writeBundleDeployment(ctx, have, want, "bundle", b.Name, "image", b.Image)
}

// writeBundleDeployment creates want, or merges it into have (mergeBundleDeployment) and updates
// it when that changed anything; it returns the BundleDeployment as written. keysAndValues name the
// bundle in the log.
func (r *OperatorReconciler) writeBundleDeployment(ctx context.Context, have, want *rukpakv1alpha1.BundleDeployment, keysAndValues ...any) (*rukpakv1alpha1.BundleDeployment, error) {
	if have == nil {
		// rukpak's finalizer from the start: rukpak would add it in a write of its own (and a
		// reconcile of it and of the Operator for that write's event) before doing anything else.
		controllerutil.AddFinalizer(want, rukpakv1alpha1.UninstallFinalizer)
		if err := r.Client.Create(ctx, want); err != nil {
			return nil, writeFailed(fmt.Errorf("creating BundleDeployment %q: %w", want.Name, err))
		}
		log.FromContext(ctx).Info("created BundleDeployment", append(keysAndValues, "namespace", want.Spec.InstallNamespace)...)
		return want, nil
	}
	updated := have.DeepCopy()
	if !mergeBundleDeployment(updated, want) {
		return have, nil
	}
	if err := r.Client.Update(ctx, updated); err != nil {
		return have, writeFailed(fmt.Errorf("updating BundleDeployment %q: %w", want.Name, err))
	}
	log.FromContext(ctx).Info("updated BundleDeployment", keysAndValues...)
	return updated, nil
}

// writeFailed is a failed write of a BundleDeployment: terminal (InstallationFailed) when the API
// refused the object as invalid, which retrying cannot fix; err as it is otherwise (retried).
func writeFailed(err error) error {
	if apierrors.IsInvalid(err) {
		return step.Terminal(operatorsv1alpha1.TypeInstalled, operatorsv1alpha1.ReasonInstallationFailed, err)
	}
	return err
}

// ensureSettings applies op's settings (applySettings: config, watch namespaces, policies, pause,
// progress deadline, progression probes) to its existing BundleDeployment without changing what it
// installs: the way spec changes reach the installed bundle when nothing resolved (its catalog is
// gone or unreadable, or the spec's version no longer resolves). It returns the BundleDeployment
// and the settings it changed. The install namespace is released first for Orphan.
func (r *OperatorReconciler) ensureSettings(ctx context.Context, op *operatorsv1alpha1.Operator, bd *rukpakv1alpha1.BundleDeployment) (*rukpakv1alpha1.BundleDeployment, []string, error) {
	want := bd.Spec.DeepCopy()
	if err := applySettings(want, op); err != nil {
		return bd, nil, step.Terminal(operatorsv1alpha1.TypeInstalled, operatorsv1alpha1.ReasonInstallationFailed,
			fmt.Errorf("the installed bundle (BundleDeployment %q) %w", bd.Name, err))
	}
	if hasConditionEnv(&bd.Spec) {
		// spec.config is op's: keep OPERATOR_CONDITION_NAME the installed bundle was given.
		withConditionEnv(want, bd.Annotations[AnnotationBundleName])
	}
	changed := settingsChanged(&bd.Spec, want)
	if len(changed) == 0 {
		return bd, nil, nil
	}
	if err := r.ensureNamespace(ctx, op, bd.Spec.InstallNamespace); err != nil {
		return bd, nil, err
	}
	updated := bd.DeepCopy()
	updated.Spec = *want
	if err := r.Client.Update(ctx, updated); err != nil {
		return bd, nil, writeFailed(fmt.Errorf("applying %s to BundleDeployment %q without resolution: %w", strings.Join(changed, ", "), bd.Name, err))
	}
	log.FromContext(ctx).Info("applied settings to the installed bundle without resolution", "changed", changed)
	return updated, changed, nil
}

// SetupWithManager watches Operators, their BundleDeployments and every Catalog. Any change to an
// Operator's spec or to a Catalog re-reconciles every Operator: they are resolved together.
func (r *OperatorReconciler) SetupWithManager(mgr ctrl.Manager) error {
	all := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		// Counted here too, before the reconciles are enqueued: the counting handlers below may
		// run after these reconciles start (resolvecache.go).
		r.inputs.bump()
		ops := &operatorsv1alpha1.OperatorList{}
		if err := r.Client.List(ctx, ops, client.UnsafeDisableDeepCopy); err != nil { // names only
			log.FromContext(ctx).Error(err, "listing Operators to re-resolve")
			return nil
		}
		reqs := make([]reconcile.Request, len(ops.Items))
		for i := range ops.Items {
			reqs[i] = reconcile.Request{NamespacedName: types.NamespacedName{Name: ops.Items[i].Name}}
		}
		return reqs
	})
	r.inputsCounted = true
	workers := r.MaxConcurrentReconciles
	if workers <= 0 {
		workers = DefaultMaxConcurrentReconciles
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("operator").
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&operatorsv1alpha1.Operator{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&rukpakv1alpha1.BundleDeployment{}, builder.WithPredicates(notCreated())).
		Watches(&operatorsv1alpha1.Operator{}, all, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&catalogdv1alpha1.Catalog{}, all, builder.WithPredicates(catalogChanged())).
		Watches(&operatorsv1alpha1.Operator{}, countInputs(&r.inputs, operatorInputChanged)).
		Watches(&rukpakv1alpha1.BundleDeployment{}, countInputs(&r.inputs, bundleDeploymentInputChanged)).
		Watches(&catalogdv1alpha1.Catalog{}, countInputs(&r.inputs, anyChange))
	if !r.NoOperatorConditions {
		// Only those it created are cached: an Upgradeable change re-reconciles their Operator.
		b = b.Watches(&operatorsv2.OperatorCondition{}, handler.EnqueueRequestsFromMapFunc(ownerOperator), builder.WithPredicates(notCreated())).
			Watches(&rbacv1.RoleBinding{}, handler.EnqueueRequestsFromMapFunc(ownerOperator), builder.WithPredicates(notCreated()))
	}
	return b.Complete(r)
}

// notCreated passes every event but a creation. Only operator-controller creates the BundleDeployment,
// OperatorCondition and RoleBinding of an Operator, in a reconcile of that Operator that goes on with
// the object it created; the creation's event re-reconciled the Operator for nothing, and, arriving
// before rukpak reported Installed, that reconcile created the install namespace again (a refused
// create and a read; 1.4–1.6 creates per Operator at N = 100 with 16 workers). At start the
// Operators are reconciled from their own list; an object of theirs that is deleted or changed still
// re-reconciles its Operator.
func notCreated() predicate.Predicate {
	return predicate.Funcs{CreateFunc: func(event.CreateEvent) bool { return false }}
}

// ownerOperator maps an object operator-controller created for an Operator to that Operator.
func ownerOperator(_ context.Context, obj client.Object) []reconcile.Request {
	if obj.GetLabels()[LabelOwnerKind] != "Operator" || obj.GetLabels()[LabelOwnerName] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: obj.GetLabels()[LabelOwnerName]}}}
}

// catalogChanged passes creations, deletions and updates that change what resolution sees (content
// hash, serving state, priority or labels) or what its bundles are installed with (bundleVerify).
func catalogChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*catalogdv1alpha1.Catalog)
			n, ok2 := e.ObjectNew.(*catalogdv1alpha1.Catalog)
			if !ok1 || !ok2 {
				return true
			}
			return o.Status.ContentHash != n.Status.ContentHash || catalogs.Serving(o) != catalogs.Serving(n) ||
				o.Spec.Priority != n.Spec.Priority || !equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
				!equality.Semantic.DeepEqual(o.Spec.BundleVerify, n.Spec.BundleVerify)
		},
	}
}

// CacheOptions scopes the manager's cache: only the BundleDeployments, OperatorConditions and
// RoleBindings operator-controller created, and no managedFields. Namespaces, ServiceAccounts, Roles
// and CatalogMetadata are read directly, never cached.
func CacheOptions() cache.Options {
	owned := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{LabelOwnerKind: "Operator"})}
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&rukpakv1alpha1.BundleDeployment{}: owned,
			&operatorsv2.OperatorCondition{}:   owned,
			&rbacv1.RoleBinding{}:              owned,
		},
	}
}
