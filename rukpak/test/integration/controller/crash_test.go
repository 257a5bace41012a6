package controller

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/apply"
)

// Engine-level tests on a real API server: a "crash" is a panic injected into the client after a
// number of writes, which unwinds Apply at that line exactly as a killed process stops there (no
// error handling runs); the next Apply runs on a fresh Engine over the same release storage.

// errCrash is the value the injected crash panics with.
var errCrash = fmt.Errorf("injected crash")

type engineHooks struct {
	// crashAfter, when > 0, panics on the crashAfter-th Apply call.
	crashAfter int
	// beforeDelete / beforeApply run before the matching call reaches the API server.
	beforeDelete func(ctx context.Context, obj client.Object)
	beforeApply  func(ctx context.Context, obj runtime.ApplyConfiguration)
}

func testEngine(t *testing.T, hooks engineHooks) *apply.Engine {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	base, err := client.NewWithWatch(restConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	var applies atomic.Int32
	c := interceptor.NewClient(base, interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			if n := int(applies.Add(1)); hooks.crashAfter > 0 && n == hooks.crashAfter {
				panic(errCrash)
			}
			if hooks.beforeApply != nil {
				hooks.beforeApply(ctx, obj)
			}
			return c.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if hooks.beforeDelete != nil {
				hooks.beforeDelete(ctx, obj)
			}
			return c.Delete(ctx, obj, opts...)
		},
	})
	return &apply.Engine{Client: c, Scheme: scheme, Storage: apply.NewSecretsStorage(clientset, systemNamespace, 10)}
}

// applyCrashing runs Apply and reports whether it crashed (the injected panic).
func applyCrashing(t *testing.T, e *apply.Engine, req apply.Request) (crashed bool) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			if r != errCrash {
				panic(r)
			}
			crashed = true
		}
	}()
	if _, err := e.Apply(t.Context(), req); err != nil {
		t.Fatalf("apply: %v", err)
	}
	return false
}

func configMaps(ns string, value string, names ...string) []client.Object {
	var out []client.Object
	for _, n := range names {
		out = append(out, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: ns}, Data: map[string]string{"value": value}})
	}
	return out
}

func createNamespace(t *testing.T, name string) {
	t.Helper()
	if err := k8s.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
}

// releaseStatuses lists the stored revisions of release name: version → status.
func releaseStatuses(t *testing.T, name string) map[int]release.Status {
	t.Helper()
	hist, err := apply.NewSecretsStorage(clientset, systemNamespace, 10).History(name)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]release.Status{}
	for _, r := range hist {
		out[r.Version] = r.Info.Status
	}
	return out
}

func wantStatuses(t *testing.T, name string, want map[int]release.Status) {
	t.Helper()
	got := releaseStatuses(t, name)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("release %s revisions: got %v, want %v", name, got, want)
	}
}

