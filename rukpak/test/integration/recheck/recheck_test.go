// Package recheck checks, against a real kube-apiserver and etcd (envtest), that the periodic
// re-check of an unhealthy BundleDeployment checks its health without re-applying its bundle, while
// drift is still reverted at once. It runs its own rukpak controller, re-checking every 200 ms
// instead of every 30 s, so that many re-checks happen within the test.
package recheck

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/platform/apiservertest"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/controller"
	"github.com/olmv1/olmv1/rukpak/pkg/source/unpackertest"
	"github.com/olmv1/olmv1/rukpak/test/integration/rukpaktest"
)

const (
	systemNamespace = "olmv1-system"
	every           = 200 * time.Millisecond
)

// deployment never becomes ready here: envtest runs no kube-controller-manager, so its
// BundleDeployment stays unhealthy and is re-checked every 200 ms.
const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: never-ready
spec:
  selector: {matchLabels: {app: never-ready}}
  template:
    metadata: {labels: {app: never-ready}}
    spec:
      containers: [{name: c, image: example.invalid/c:v1}]
`

// steps reads how many times each step of a reconcile ran (rukpak_reconcile_step_duration_seconds).
func steps(t *testing.T, reg *prometheus.Registry) map[string]uint64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, f := range families {
		if f.GetName() != "rukpak_reconcile_step_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "step" {
					out[l.GetValue()] = m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return out
}

// startRukpak starts a kube-apiserver and a rukpak controller that re-checks unhealthy
// BundleDeployments every recheck, with bundles from the returned fake unpacker and namespace ns; reg
// holds its metrics.
func startRukpak(t *testing.T, recheck time.Duration, ns string) (client.Client, *unpackertest.Unpacker, *prometheus.Registry) {
	t.Helper()
	s := apiservertest.StartForTest(t, apiservertest.Options{
		CRDDirs:     []string{filepath.Join("..", "..", "..", "config", "crd", "bases")},
		AddToScheme: []func(*runtime.Scheme) error{rukpakv1alpha1.AddToScheme},
	})
	k8s := s.Client
	for _, n := range []string{systemNamespace, ns} {
		if err := k8s.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
	}
	bundles := unpackertest.New(t)
	mgr, err := rukpaktest.NewManager(s.Config, s.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	r := rukpaktest.PlainReconciler(mgr, k8s, bundles, systemNamespace)
	r.Metrics, r.UnhealthyRecheck = controller.NewMetrics(reg), recheck
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	stop := rukpaktest.Start(mgr)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return k8s, bundles, reg
}

func TestUnhealthyRechecksCheckHealthWithoutApplying(t *testing.T) {
	ctx := t.Context()
	k8s, bundles, reg := startRukpak(t, every, "recheck")
	bundles.PushAs("example.com/recheck:v1", "example.com/recheck:v1@sha256:"+strings.Repeat("a", 64),
		map[string]string{"manifests/deployment.yaml": deployment})

	if err := k8s.Create(ctx, &rukpakv1alpha1.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "recheck"},
		Spec: rukpakv1alpha1.BundleDeploymentSpec{
			ProvisionerClassName: rukpakv1alpha1.ProvisionerPlain,
			InstallNamespace:     "recheck",
			Source:               rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: "example.com/recheck:v1"}},
		},
	}); err != nil {
		t.Fatal(err)
	}
	unhealthy := func(ctx context.Context) (bool, error) {
		bd := &rukpakv1alpha1.BundleDeployment{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: "recheck"}, bd); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled) &&
			meta.IsStatusConditionFalse(bd.Status.Conditions, rukpakv1alpha1.TypeHealthy), nil
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, unhealthy); err != nil {
		t.Fatalf("the BundleDeployment is not Installed and unhealthy: %v", err)
	}

	// At least 25 re-checks: health is checked each time, the bundle applied on two or three of them
	// (every tenth) besides the install. Before, every re-check applied (as many applies as health
	// checks).
	start := steps(t, reg)
	var now map[string]uint64
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		now = steps(t, reg)
		return now[controller.StepHealth]-start[controller.StepHealth] >= 25, nil
	}); err != nil {
		t.Fatalf("fewer than 25 health checks within a minute at one re-check per %s: %v", every, now)
	}
	checks, applies := now[controller.StepHealth]-start[controller.StepHealth], now[controller.StepApply]-start[controller.StepApply]
	t.Logf("over the re-checks: %d health checks, %d applies", checks, applies)
	if applies > checks/10+1 {
		t.Errorf("%d applies over %d health checks: the re-checks of an unhealthy BundleDeployment must check health, applying only every tenth time", applies, checks)
	}
	if applies == 0 {
		t.Errorf("no apply over %d health checks: every tenth re-check must apply in full", checks)
	}

	// Drift is still reverted at once, between re-checks.
	expectHandEditReverted(t, k8s, "recheck", "example.invalid/c:v1")
}

// expectHandEditReverted edits the image of Deployment never-ready in namespace ns by hand and
// waits until rukpak has put back want.
func expectHandEditReverted(t *testing.T, k8s client.Client, ns, want string) {
	t.Helper()
	ctx := t.Context()
	d := &appsv1.Deployment{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "never-ready"}, d); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Template.Spec.Containers[0].Image = "example.invalid/edited:v9"
	if err := k8s.Patch(ctx, d, patch); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "never-ready"}, d); err != nil {
			return false, err
		}
		return d.Spec.Template.Spec.Containers[0].Image == want, nil
	}); err != nil {
		t.Fatalf("a hand edit of the Deployment was not reverted: %v", err)
	}
}

// TestUpgradeIsAppliedOnce: an upgrade that changes a Deployment's spec applies the bundle once. The
// watch event of rukpak's own write comes back with a new generation; it is recognised as rukpak's
// own (apply.Engine.ConsumeOwnWrite) and asks for a health check, not a second apply. A change made
// by someone else afterwards is still drift, applied and reverted.
func TestUpgradeIsAppliedOnce(t *testing.T) {
	ctx := t.Context()
	// No re-check within the test: every reconcile below is asked for by an event.
	k8s, bundles, reg := startRukpak(t, time.Hour, "upgrade-once")
	v2 := strings.Replace(deployment, "example.invalid/c:v1", "example.invalid/c:v2", 1)
	bundles.PushAs("example.com/upgrade-once:v1", "example.com/upgrade-once:v1@sha256:"+strings.Repeat("1", 64),
		map[string]string{"manifests/deployment.yaml": deployment})
	bundles.PushAs("example.com/upgrade-once:v2", "example.com/upgrade-once:v2@sha256:"+strings.Repeat("2", 64),
		map[string]string{"manifests/deployment.yaml": v2})
	bd := &rukpakv1alpha1.BundleDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "upgrade-once"},
		Spec: rukpakv1alpha1.BundleDeploymentSpec{
			ProvisionerClassName: rukpakv1alpha1.ProvisionerPlain,
			InstallNamespace:     "upgrade-once",
			Source:               rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: "example.com/upgrade-once:v1"}},
		},
	}
	if err := k8s.Create(ctx, bd); err != nil {
		t.Fatal(err)
	}
	installed := func(revision int64) wait.ConditionWithContextFunc {
		return func(ctx context.Context) (bool, error) {
			if err := k8s.Get(ctx, client.ObjectKey{Name: "upgrade-once"}, bd); err != nil {
				return false, err
			}
			return bd.Status.InstalledRevision == revision && meta.IsStatusConditionTrue(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled), nil
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, installed(1)); err != nil {
		t.Fatalf("revision 1 is not Installed: %v", err)
	}
	// The Deployment's creation asks for a health check (a creation is not drift): wait for it, so
	// that it is not counted below.
	settled := steps(t, reg)
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		settled = steps(t, reg)
		return settled[controller.StepHealth] >= 2, nil
	}); err != nil {
		t.Fatalf("no health check after the install's own: %v", settled)
	}

	bd.Spec.Source.Image.Ref = "example.com/upgrade-once:v2"
	if err := k8s.Update(ctx, bd); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, installed(2)); err != nil {
		t.Fatalf("revision 2 is not Installed: %v", err)
	}
	// The upgrade's reconcile checks health, and so does the one its write's event asks for.
	var now map[string]uint64
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		now = steps(t, reg)
		return now[controller.StepHealth]-settled[controller.StepHealth] >= 2, nil
	}); err != nil {
		t.Fatalf("no reconcile after the upgrade's write came back: %v", now)
	}
	if applies := now[controller.StepApply] - settled[controller.StepApply]; applies != 1 {
		t.Errorf("the upgrade applied %d times, want once (steps before %v, after %v)", applies, settled, now)
	}

	// Someone else's change of the same Deployment is drift: reverted.
	expectHandEditReverted(t, k8s, "upgrade-once", "example.invalid/c:v2")

}
