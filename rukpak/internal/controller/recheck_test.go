package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

func startedRechecks(t *testing.T) (*rechecks, workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	t.Helper()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(q.ShutDown)
	rc := newRechecks(&triggers{pending: map[string]bool{}})
	if err := rc.source().Start(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	return rc, q
}

// next waits for the queue's next request (the timers fire on their own goroutines).
func next(t *testing.T, q workqueue.TypedRateLimitingInterface[reconcile.Request]) string {
	t.Helper()
	got := make(chan reconcile.Request, 1)
	go func() {
		req, _ := q.Get()
		got <- req
	}()
	select {
	case req := <-got:
		q.Done(req)
		return req.Name
	case <-time.After(10 * time.Second):
		t.Fatal("no re-check was enqueued within 10s")
		return ""
	}
}

// A re-check enqueues its BundleDeployment as a health-only event, but every fullRecheckEvery-th,
// which applies in full; any other event noted beside it makes that reconcile apply too.
func TestRechecksAreHealthOnly(t *testing.T) {
	rc, q := startedRechecks(t)
	for i := 1; i <= 2*fullRecheckEvery; i++ {
		if !rc.after("a", time.Millisecond) {
			t.Fatal("a started rechecks must schedule")
		}
		if name := next(t, q); name != "a" {
			t.Fatalf("re-check %d enqueued %q", i, name)
		}
		if got, want := rc.triggers.take("a"), i%fullRecheckEvery != 0; got != want {
			t.Errorf("re-check %d: health-only %v, want %v", i, got, want)
		}
	}
	rc.triggers.note("a", false) // drift while the re-check is due
	rc.after("a", time.Millisecond)
	next(t, q)
	if rc.triggers.take("a") {
		t.Error("a re-check must not make a reconcile that drift asked for health-only")
	}
}

// The sooner of two re-checks wins, one fires; a cancelled one never fires; without a started
// controller nothing is scheduled (the caller requeues).
func TestRechecksKeepTheSoonest(t *testing.T) {
	rc, q := startedRechecks(t)
	rc.after("a", time.Hour)
	rc.after("a", 5*time.Millisecond)
	rc.after("a", time.Hour) // later than the one due: kept as it is
	if name := next(t, q); name != "a" {
		t.Fatalf("enqueued %q", name)
	}
	rc.mu.Lock()
	left, fired := len(rc.pending), rc.fired["a"]
	rc.mu.Unlock()
	if left != 0 || fired != 1 {
		t.Errorf("after the soonest fired: %d pending, %d fired; want 0 and 1", left, fired)
	}
	rc.after("b", 20*time.Millisecond)
	rc.cancel("b")
	rc.after("c", 40*time.Millisecond)
	if name := next(t, q); name != "c" {
		t.Errorf("enqueued %q, want c (b was cancelled)", name)
	}
	if (&rechecks{}).after("a", time.Second) || (*rechecks)(nil).after("a", time.Second) {
		t.Error("rechecks whose controller has not started must not schedule")
	}
	ctx, cancel := context.WithCancel(t.Context())
	stopped := newRechecks(rc.triggers)
	_ = stopped.source().Start(ctx, q)
	cancel()
	if stopped.after("a", time.Second) {
		t.Error("rechecks of a stopped controller must not schedule")
	}
}

// Reconcile's result: an unhealthy BundleDeployment's look is a health re-check, not a requeue (which
// applies in full), and the source is still polled; a healthy one cancels the re-check due.
func TestResultSchedulesHealthRechecks(t *testing.T) {
	rc, _ := startedRechecks(t)
	r := &BundleDeploymentReconciler{rechecks: rc}
	bd := &rukpakv1alpha1.BundleDeployment{}
	bd.Name = "a"
	got, err := r.result(t.Context(), bd, &state{healthy: errors.New("not ready")}, nil)
	if err != nil || got != (ctrl.Result{}) {
		t.Errorf("unhealthy: %+v, %v; want no requeue (the re-check is a timer)", got, err)
	}
	rc.mu.Lock()
	p := rc.pending["a"]
	rc.mu.Unlock()
	if p == nil || time.Until(p.due) > unhealthyRecheck || time.Until(p.due) < unhealthyRecheck-time.Minute {
		t.Fatalf("unhealthy: re-check %+v, want one due in %s", p, unhealthyRecheck)
	}
	if _, err := r.result(t.Context(), bd, &state{}, nil); err != nil {
		t.Fatal(err)
	}
	rc.mu.Lock()
	_, still := rc.pending["a"]
	rc.mu.Unlock()
	if still {
		t.Error("healthy: the re-check due must be cancelled")
	}
}

// The events that ask for a full reconcile through a channel (CA rotation, a registry that answered,
// a valuesFrom document) override health-only events pending beside them.
func TestFullEventsOverrideHealthOnly(t *testing.T) {
	tr := &triggers{pending: map[string]bool{}}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	tr.note("a", true)
	bd := &rukpakv1alpha1.BundleDeployment{}
	bd.Name = "a"
	tr.full().Generic(t.Context(), event.GenericEvent{Object: bd}, q)
	if req, _ := q.Get(); req.NamespacedName != (types.NamespacedName{Name: "a"}) {
		t.Errorf("enqueued %v", req)
	}
	if tr.take("a") {
		t.Error("a full event must make the reconcile apply")
	}
}
