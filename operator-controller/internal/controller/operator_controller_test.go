package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	operatorsv2 "github.com/operator-framework/api/pkg/operators/v2"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	operators "github.com/olmv1/olmv1/deppy/pkg/operators"
	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/catalogs"
	"github.com/olmv1/olmv1/platform/step"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// fakeContent serves the content of every catalog from one FBC string, or fails with err.
type fakeContent struct {
	mu  sync.Mutex
	fbc string
	err error
}

func (f *fakeContent) set(fbc string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fbc, f.err = fbc, err
}

func (f *fakeContent) ReadCatalog(_ context.Context, _ string) (*declcfg.DeclarativeConfig, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	return declcfg.LoadReader(strings.NewReader(f.fbc))
}

// pkgFBC is package pkg with one bundle pkg.v1.0.0 of media type mediaType ("" for registry+v1).
func pkgFBC(mediaType string) string {
	props := `{"type":"olm.package","value":{"packageName":"pkg","version":"1.0.0"}}`
	if mediaType != "" {
		props += fmt.Sprintf(`,{"type":"olm.bundle.mediatype","value":%q}`, mediaType)
	}
	return `{"schema":"olm.package","name":"pkg","defaultChannel":"stable"}` + "\n" +
		`{"schema":"olm.channel","package":"pkg","name":"stable","entries":[{"name":"pkg.v1.0.0"}]}` + "\n" +
		`{"schema":"olm.bundle","package":"pkg","name":"pkg.v1.0.0","image":"registry.test/pkg:1","properties":[` + props + `]}` + "\n"
}

// reconcilerHarness is an OperatorReconciler over controller-runtime's fake client with one served
// Catalog whose content the test sets, and a fake Event recorder.
type reconcilerHarness struct {
	r       *OperatorReconciler
	c       client.Client
	content *fakeContent
	rec     *events.FakeRecorder
}

func newReconcilerHarness(t *testing.T, objs ...client.Object) *reconcilerHarness {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, operatorsv1alpha1.AddToScheme, catalogdv1alpha1.AddToScheme, rukpakv1alpha1.AddToScheme, operatorsv2.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	cat := &catalogdv1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: "main"}}
	cat.Status.ContentHash = "h1"
	cat.Status.Conditions = []metav1.Condition{{Type: catalogdv1alpha1.TypeServing, Status: metav1.ConditionTrue, Reason: catalogdv1alpha1.ReasonServing}}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(append(objs, cat)...).
		WithStatusSubresource(&operatorsv1alpha1.Operator{}, &catalogdv1alpha1.Catalog{}, &rukpakv1alpha1.BundleDeployment{}).Build()
	h := &reconcilerHarness{c: c, content: &fakeContent{}, rec: events.NewFakeRecorder(100)}
	h.r = &OperatorReconciler{Client: c, APIReader: c, Catalogs: &catalogs.Cache{Reader: h.content}, Recorder: h.rec}
	return h
}

func (h *reconcilerHarness) reconcile(t *testing.T, name string) (ctrl.Result, error) {
	t.Helper()
	return h.r.Reconcile(t.Context(), ctrl.Request{NamespacedName: types.NamespacedName{Name: name}})
}

