package controller

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// An unhealthy BundleDeployment is looked at again every unhealthyRecheck even when no watched object
// changes, and an installed revision again when its progress deadline passes. Those looks are about
// health: drift, deletions of applied objects and changes of the BundleDeployment are watched and
// re-apply at once. Before this, each look was a requeue, which the reconcile could not tell from
// any other and so re-applied everything (unpack from the cache, render, apply every object, read
// the release history: about 20 requests). With 1,000 Operators whose pods are slow to start, those
// re-applies were most of the API server's work while the others installed (docs/performance.md).
//
// Now the looks are timers that, when they fire, note a health-only event (triggers) and enqueue the
// BundleDeployment, exactly as a status change of an applied object does: the reconcile checks
// health only when nothing else asked for it since, and applies in full otherwise. Every
// fullRecheckEvery-th look of a BundleDeployment re-applies anyway, so that whatever the watches
// could miss is still corrected, only less often.

// fullRecheckEvery: every how many re-checks of one BundleDeployment one is a full reconcile.
const fullRecheckEvery = 10

// rechecks schedules the re-checks of BundleDeployments.
type rechecks struct {
	triggers *triggers
	mu       sync.Mutex
	queue    workqueue.TypedRateLimitingInterface[reconcile.Request] // the controller's, once started
	ctx      context.Context
	pending  map[string]*pendingRecheck
	fired    map[string]int // BundleDeployment → re-checks fired (for fullRecheckEvery)
}

type pendingRecheck struct {
	timer *time.Timer
	due   time.Time
}

func newRechecks(t *triggers) *rechecks {
	return &rechecks{triggers: t, pending: map[string]*pendingRecheck{}, fired: map[string]int{}}
}

// source hands the rechecks the controller's queue when the controller starts.
func (rc *rechecks) source() source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		rc.queue, rc.ctx = q, ctx
		return nil
	})
}

// after schedules a re-check of name in d, unless one is due sooner already. It returns false when it
// cannot (the controller has not started, or is stopping): the caller requeues instead, which
// applies in full.
func (rc *rechecks) after(name string, d time.Duration) bool {
	if rc == nil {
		return false
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.queue == nil || rc.ctx.Err() != nil {
		return false
	}
	due := time.Now().Add(d)
	if p, ok := rc.pending[name]; ok {
		if !p.due.After(due) {
			return true
		}
		p.timer.Stop()
	}
	p := &pendingRecheck{due: due}
	p.timer = time.AfterFunc(d, func() { rc.fire(name, p) })
	rc.pending[name] = p
	return true
}

// fire notes the re-check of name (health-only but every fullRecheckEvery-th) and enqueues it.
func (rc *rechecks) fire(name string, p *pendingRecheck) {
	rc.mu.Lock()
	if rc.pending[name] != p {
		rc.mu.Unlock() // replaced by a sooner one after it had fired already
		return
	}
	delete(rc.pending, name)
	rc.fired[name]++
	healthOnly := rc.fired[name]%fullRecheckEvery != 0
	q, stopped := rc.queue, rc.ctx.Err() != nil
	rc.mu.Unlock()
	if stopped {
		return
	}
	rc.triggers.note(name, healthOnly)
	q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
}

// cancel forgets the re-checks of name (it is gone, or no longer needs them).
func (rc *rechecks) cancel(name string) {
	if rc == nil {
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if p, ok := rc.pending[name]; ok {
		p.timer.Stop()
		delete(rc.pending, name)
	}
}

// forget is cancel for a BundleDeployment that is gone: its count goes too.
func (rc *rechecks) forget(name string) {
	if rc == nil {
		return
	}
	rc.cancel(name)
	rc.mu.Lock()
	delete(rc.fired, name)
	rc.mu.Unlock()
}
