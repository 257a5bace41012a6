package controller

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/apply"
	"github.com/olmv1/olmv1/rukpak/internal/health"
)

// CacheOptions scope the manager's cache to what rukpak owns: every informer but the
// BundleDeployments' only sees objects labelled by the apply engine, and managedFields are dropped.
func CacheOptions() cache.Options {
	return cache.Options{
		DefaultLabelSelector: labels.SelectorFromSet(labels.Set{apply.OwnerKindLabel: apply.OwnerKind}),
		DefaultTransform:     cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&rukpakv1alpha1.BundleDeployment{}: {Label: labels.Everything()},
		},
	}
}

// Watches starts, once per kind, a label-scoped watch of the objects rukpak applied; an event on one
// of them reconciles its BundleDeployment, which reverts drift and refreshes health.
//
// Once a bundle has webhooks, it also watches EndpointSlices, label-scoped the same way: the
// EndpointSlice controller copies a Service's labels onto its EndpointSlices, so the slices of the
// Services rukpak applied carry rukpak's owner labels, and a webhook Service getting (or losing) a
// ready endpoint reconciles its BundleDeployment at once.
type Watches struct {
	ctrl      controller.Controller
	cache     cache.Cache
	triggers  *triggers
	mu        sync.Mutex
	seen      map[schema.GroupVersionKind]bool
	endpoints bool
	// probed holds the kinds that progression probes select (schema.GroupKind → true): their status
	// changes pass like those of health.StatusKinds. Kinds are never removed (a kind no probe selects
	// any more costs a few health-only reconciles).
	probed sync.Map
}

// WatchStatus makes status changes of objects of kinds reconcile their BundleDeployment, as a
// health check: progression probes look at those objects' status.
func (w *Watches) WatchStatus(kinds []schema.GroupKind) {
	for _, gk := range kinds {
		w.probed.Store(gk, true)
	}
}

// statusDecidesHealth reports whether the status of objects of gk can change Healthy.
func (w *Watches) statusDecidesHealth(gk schema.GroupKind) bool {
	if health.StatusKinds[gk] {
		return true
	}
	_, ok := w.probed.Load(gk)
	return ok
}

// watchSyncTimeout bounds the wait for a new watch's initial list.
const watchSyncTimeout = 30 * time.Second

// Ensure watches the kinds of objs that are not watched yet, and EndpointSlices when objs include
// webhooks that call a Service.
func (w *Watches) Ensure(ctx context.Context, objs []*unstructured.Unstructured) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.endpoints && len(health.WebhookServices(objs)) > 0 {
		if err := w.ctrl.Watch(source.Kind[client.Object](w.cache, &discoveryv1.EndpointSlice{}, w.triggers.handler(w.triggers.noteHealthOnly, true))); err != nil {
			return fmt.Errorf("watching the EndpointSlices of webhook Services: %w", err)
		}
		w.endpoints = true
	}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		if w.seen[gvk] {
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		src := source.Kind[client.Object](w.cache, u, w.triggers.handler(w.triggers.noteApplied(gvk), false), appliedChanged{status: w.statusDecidesHealth})
		if err := w.ctrl.Watch(src); err != nil {
			return fmt.Errorf("watching %s: %w", gvk, err)
		}
		// Wait until the watch has listed: a change made before its initial list would arrive as a
		// creation, which is not drift (appliedChanged), and be missed until the next re-apply.
		syncCtx, cancel := context.WithTimeout(ctx, watchSyncTimeout)
		err := src.WaitForSync(syncCtx)
		cancel()
		if err != nil {
			return fmt.Errorf("watching %s: %w", gvk, err)
		}
		w.seen[gvk] = true
	}
	return nil
}

// Kinds is how many kinds of applied objects are watched (EndpointSlices not counted).
func (w *Watches) Kinds() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.seen)
}

// WatchesEndpoints reports whether EndpointSlices are watched.
func (w *Watches) WatchesEndpoints() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.endpoints
}

func ownerRequest(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	if l[apply.OwnerKindLabel] != apply.OwnerKind || l[apply.OwnerNameLabel] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: l[apply.OwnerNameLabel]}}}
}