// events drains the Events recorded so far ("<type> <reason> <message>").
func (h *reconcilerHarness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func (h *reconcilerHarness) operator(t *testing.T, name string) *operatorsv1alpha1.Operator {
	t.Helper()
	op := &operatorsv1alpha1.Operator{}
	if err := h.c.Get(t.Context(), types.NamespacedName{Name: name}, op); err != nil {
		t.Fatal(err)
	}
	return op
}

func (h *reconcilerHarness) bundleDeployment(t *testing.T, name string) *rukpakv1alpha1.BundleDeployment {
	t.Helper()
	bd := &rukpakv1alpha1.BundleDeployment{}
	if err := h.c.Get(t.Context(), types.NamespacedName{Name: name}, bd); err != nil {
		t.Fatal(err)
	}
	return bd
}

// pkgBundleDeployment is the BundleDeployment operator-controller writes for op to install pkgFBC's
// bundle into ns.
func pkgBundleDeployment(t *testing.T, op *operatorsv1alpha1.Operator, ns string) *rukpakv1alpha1.BundleDeployment {
	t.Helper()
	b := &operators.Bundle{Name: "pkg.v1.0.0", Package: "pkg", Version: "1.0.0", Catalog: "main", Image: "registry.test/pkg:1"}
	bd, err := desiredBundleDeployment(op, b, ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	return bd
}

func newOperator(name string) *operatorsv1alpha1.Operator {
	return &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: operatorsv1alpha1.OperatorSpec{PackageName: "pkg"}}
}

// withAction keeps the Events whose message is about condition type t.
func withAction(events []string, t string) []string {
	var out []string
	for _, e := range events {
		if strings.Contains(e, " "+t+"=") {
			out = append(out, e)
		}
	}
	return out
}

func countType(events []string, typ string) int {
	n := 0
	for _, e := range events {
		if strings.HasPrefix(e, typ+" ") {
			n++
		}
	}
	return n
}

// TestConditionEventsOnFailedThenSuccessfulResolution: resolution that cannot run (a catalog
// cannot be read) and then succeeds gives one Warning on Resolved, then one Normal, and those are
// the only Resolved Events and the only Warning; a reconcile that changes nothing records none.
func TestConditionEventsOnFailedThenSuccessfulResolution(t *testing.T) {
	h := newReconcilerHarness(t, newOperator("op"))

	h.content.set("", errors.New("catalog main: connection refused"))
	if res, err := h.reconcile(t, "op"); err != nil || res.RequeueAfter != 30*time.Second {
		t.Fatalf("failed resolution: result %+v, error %v; want a look again in 30s and no error", res, err)
	}
	first := h.events()

	h.content.set(pkgFBC(""), nil)
	if res, err := h.reconcile(t, "op"); err != nil || !res.IsZero() {
		t.Fatalf("successful resolution: result %+v, error %v", res, err)
	}
	second := h.events()
	t.Logf("first reconcile: %q", first)
	t.Logf("second reconcile: %q", second)

	all := append(append([]string(nil), first...), second...)
	resolved := withAction(all, operatorsv1alpha1.TypeResolved)
	if len(resolved) != 2 ||
		!strings.HasPrefix(resolved[0], "Warning "+operatorsv1alpha1.ReasonResolutionFailed+" Resolved=False: ") || !strings.Contains(resolved[0], "connection refused") ||
		!strings.HasPrefix(resolved[1], "Normal "+operatorsv1alpha1.ReasonResolutionSucceeded+" Resolved=True: ") {
		t.Errorf("Resolved Events: %q; want one Warning ResolutionFailed then one Normal ResolutionSucceeded", resolved)
	}
	if len(withAction(first, operatorsv1alpha1.TypeResolved)) != 1 || len(withAction(second, operatorsv1alpha1.TypeResolved)) != 1 {
		t.Errorf("want the Warning from the first reconcile and the Normal from the second: %q, %q", first, second)
	}
	if n := countType(all, corev1.EventTypeWarning); n != 1 {
		t.Errorf("%d Warnings; want only the failed resolution's: %q", n, all)
	}

	if _, err := h.reconcile(t, "op"); err != nil {
		t.Fatal(err)
	}
	if again := h.events(); len(again) != 0 {
		t.Errorf("a reconcile that changes no condition recorded %q", again)
	}
}

// TestStaleStatusInstallNamespaceIsNotRead: status.installNamespace is output only. An Operator whose
// status names a stale or garbage namespace installs into its BundleDeployment's namespace or, when
// it has none (it was deleted), into the one its spec and bundle give; no namespace is created for
// the status value, and the status is corrected.
func TestStaleStatusInstallNamespaceIsNotRead(t *testing.T) {
	const garbage = "Not a Namespace!"
	for _, tc := range []struct {
		name   string
		bdNS   string // the existing BundleDeployment's namespace ("": none)
		want   string
		absent []string
	}{
		{"with a BundleDeployment", "installed-here", "installed-here", []string{garbage, "pkg"}},
		{"without one", "", "pkg", []string{garbage}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := newOperator("op")
			op.Finalizers = []string{Finalizer}
			op.Status.InstallNamespace = garbage
			objs := []client.Object{op}
			if tc.bdNS != "" {
				objs = append(objs, pkgBundleDeployment(t, op, tc.bdNS))
			}
			h := newReconcilerHarness(t, objs...)
			h.content.set(pkgFBC(""), nil)

			if _, err := h.reconcile(t, "op"); err != nil {
				t.Fatal(err)
			}
			got := h.bundleDeployment(t, "op")
			if got.Spec.InstallNamespace != tc.want {
				t.Errorf("BundleDeployment installs into %q; want %q", got.Spec.InstallNamespace, tc.want)
			}
			if s := h.operator(t, "op").Status.InstallNamespace; s != tc.want {
				t.Errorf("status.installNamespace %q; want it to report %q", s, tc.want)
			}
			for _, name := range tc.absent {
				if err := h.c.Get(t.Context(), types.NamespacedName{Name: name}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
					t.Errorf("namespace %q: %v; want none created", name, err)
				}
			}
		})
	}
}

