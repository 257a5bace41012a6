package controller

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
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
type Watches struct {
	ctrl  controller.Controller
	cache cache.Cache
	mu    sync.Mutex
	seen  map[schema.GroupVersionKind]bool
}

// Ensure watches the kinds of objs that are not watched yet.
func (w *Watches) Ensure(_ context.Context, objs []*unstructured.Unstructured) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		if w.seen[gvk] {
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		if err := w.ctrl.Watch(source.Kind[client.Object](w.cache, u, handler.EnqueueRequestsFromMapFunc(ownerRequest), appliedChanged{})); err != nil {
			return fmt.Errorf("watching %s: %w", gvk, err)
		}
		w.seen[gvk] = true
	}
	return nil
}

// Kinds is how many kinds are watched.
func (w *Watches) Kinds() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.seen)
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
		For(&rukpakv1alpha1.BundleDeployment{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, deleting{}))).
		Build(r)
	if err != nil {
		return err
	}
	r.Watches = &Watches{ctrl: c, cache: mgr.GetCache(), seen: map[schema.GroupVersionKind]bool{}}
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
// rukpak's own applies.
type appliedChanged struct{ predicate.Funcs }

func (appliedChanged) Create(event.CreateEvent) bool { return false }

func (appliedChanged) Update(e event.UpdateEvent) bool {
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
	gvk := n.GetObjectKind().GroupVersionKind()
	switch gvk.Kind {
	case "Deployment", "StatefulSet", "DaemonSet", "CustomResourceDefinition":
		return true // status drives Healthy
	}
	return false
}