// SetupWithManager registers the reconciler. BundleDeployments are reconciled when their spec,
// annotations or deletion state change (not on their own status updates).
func (r *BundleDeploymentReconciler) SetupWithManager(mgr ctrl.Manager) error {
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named("bundledeployment").
		WithOptions(controller.Options{MaxConcurrentReconciles: max(1, r.MaxConcurrentReconciles), RateLimiter: r.RateLimiter}).
		For(&rukpakv1alpha1.BundleDeployment{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, deleting{}))).
		Build(r)
	if err != nil {
		return err
	}
	r.triggers = &triggers{pending: map[string]bool{}}
	if r.Engine != nil {
		r.triggers.own = r.Engine.ConsumeOwnWrite
	}
	r.Watches = &Watches{ctrl: c, cache: mgr.GetCache(), triggers: r.triggers, seen: map[schema.GroupVersionKind]bool{}}
	r.rechecks = newRechecks(r.triggers)
	if err := c.Watch(r.rechecks.source()); err != nil {
		return err
	}
	r.resync = make(chan event.GenericEvent)
	if err := c.Watch(source.Channel(r.resync, r.triggers.full())); err != nil {
		return err
	}
	if ready := r.hostReadyEvents(); ready != nil {
		if err := c.Watch(source.Channel(ready, r.triggers.full())); err != nil {
			return err
		}
	}
	if err := r.watchReleaseRecords(mgr, c); err != nil {
		return err
	}
	if r.ValuesWatch != nil {
		if err := c.Watch(source.Channel(r.ValuesWatch.events, r.triggers.full())); err != nil {
			return err
		}
		if err := mgr.Add(r.ValuesWatch); err != nil {
			return err
		}
	}
	if r.HealthReader == nil {
		r.HealthReader = mgr.GetCache()
	}
	return nil
}

// deleting passes updates that set a deletion timestamp.
type deleting struct{ predicate.Funcs }

func (deleting) Update(e event.UpdateEvent) bool {
	return e.ObjectNew != nil && !e.ObjectNew.GetDeletionTimestamp().IsZero()
}

// appliedChanged passes the events of applied objects that can need a reconcile: deletions, changes
// of their spec or metadata (drift), and status changes of the kinds health looks at. Creations are
// rukpak's own applies, or the initial list of a watch that starts after a restart: those of the
// kinds health looks at pass (as health-only triggers), so that a Deployment that became ready while
// a restarted rukpak was starting its watches is seen at once, not at the next 30 s re-check.
type appliedChanged struct {
	predicate.Funcs
	// status reports whether the status of a kind decides health (health.StatusKinds, and the
	// kinds progression probes select); nil: health.StatusKinds.
	status func(schema.GroupKind) bool
}

func (a appliedChanged) statusKind(gk schema.GroupKind) bool {
	if a.status == nil {
		return health.StatusKinds[gk]
	}
	return a.status(gk)
}

func (a appliedChanged) Create(e event.CreateEvent) bool {
	return e.Object != nil && a.statusKind(e.Object.GetObjectKind().GroupVersionKind().GroupKind())
}

func (a appliedChanged) Update(e event.UpdateEvent) bool {
	o, n := e.ObjectOld, e.ObjectNew
	if o == nil || n == nil {
		return true
	}
	if n.GetGeneration() == 0 || o.GetGeneration() != n.GetGeneration() {
		return true // kinds without a generation (ConfigMaps, Secrets, ...) or a changed spec
	}
	if !maps.Equal(o.GetLabels(), n.GetLabels()) || !maps.Equal(o.GetAnnotations(), n.GetAnnotations()) {
		return true
	}
	// The status of these kinds drives Healthy.
	return a.statusKind(n.GetObjectKind().GroupVersionKind().GroupKind())
}

// statusOnly reports whether an update that appliedChanged passed changed only the status: such an
// event needs a health check, not a re-apply. Kinds without a generation never count as status-only.
// The Deployment controller's revision annotation is not drift (rukpak never applies it, so a
// re-apply would not change it): a Deployment's first rollout no longer re-applies its bundle.
func statusOnly(e event.UpdateEvent) bool {
	o, n := e.ObjectOld, e.ObjectNew
	return o != nil && n != nil && n.GetGeneration() != 0 && o.GetGeneration() == n.GetGeneration() &&
		maps.Equal(o.GetLabels(), n.GetLabels()) && equalBut(o.GetAnnotations(), n.GetAnnotations(), deploymentRevisionAnnotation)
}

// deploymentRevisionAnnotation is the annotation the Deployment controller writes on every Deployment.
const deploymentRevisionAnnotation = "deployment.kubernetes.io/revision"

// equalBut reports whether a and b hold the same entries apart from key.
func equalBut(a, b map[string]string, key string) bool {
	n := len(a)
	if _, ok := a[key]; ok {
		n--
	}
	m := len(b)
	if _, ok := b[key]; ok {
		m--
	}
	if n != m {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; k != key && (!ok || w != v) {
			return false
		}
	}
	return true
}

// triggers remembers, per BundleDeployment, whether every watch event since its last reconcile only
// asked for a health check (statuses and endpoints changed), so that the reconcile can skip
// unpacking, rendering and re-applying. Reconciles without a noted event (the BundleDeployment
// changed, a requeue) always apply; so do those with any event noted as not health-only (drift, a
// CA rotation: full) and every fullRecheckEvery-th re-check (recheck.go).
//
// A change of an applied object's spec, labels or annotations is drift unless it is rukpak's own
// apply (an upgrade changes its Deployments' spec, and that write's event came back as drift and
// was applied a second time): such events are kept as echoes (the object and its resourceVersion)
// and decided when the BundleDeployment is reconciled, by own (apply.Engine.ConsumeOwnWrite). By then
// the apply that wrote them has returned and recorded its answer: the same BundleDeployment is never
// reconciled twice at once.
type triggers struct {
	mu      sync.Mutex
	pending map[string]bool // BundleDeployment → every pending event is health-only
	// echoes are, per BundleDeployment, the pending changes of applied objects that may be
	// rukpak's own applies.
	echoes map[string][]echo
	// own reports whether an object's resourceVersion is what rukpak's last apply of it wrote, and
	// forgets that apply (nil: every change is drift).
	own func(apply.ObjectKey, string) bool
}

