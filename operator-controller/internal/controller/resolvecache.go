package controller

import (
	"context"
	"maps"
	"slices"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/deppy/pkg/olm"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// Most reconciles change nothing that resolution reads: a BundleDeployment's status moved (it was
// unpacked, installed, became healthy), or a catalog update re-reconciled every Operator and the
// first of them resolved already. Before this, each such reconcile still listed every Operator and
// BundleDeployment and rebuilt and compared every request (O(n) per reconcile, O(n²) over the
// install or upgrade of n Operators, and most of operator-controller's garbage). Now the informers
// count every change to what resolution reads (inputEpoch), and a reconcile whose count is that of
// the last resolution, and whose own Operator and BundleDeployment are those the last resolution
// read, takes its outcome without listing anything.
//
// The count is read before the listing: a change stored in the cache before the listing is in the
// listing, and a change counted after the read makes the next reconcile list again. Informer
// handlers run some time after the cache holds the change, and each handler on its own; so the
// reconciled Operator's own generation, deletion and UID and its BundleDeployment's annotations are
// compared with those read (inputsSeen), and the handler that re-reconciles every Operator
// (SetupWithManager) counts the change itself before it enqueues them.

// inputEpoch counts the changes to what resolution reads.
type inputEpoch struct{ n atomic.Uint64 }

func (e *inputEpoch) bump()        { e.n.Add(1) }
func (e *inputEpoch) load() uint64 { return e.n.Load() }

// inputSeen is what resolution read of one Operator and its BundleDeployment.
type inputSeen struct {
	uid        types.UID
	generation int64
	deleting   bool
	hasBD      bool
	// bdAnnotations are the BundleDeployment's annotations as listed (shared with the cache, which
	// replaces objects rather than changing them: read only).
	bdAnnotations map[string]string
}

func seenOf(op *operatorsv1alpha1.Operator, bd *rukpakv1alpha1.BundleDeployment) inputSeen {
	s := inputSeen{uid: op.UID, generation: op.Generation, deleting: !op.DeletionTimestamp.IsZero()}
	if bd != nil {
		s.hasBD, s.bdAnnotations = true, bd.Annotations
	}
	return s
}

// lastResolution is the inputs and results of the last resolution that ran to the end.
type lastResolution struct {
	epoch   uint64
	cluster string
	seen    map[string]inputSeen
	invalid map[string]string
	idx     *olm.Index
	cats    []catalogdv1alpha1.Catalog
}

// answers reports whether l was resolved from the inputs a reconcile of op, whose BundleDeployment
// is bd, sees now at epoch and cluster.
func (l *lastResolution) answers(epoch uint64, cluster string, op *operatorsv1alpha1.Operator, bd *rukpakv1alpha1.BundleDeployment) bool {
	if l == nil || l.epoch != epoch || l.cluster != cluster {
		return false
	}
	s, ok := l.seen[op.Name]
	now := seenOf(op, bd)
	return ok && s.uid == now.uid && s.generation == now.generation && s.deleting == now.deleting &&
		s.hasBD == now.hasBD && maps.Equal(s.bdAnnotations, now.bdAnnotations)
}

// countInputs is an event handler that enqueues nothing and counts the events that change what
// resolution reads of an object: every creation and deletion, and the updates changed reports.
func countInputs(e *inputEpoch, changed func(old, new client.Object) bool) handler.EventHandler {
	return handler.Funcs{
		CreateFunc: func(context.Context, event.CreateEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			e.bump()
		},
		UpdateFunc: func(_ context.Context, ev event.UpdateEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if ev.ObjectOld == nil || ev.ObjectNew == nil || changed(ev.ObjectOld, ev.ObjectNew) {
				e.bump()
			}
		},
		DeleteFunc: func(context.Context, event.DeleteEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			e.bump()
		},
		GenericFunc: func(context.Context, event.GenericEvent, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			e.bump()
		},
	}
}

// operatorInputChanged: resolution reads an Operator's spec (its generation), whether it is being
// deleted, and, through its BundleDeployment's ownerReference, its UID.
func operatorInputChanged(old, new client.Object) bool {
	return old.GetGeneration() != new.GetGeneration() || old.GetUID() != new.GetUID() ||
		old.GetDeletionTimestamp().IsZero() != new.GetDeletionTimestamp().IsZero()
}

// bundleDeploymentInputChanged: resolution reads a BundleDeployment's annotations (what is
// installed) and finds its Operator by its owner label and ownerReference; its status is not read.
func bundleDeploymentInputChanged(old, new client.Object) bool {
	return !maps.Equal(old.GetLabels(), new.GetLabels()) || !maps.Equal(old.GetAnnotations(), new.GetAnnotations()) ||
		!slices.EqualFunc(old.GetOwnerReferences(), new.GetOwnerReferences(), func(a, b metav1.OwnerReference) bool {
			return equality.Semantic.DeepEqual(a, b)
		})
}

// anyChange: every update of a Catalog counts (they are rare, and resolution reads its status).
func anyChange(_, _ client.Object) bool { return true }
