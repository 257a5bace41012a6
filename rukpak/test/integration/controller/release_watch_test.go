package controller

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/apply"
)

// Release records are watched (issue 18 follow-up): a BundleDeployment blocked by an unreadable
// record continues as soon as the record is set aside or deleted. These tests give the blocked
// BundleDeployment a back-off of an hour, so that only the watch of the records can unblock it
// within recordWatchBound; the recovery tests in corrupt_release_test.go run with the normal
// back-off.

// recordWatchBound bounds the recovery after a record is set aside or deleted.
const recordWatchBound = 5 * time.Second

// slowRetry is the back-off of the BundleDeployments a test slows down.
const slowRetry = time.Hour

// retries is the controller's rate limiter: controller-runtime's default back-off, except that a
// BundleDeployment a test slowed down waits slowRetry before each retry; it counts those retries.
var retries = &retryLimiter{
	TypedRateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, 1000*time.Second),
	slowed:           map[string]int{},
}

type retryLimiter struct {
	workqueue.TypedRateLimiter[reconcile.Request]
	mu     sync.Mutex
	slowed map[string]int // BundleDeployment → retries scheduled slowRetry later
}

func (l *retryLimiter) When(req reconcile.Request) time.Duration {
	d := l.TypedRateLimiter.When(req)
	l.mu.Lock()
	defer l.mu.Unlock()
	if n, ok := l.slowed[req.Name]; ok {
		l.slowed[req.Name] = n + 1
		return slowRetry
	}
	return d
}

// slowDown makes every retry of BundleDeployment name wait slowRetry, until the test ends.
func (l *retryLimiter) slowDown(t *testing.T, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.slowed[name] = 0
	t.Cleanup(func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.slowed, name)
	})
}

func (l *retryLimiter) slowRetries(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.slowed[name]
}

// waitBlocked waits until BundleDeployment name failed and was put back for slowRetry, and until
// the controller's own cache shows what the API server says (the watch of the records decides from
// it): the moment a user, reading the message, acts.
func waitBlocked(t *testing.T, name string, blocked func(bd *rukpakv1alpha1.BundleDeployment) bool) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%s to back off for %v", name, slowRetry), func(ctx context.Context) (bool, error) {
		bd := &rukpakv1alpha1.BundleDeployment{}
		if err := reconciler.Client.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
			return false, err
		}
		return retries.slowRetries(name) > 0 && blocked(bd), nil
	})
}

func releaseCorrupt(bd *rukpakv1alpha1.BundleDeployment) bool {
	c := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled)
	return c != nil && c.Reason == apply.ReasonReleaseCorrupt && c.ObservedGeneration == bd.Generation
}

// within polls f until it holds, failing the test when that takes longer than bound; it returns
// how long it took.
func within(t *testing.T, bound time.Duration, what string, f func(ctx context.Context) (bool, error)) time.Duration {
	t.Helper()
	start := time.Now()
	if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, bound, true, f); err != nil {
		t.Fatalf("%s not within %v (the BundleDeployment's next retry is %v away): %v", what, bound, slowRetry, err)
	}
	return time.Since(start)
}

// installedAt reports whether BundleDeployment name has installed revision at its current
// generation.
func installedAt(name string, revision int64) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		bd := &rukpakv1alpha1.BundleDeployment{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == bd.Generation && bd.Status.InstalledRevision == revision, nil
	}
}