// TestCrashedInstallIsOneRevision: however often an install is interrupted, it ends as revision 1
// with no pending record.
func TestCrashedInstallIsOneRevision(t *testing.T) {
	const name = "crash-install"
	createNamespace(t, name)
	req := apply.Request{Name: name, Namespace: name, Objects: configMaps(name, "1", "a", "b", "c", "d", "e", "f")}
	for _, at := range []int{2, 5, 1} {
		if !applyCrashing(t, testEngine(t, engineHooks{crashAfter: at}), req) {
			t.Fatalf("the crash after %d applies was not injected", at)
		}
		wantStatuses(t, name, map[int]release.Status{1: release.StatusPendingInstall})
	}
	res, err := testEngine(t, engineHooks{}).Apply(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.Revision != 1 || !res.Changed {
		t.Fatalf("resumed install: revision %d, changed %v; want revision 1, changed", res.Revision, res.Changed)
	}
	wantStatuses(t, name, map[int]release.Status{1: release.StatusDeployed})
}

// TestCrashedUpgradeIsOneRevision: an interrupted upgrade, resumed, adds exactly one revision and
// prunes what the upgrade dropped.
func TestCrashedUpgradeIsOneRevision(t *testing.T) {
	const name = "crash-upgrade"
	createNamespace(t, name)
	v1 := apply.Request{Name: name, Namespace: name, Objects: configMaps(name, "1", "a", "b", "c")}
	v2 := apply.Request{Name: name, Namespace: name, Objects: configMaps(name, "2", "a", "c", "d")}
	if _, err := testEngine(t, engineHooks{}).Apply(t.Context(), v1); err != nil {
		t.Fatal(err)
	}
	for _, at := range []int{1, 3} {
		if !applyCrashing(t, testEngine(t, engineHooks{crashAfter: at}), v2) {
			t.Fatal("the crash was not injected")
		}
		wantStatuses(t, name, map[int]release.Status{1: release.StatusDeployed, 2: release.StatusPendingUpgrade})
	}
	res, err := testEngine(t, engineHooks{}).Apply(t.Context(), v2)
	if err != nil {
		t.Fatal(err)
	}
	if res.Revision != 2 || !res.Changed {
		t.Fatalf("resumed upgrade: revision %d, changed %v", res.Revision, res.Changed)
	}
	wantStatuses(t, name, map[int]release.Status{1: release.StatusSuperseded, 2: release.StatusDeployed})
	if _, err := getCM(t, name, "b"); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap b, dropped by the resumed upgrade, was not pruned: %v", err)
	}
	if cm, err := getCM(t, name, "d"); err != nil || cm.Data["value"] != "2" {
		t.Errorf("ConfigMap d of revision 2: %v %v", cm.Data, err)
	}
}

// TestAbandonedUpgradeIsClosed: an upgrade interrupted by a crash and then abandoned (the spec goes
// back to the installed content) is closed, and what it added is removed.
func TestAbandonedUpgradeIsClosed(t *testing.T) {
	const name = "crash-abandon"
	createNamespace(t, name)
	v1 := apply.Request{Name: name, Namespace: name, Objects: configMaps(name, "1", "a")}
	v2 := apply.Request{Name: name, Namespace: name, Objects: configMaps(name, "2", "a", "extra", "z")}
	if _, err := testEngine(t, engineHooks{}).Apply(t.Context(), v1); err != nil {
		t.Fatal(err)
	}
	if !applyCrashing(t, testEngine(t, engineHooks{crashAfter: 3}), v2) { // a and extra applied
		t.Fatal("the crash was not injected")
	}
	if _, err := getCM(t, name, "extra"); err != nil {
		t.Fatalf("the interrupted upgrade should have created extra before the crash: %v", err)
	}
	res, err := testEngine(t, engineHooks{}).Apply(t.Context(), v1)
	if err != nil {
		t.Fatal(err)
	}
	if res.Revision != 1 || res.Changed {
		t.Fatalf("going back to revision 1: revision %d, changed %v", res.Revision, res.Changed)
	}
	wantStatuses(t, name, map[int]release.Status{1: release.StatusDeployed, 2: release.StatusFailed})
	if _, err := getCM(t, name, "extra"); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap extra, added by the abandoned upgrade, is still there: %v", err)
	}
	if cm, err := getCM(t, name, "a"); err != nil || cm.Data["value"] != "1" {
		t.Errorf("ConfigMap a is not back at revision 1: %v %v", cm.Data, err)
	}
}

