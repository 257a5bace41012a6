package main

import (
	"context"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// widgetGVK is the version the operator reads and writes: v1, the storage version, so that its
// reads never need the conversion webhook.
var widgetGVK = schema.GroupVersionKind{Group: Group, Version: "v1", Kind: Kind}

func newWidget() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(widgetGVK)
	return u
}

// widgetReconciler writes every Widget's status: the size it observed, phase Reconciled and the
// operator's version.
type widgetReconciler struct {
	client  client.Client
	version string
}

func (r *widgetReconciler) setupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).Named("widget").For(newWidget()).Complete(r)
}

// Reconcile reads the Widget, computes its status and updates it when it differs.
func (r *widgetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	w := newWidget()
	if err := r.client.Get(ctx, req.NamespacedName, w); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	want := desiredStatus(w.Object, r.version)
	if current, _, _ := unstructured.NestedMap(w.Object, "status"); reflect.DeepEqual(current, want) {
		return ctrl.Result{}, nil
	}
	w = w.DeepCopy()
	w.Object["status"] = want
	if err := r.client.Status().Update(ctx, w); err != nil {
		if apierrors.IsConflict(err) {
			// A newer Widget is on its way through the watch; it triggers another reconcile.
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	log.FromContext(ctx).Info("status written", "observedSize", want["observedSize"], "operatorVersion", r.version)
	return ctrl.Result{}, nil
}