// echo is a change of an applied object that may be rukpak's own apply.
type echo struct {
	key             apply.ObjectKey
	resourceVersion string
}

func (t *triggers) note(name string, healthOnly bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.noteLocked(name, healthOnly)
}

func (t *triggers) noteLocked(name string, healthOnly bool) {
	if prev, ok := t.pending[name]; ok {
		healthOnly = healthOnly && prev
	}
	t.pending[name] = healthOnly
}

// noteEcho notes a change of the applied object at key, now at resourceVersion rv: health-only if
// it is rukpak's own apply (decided by take), drift otherwise.
func (t *triggers) noteEcho(name string, key apply.ObjectKey, rv string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.own == nil {
		t.noteLocked(name, false)
		return
	}
	t.noteLocked(name, true)
	if t.echoes == nil {
		t.echoes = map[string][]echo{}
	}
	t.echoes[name] = append(t.echoes[name], echo{key: key, resourceVersion: rv})
}

// take returns whether the reconcile of name was asked for by health-only events alone (echoes
// of rukpak's own applies included), and forgets them.
func (t *triggers) take(name string) bool {
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	healthOnly, ok := t.pending[name]
	echoes := t.echoes[name]
	delete(t.pending, name)
	delete(t.echoes, name)
	for _, e := range echoes {
		// Each is consumed, so that a later change of the same object is not taken for this write.
		if !t.own(e.key, e.resourceVersion) {
			healthOnly = false
		}
	}
	return ok && healthOnly
}

// handler enqueues the owner of an event's object, noting whether the event was health-only:
// creations are, updates as noteUpdate notes them for the owner, and other events when
// othersHealthOnly is set (EndpointSlices).
func (t *triggers) handler(noteUpdate func(owner string, e event.UpdateEvent), othersHealthOnly bool) handler.Funcs {
	enqueue := func(o client.Object, only bool, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, req := range ownerRequest(context.Background(), o) {
			t.note(req.Name, only)
			q.Add(req)
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.Object, true, q) // a creation is not drift: at most health changed
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			for _, req := range ownerRequest(context.Background(), e.ObjectNew) {
				noteUpdate(req.Name, e)
				q.Add(req)
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.Object, othersHealthOnly, q)
		},
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(e.Object, othersHealthOnly, q)
		},
	}
}

// noteHealthOnly notes any update as health-only (EndpointSlices).
func (t *triggers) noteHealthOnly(owner string, _ event.UpdateEvent) { t.note(owner, true) }

// noteApplied returns how updates of the objects of kind gvk that rukpak applied are noted: a status
// change is health-only (statusOnly), any other change an echo (noteEcho).
func (t *triggers) noteApplied(gvk schema.GroupVersionKind) func(owner string, e event.UpdateEvent) {
	return func(owner string, e event.UpdateEvent) {
		if statusOnly(e) {
			t.note(owner, true)
			return
		}
		t.noteEcho(owner, apply.ObjectKey{Group: gvk.Group, Kind: gvk.Kind, Namespace: e.ObjectNew.GetNamespace(), Name: e.ObjectNew.GetName()},
			e.ObjectNew.GetResourceVersion())
	}
}

// full enqueues the BundleDeployment of a generic event (a CA rotation, a registry that answered, a
// changed valuesFrom document) for a full reconcile: it notes an event that is not health-only, so
// that health-only events pending beside it cannot make the reconcile skip the apply it asks for.
func (t *triggers) full() handler.EventHandler {
	return handler.Funcs{
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			t.note(e.Object.GetName(), false)
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: e.Object.GetName()}})
		},
	}
}

// ResyncAll reconciles every BundleDeployment, e.g. after the webhook CA rotated: each re-renders its
// bundle and applies a new revision when the rendered objects changed. It returns once all are queued.
func (r *BundleDeploymentReconciler) ResyncAll(ctx context.Context) error {
	if r.resync == nil {
		return fmt.Errorf("the BundleDeployment controller is not set up")
	}
	list := &rukpakv1alpha1.BundleDeploymentList{}
	if err := r.Client.List(ctx, list); err != nil {
		return fmt.Errorf("listing BundleDeployments to re-render: %w", err)
	}
	for i := range list.Items {
		select {
		case r.resync <- event.GenericEvent{Object: &list.Items[i]}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