// TestRecordSetAsideUnblocksAtOnce: an upgrade blocked by a truncated record is installed as soon
// as the record is set aside, with the BundleDeployment's next retry an hour away.
func TestRecordSetAsideUnblocksAtOnce(t *testing.T) {
	const name = "record-watch-aside"
	writeBundle(t, "example.com/record-watch-aside:v1", map[string]string{"a.yaml": configMap("a", "1")})
	writeBundle(t, "example.com/record-watch-aside:v2", map[string]string{"a.yaml": configMap("a", "2")})
	writeBundle(t, "example.com/record-watch-aside:v3", map[string]string{"a.yaml": configMap("a", "3")})
	newBD(t, name, "example.com/record-watch-aside:v1")
	waitRevision(t, name, 1)
	setRef(t, name, "example.com/record-watch-aside:v2")
	waitRevision(t, name, 2)
	uids := uidsOf(t, name, "a")

	key := recordName(name, 2)
	truncateRecord(t, key)
	retries.slowDown(t, name)
	setRef(t, name, "example.com/record-watch-aside:v3")
	waitBlocked(t, name, releaseCorrupt)
	wantConfigMaps(t, name, uids, map[string]string{"a": "2"})

	s := getRecord(t, key)
	s.Labels["owner"] = apply.SetAsideOwner
	updateRecord(t, s)
	took := within(t, recordWatchBound, "revision 3 after the record was set aside", installedAt(name, 3))
	t.Logf("set aside: revision 3 installed %v later (next retry %v away)", took.Round(time.Millisecond), slowRetry)
	wantConfigMaps(t, name, uids, map[string]string{"a": "3"})
}

// TestUnlabelledRecordDeletedUnblocksAtOnce: a record whose owner label was removed hides from
// the history and blocks the next revision; deleting it (a record outside owner=helm: the watch
// selects records by their Secret type) lets the revision be installed at once.
func TestUnlabelledRecordDeletedUnblocksAtOnce(t *testing.T) {
	const name = "record-watch-unlabelled"
	writeBundle(t, "example.com/record-watch-unlabelled:v1", map[string]string{"a.yaml": configMap("a", "1")})
	writeBundle(t, "example.com/record-watch-unlabelled:v2", map[string]string{"a.yaml": configMap("a", "2")})
	newBD(t, name, "example.com/record-watch-unlabelled:v1")
	waitRevision(t, name, 1)
	uids := uidsOf(t, name, "a")

	key := recordName(name, 1)
	s := getRecord(t, key)
	delete(s.Labels, "owner")
	updateRecord(t, s)
	retries.slowDown(t, name)
	setRef(t, name, "example.com/record-watch-unlabelled:v2")
	waitBlocked(t, name, releaseCorrupt)
	wantConfigMaps(t, name, uids, map[string]string{"a": "1"})

	if err := clientset.CoreV1().Secrets(systemNamespace).Delete(t.Context(), key, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	took := within(t, recordWatchBound, "the new revision after the record was deleted", installedAt(name, 1))
	t.Logf("deleted: revision 1 (the deleted record's number) installed %v later (next retry %v away)", took.Round(time.Millisecond), slowRetry)
	wantConfigMaps(t, name, uids, map[string]string{"a": "2"})
}

// TestRecordSetAsideUnblocksUninstallAtOnce: a deletion waiting on an unreadable record completes
// as soon as the record is set aside.
func TestRecordSetAsideUnblocksUninstallAtOnce(t *testing.T) {
	const name = "record-watch-uninstall"
	writeBundle(t, "example.com/record-watch-uninstall:v1", map[string]string{"a.yaml": configMap("a", "1")})
	newBD(t, name, "example.com/record-watch-uninstall:v1")
	waitRevision(t, name, 1)
	key := recordName(name, 1)
	rewriteRecord(t, key, func(rec map[string]any) { rec["manifest"] = "{{{ not yaml" })

	retries.slowDown(t, name)
	bd := &rukpakv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8s.Delete(t.Context(), bd); err != nil {
		t.Fatal(err)
	}
	waitBlocked(t, name, func(bd *rukpakv1alpha1.BundleDeployment) bool { return !bd.DeletionTimestamp.IsZero() })

	s := getRecord(t, key)
	s.Labels["owner"] = apply.SetAsideOwner
	updateRecord(t, s)
	took := within(t, recordWatchBound, "the BundleDeployment to be gone after its record was set aside", func(ctx context.Context) (bool, error) {
		err := k8s.Get(ctx, client.ObjectKey{Name: name}, bd)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	t.Logf("set aside: uninstalled %v later (next retry %v away)", took.Round(time.Millisecond), slowRetry)
}