// TestReconcileResults: what Reconcile returns for each failure. Resolution that cannot run is
// looked at again after 30s without an error; an install that retrying cannot fix is a terminal
// error (no retry), with the step's reason on Installed and one Warning Event.
func TestReconcileResults(t *testing.T) {
	h := newReconcilerHarness(t, newOperator("op"))
	h.content.set(pkgFBC("zip+v9"), nil)
	res, err := h.reconcile(t, "op")
	if !step.IsTerminal(err) || !res.IsZero() || !strings.Contains(err.Error(), `olm.bundle.mediatype "zip+v9" is not supported`) {
		t.Fatalf("unsupported bundle: result %+v, error %v; want a terminal error", res, err)
	}
	c := apimeta.FindStatusCondition(h.operator(t, "op").Status.Conditions, operatorsv1alpha1.TypeInstalled)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != operatorsv1alpha1.ReasonInstallationFailed || !strings.Contains(c.Message, "zip+v9") {
		t.Errorf("Installed %+v", c)
	}
	if ev := h.events(); countType(ev, corev1.EventTypeWarning) != 1 || len(withAction(ev, operatorsv1alpha1.TypeInstalled)) != 1 ||
		!strings.HasPrefix(withAction(ev, operatorsv1alpha1.TypeInstalled)[0], "Warning InstallationFailed Installed=False: ") {
		t.Errorf("Events %q; want one Warning InstallationFailed", ev)
	}

	if res, err := h.reconcile(t, "gone"); err != nil || !res.IsZero() {
		t.Errorf("a deleted Operator: result %+v, error %v", res, err)
	}
}

// TestSetStatusTakesTheReasonFromTheStep: the Installed and Resolved reasons of a failed step are
// the step error's own.
func TestSetStatusTakesTheReasonFromTheStep(t *testing.T) {
	op := &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: "op"}}
	setStatus(op, observations{
		resolveErr: step.Failed(operatorsv1alpha1.TypeResolved, "CatalogUnreadable", errors.New("catalog main: refused")),
		applyErr:   step.Terminal(operatorsv1alpha1.TypeInstalled, "NotInstallable", errors.New("bundle x: no")),
	})
	if c := cond(op, operatorsv1alpha1.TypeResolved); c.Reason != "CatalogUnreadable" || c.Message != "catalog main: refused" {
		t.Errorf("Resolved %+v", c)
	}
	if c := cond(op, operatorsv1alpha1.TypeInstalled); c.Reason != "NotInstallable" || c.Message != "bundle x: no" {
		t.Errorf("Installed %+v", c)
	}
	if se, ok := step.As(installFailed(fmt.Errorf("wrapped: %w", step.Terminal(operatorsv1alpha1.TypeInstalled, "NotInstallable", errors.New("no"))))); !ok || !se.Terminal {
		t.Errorf("installFailed lost the terminal step error: %+v", se)
	}
}

// TestBundleDeploymentIsCreatedWithRukpaksFinalizer: the BundleDeployment operator-controller
// creates carries rukpak's finalizer from the start (rukpak does not need a write of its own to add
// it), and one that exists without it (created before) is left as it is: rukpak adds it there.
func TestBundleDeploymentIsCreatedWithRukpaksFinalizer(t *testing.T) {
	op := newOperator("op")
	op.Finalizers = []string{Finalizer}
	h := newReconcilerHarness(t, op)
	h.content.set(pkgFBC(""), nil)
	if _, err := h.reconcile(t, "op"); err != nil {
		t.Fatal(err)
	}
	if got, want := h.bundleDeployment(t, "op").Finalizers, []string{rukpakv1alpha1.UninstallFinalizer}; !slices.Equal(got, want) {
		t.Errorf("new BundleDeployment's finalizers %v; want %v", got, want)
	}

	old := newOperator("old")
	old.Finalizers = []string{Finalizer}
	h = newReconcilerHarness(t, old, pkgBundleDeployment(t, old, "pkg"))
	h.content.set(pkgFBC(""), nil)
	if _, err := h.reconcile(t, "old"); err != nil {
		t.Fatal(err)
	}
	if got := h.bundleDeployment(t, "old"); len(got.Finalizers) != 0 {
		t.Errorf("existing BundleDeployment's finalizers %v; want them left as they were (none)", got.Finalizers)
	}
}

func TestNotCreatedPassesEverythingButCreations(t *testing.T) {
	p := notCreated()
	bd := &rukpakv1alpha1.BundleDeployment{}
	if p.Create(event.CreateEvent{Object: bd}) || p.Create(event.CreateEvent{Object: &operatorsv2.OperatorCondition{}}) {
		t.Error("the creation of an object operator-controller created for an Operator re-reconciles that Operator")
	}
	if !p.Update(event.UpdateEvent{ObjectOld: bd, ObjectNew: bd}) || !p.Delete(event.DeleteEvent{Object: bd}) || !p.Generic(event.GenericEvent{Object: bd}) {
		t.Error("updates, deletions and generic events of a BundleDeployment must re-reconcile its Operator")
	}
}