// TestTwoDeployedRevisionsAreSettled: a crash between marking the new revision deployed and the old
// one superseded leaves both deployed; the next Apply marks the old one superseded.
func TestTwoDeployedRevisionsAreSettled(t *testing.T) {
	const name = "crash-marks"
	createNamespace(t, name)
	e := testEngine(t, engineHooks{})
	v2 := apply.Request{Name: name, Namespace: name, Objects: configMaps(name, "2", "a")}
	for _, req := range []apply.Request{{Name: name, Namespace: name, Objects: configMaps(name, "1", "a")}, v2} {
		if _, err := e.Apply(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	old, err := e.Storage.Get(name, 1)
	if err != nil {
		t.Fatal(err)
	}
	old.SetStatus(release.StatusDeployed, "as a crash leaves it")
	if err := e.Storage.Update(old); err != nil {
		t.Fatal(err)
	}
	res, err := e.Apply(t.Context(), v2)
	if err != nil || res.Revision != 2 || res.Changed {
		t.Fatalf("re-apply: %+v, %v", res, err)
	}
	wantStatuses(t, name, map[int]release.Status{1: release.StatusSuperseded, 2: release.StatusDeployed})
}

// TestOwnershipChangesBeforeDelete: another owner takes an object between rukpak's ownership check
// and its delete; the delete's preconditions make the other owner win and the object is left alone.
func TestOwnershipChangesBeforeDelete(t *testing.T) {
	const name = "race-delete"
	createNamespace(t, name)
	if _, err := testEngine(t, engineHooks{}).Apply(t.Context(), apply.Request{Name: name, Namespace: name, Objects: configMaps(name, "1", "a", "b")}); err != nil {
		t.Fatal(err)
	}
	var raced atomic.Bool
	e := testEngine(t, engineHooks{beforeDelete: func(ctx context.Context, obj client.Object) {
		if obj.GetName() != "b" || raced.Swap(true) {
			return
		}
		cm, err := getCM(t, name, "b")
		if err != nil {
			t.Error(err)
			return
		}
		cm.Labels = map[string]string{"team": "payments"} // ownership moves away
		if err := k8s.Update(ctx, cm); err != nil {
			t.Error(err)
		}
	}})
	leftAlone, err := e.Uninstall(t.Context(), name, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if !raced.Load() {
		t.Fatal("the race was not injected")
	}
	if len(leftAlone) != 1 || leftAlone[0] != "ConfigMap "+name+"/b" {
		t.Errorf("left alone: %v, want ConfigMap b", leftAlone)
	}
	if _, err := getCM(t, name, "a"); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap a, still owned, was not deleted: %v", err)
	}
	if cm, err := getCM(t, name, "b"); err != nil || cm.Labels["team"] != "payments" {
		t.Errorf("ConfigMap b, taken by another owner before the delete, was deleted: %v", err)
	}
}

// TestOwnershipChangesBeforeAdoption: an object gains a controller between the collision check and
// the apply that would adopt it; the apply's resourceVersion precondition fails, the policy is
// decided again and the object is not taken.
func TestOwnershipChangesBeforeAdoption(t *testing.T) {
	const name = "race-adopt"
	createNamespace(t, name)
	user := userConfigMap(t, name, "legacy", nil)
	owner := userConfigMap(t, name, "owner", nil)
	var raced atomic.Bool
	e := testEngine(t, engineHooks{beforeApply: func(ctx context.Context, _ runtime.ApplyConfiguration) {
		if raced.Swap(true) {
			return
		}
		cm, err := getCM(t, name, "legacy")
		if err != nil {
			t.Error(err)
			return
		}
		yes := true
		cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, Controller: &yes}}
		if err := k8s.Update(ctx, cm); err != nil {
			t.Error(err)
		}
	}})
	_, err := e.Apply(t.Context(), apply.Request{Name: name, Namespace: name, Objects: configMaps(name, "bundle", "legacy"),
		CollisionPolicy: rukpakv1alpha1.CollisionPolicyIfNoController})
	var ce *apply.ConflictError
	if !raced.Load() || err == nil || !errors.As(err, &ce) {
		t.Fatalf("want a ConflictError after the race, got %v (raced %v)", err, raced.Load())
	}
	cm, err := getCM(t, name, "legacy")
	if err != nil || cm.Data["dbPassword"] != user.Data["dbPassword"] || cm.Data["value"] != "" || cm.Labels[apply.OwnerNameLabel] != "" {
		t.Fatalf("the object that gained a controller was taken: %v, data %v, labels %v", err, cm.Data, cm.Labels)
	}
}
