package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// Lifecycle controls of issue 21 on a real API server: spec.paused, spec.progressDeadline with
// upgradeFailurePolicy Hold and Rollback (envtest has no kube-controller-manager, so a Deployment
// never becomes Available: that is the revision that never gets Healthy), and the CEL rules.

// neverReady is a Deployment that never becomes Available in envtest.
const neverReady = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: stuck
spec:
  selector: {matchLabels: {app: stuck}}
  template:
    metadata: {labels: {app: stuck}}
    spec:
      containers:
      - {name: stuck, image: example.com/stuck:1}
`

func getBD(t *testing.T, name string) *rukpakv1alpha1.BundleDeployment {
	t.Helper()
	bd := &rukpakv1alpha1.BundleDeployment{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Name: name}, bd); err != nil {
		t.Fatal(err)
	}
	return bd
}

func condition(bd *rukpakv1alpha1.BundleDeployment, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(bd.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// waitHealthyAt waits until revision rev shows a healthyAt in status.history.
func waitHealthyAt(t *testing.T, name string, rev int64) {
	t.Helper()
	waitFor(t, fmt.Sprintf("revision %d of %s to be recorded Healthy", rev, name), func(ctx context.Context) (bool, error) {
		bd := &rukpakv1alpha1.BundleDeployment{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
			return false, err
		}
		for _, h := range bd.Status.History {
			if h.Revision == rev {
				return h.HealthyAt != nil && !h.HealthyAt.Before(&h.InstalledAt), nil
			}
		}
		return false, nil
	})
}

// TestPausedBundleDeploymentIsLeftAlone: while paused, a new source is not unpacked or applied and a
// hand edit is not reverted; Paused=True says since when; unpausing applies the new source.
func TestPausedBundleDeploymentIsLeftAlone(t *testing.T) {
	const name = "paused"
	writeBundle(t, "example.com/paused:v1", map[string]string{"a.yaml": configMap("a", "1")})
	newBD(t, name, "example.com/paused:v1")
	bd := waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)
	if c := condition(bd, rukpakv1alpha1.TypePaused); c.Status != metav1.ConditionFalse || c.Reason != rukpakv1alpha1.ReasonNotPaused {
		t.Errorf("an unpaused BundleDeployment's Paused condition: %+v", c)
	}

	patchBD(t, name, func(bd *rukpakv1alpha1.BundleDeployment) { bd.Spec.Paused = true })
	bd = waitCondition(t, name, rukpakv1alpha1.TypePaused, metav1.ConditionTrue, rukpakv1alpha1.ReasonPaused)
	paused := condition(bd, rukpakv1alpha1.TypePaused)
	wantMessage(t, paused.Message, "paused since "+paused.LastTransitionTime.UTC().Format(time.RFC3339), "revision 1 stays installed")

	// A new source and a hand edit while paused: the reconcile of the new generation (Paused
	// observes it) changes nothing.
	writeBundle(t, "example.com/paused:v2", map[string]string{"a.yaml": configMap("a", "2")})
	setRef(t, name, "example.com/paused:v2")
	cm, err := getCM(t, name, "a")
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["value"] = "edited while paused"
	if err := k8s.Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	bd = waitCondition(t, name, rukpakv1alpha1.TypePaused, metav1.ConditionTrue, rukpakv1alpha1.ReasonPaused)
	if now := condition(bd, rukpakv1alpha1.TypePaused).LastTransitionTime; !now.Equal(&paused.LastTransitionTime) {
		t.Errorf("the pause's start moved: %v, was %v", now, paused.LastTransitionTime)
	}
	if bd.Status.InstalledRevision != 1 || strings.Contains(bd.Status.ResolvedSource.Image.Ref, "v2") {
		t.Errorf("paused: installedRevision %d, resolvedSource %v", bd.Status.InstalledRevision, bd.Status.ResolvedSource.Image.Ref)
	}
	// The hand edit is an event on an applied object: its reconcile must not revert it either. A
	// second spec change gives a reconcile that surely comes after the edit's event.
	patchBD(t, name, func(bd *rukpakv1alpha1.BundleDeployment) {
		bd.Spec.DeletionPolicy = rukpakv1alpha1.DeletionPolicyDelete
	})
	waitCondition(t, name, rukpakv1alpha1.TypePaused, metav1.ConditionTrue, rukpakv1alpha1.ReasonPaused)
	if cm, err := getCM(t, name, "a"); err != nil || cm.Data["value"] != "edited while paused" {
		t.Errorf("a paused BundleDeployment reverted drift or applied: %v %v", cm.Data, err)
	}

	patchBD(t, name, func(bd *rukpakv1alpha1.BundleDeployment) { bd.Spec.Paused = false })
	waitCondition(t, name, rukpakv1alpha1.TypePaused, metav1.ConditionFalse, rukpakv1alpha1.ReasonNotPaused)
	waitRevision(t, name, 2)
	if cm, err := getCM(t, name, "a"); err != nil || cm.Data["value"] != "2" {
		t.Errorf("after resuming, revision 2 is not applied: %v %v", cm.Data, err)
	}

	// Deleting a paused BundleDeployment uninstalls it: the finalizer does not wait for a resume.
	patchBD(t, name, func(bd *rukpakv1alpha1.BundleDeployment) { bd.Spec.Paused = true })
	waitCondition(t, name, rukpakv1alpha1.TypePaused, metav1.ConditionTrue, rukpakv1alpha1.ReasonPaused)
	deleteBD(t, name)
	if _, err := getCM(t, name, "a"); !apierrors.IsNotFound(err) {
		t.Errorf("deleting a paused BundleDeployment left its ConfigMap: %v", err)
	}
}

// newDeadlineBD installs v1 (a ConfigMap: Healthy at once) and waits until revision 1 is recorded
// Healthy, then upgrades to v2, which adds a Deployment that never becomes Available.
func newDeadlineBD(t *testing.T, name string, deadline time.Duration, policy rukpakv1alpha1.UpgradeFailurePolicy) {
	t.Helper()
	writeBundle(t, "example.com/"+name+":v1", map[string]string{"a.yaml": configMap("a", "1")})
	writeBundle(t, "example.com/"+name+":v2", map[string]string{"a.yaml": configMap("a", "2"), "deploy.yaml": neverReady})
	newBD(t, name, "example.com/"+name+":v1")
	patchBD(t, name, func(bd *rukpakv1alpha1.BundleDeployment) {
		bd.Spec.ProgressDeadline = &metav1.Duration{Duration: deadline}
		bd.Spec.UpgradeFailurePolicy = policy
	})
	waitCondition(t, name, rukpakv1alpha1.TypeHealthy, metav1.ConditionTrue, rukpakv1alpha1.ReasonHealthy)
	waitHealthyAt(t, name, 1)
	setRef(t, name, "example.com/"+name+":v2")
	waitRevision(t, name, 2)
}

// TestProgressDeadlineHold: an upgrade that is not Healthy within the deadline is reported, and
// stays installed.
func TestProgressDeadlineHold(t *testing.T) {
	const name = "deadline-hold"
	newDeadlineBD(t, name, 2*time.Second, "")
	bd := waitCondition(t, name, rukpakv1alpha1.TypeHealthy, metav1.ConditionFalse, rukpakv1alpha1.ReasonProgressDeadlineExceeded)
	wantMessage(t, condition(bd, rukpakv1alpha1.TypeHealthy).Message, "revision 2 is not Healthy 2s after", "Deployment "+name+"/stuck is not ready", "upgradeFailurePolicy Hold")
	if bd.Status.InstalledRevision != 2 || condition(bd, rukpakv1alpha1.TypeInstalled).Status != metav1.ConditionTrue {
		t.Errorf("Hold must keep revision 2 installed: revision %d, Installed %+v", bd.Status.InstalledRevision, condition(bd, rukpakv1alpha1.TypeInstalled))
	}
	if len(bd.Status.History) != 2 || bd.Status.History[0].HealthyAt != nil || bd.Status.History[1].HealthyAt == nil {
		t.Errorf("history must show revision 1 healthy and revision 2 not: %+v", bd.Status.History)
	}
	if _, err := getCM(t, name, "a"); err != nil {
		t.Fatal(err)
	}
}

// TestProgressDeadlineRollback: with Rollback, an upgrade that is not Healthy within the deadline is
// replaced, within the deadline plus 30 s, by revision 3 holding revision 1's content; the history
// says why; the failed content is not tried again until the spec changes.
func TestProgressDeadlineRollback(t *testing.T) {
	const name = "deadline-rollback"
	const deadline = 3 * time.Second
	newDeadlineBD(t, name, deadline, rukpakv1alpha1.UpgradeFailurePolicyRollback)
	upgraded := time.Now()

	var bd *rukpakv1alpha1.BundleDeployment
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, deadline+30*time.Second, true, func(ctx context.Context) (bool, error) {
		bd = &rukpakv1alpha1.BundleDeployment{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, bd); err != nil {
			return false, err
		}
		return bd.Status.InstalledRevision == 3, nil
	})
	if err != nil {
		t.Fatalf("not rolled back within the deadline plus 30 s: %+v", bd.Status)
	}
	t.Logf("rolled back %s after the upgrade (deadline %s)", time.Since(upgraded).Round(100*time.Millisecond), deadline)
	h := bd.Status.History[0]
	if h.Revision != 3 || !strings.Contains(h.Description, "rollback to revision 1: revision 2 was not Healthy within the progress deadline (3s)") ||
		h.ContentHash != bd.Status.History[2].ContentHash {
		t.Errorf("history: %+v", bd.Status.History)
	}
	waitFor(t, "the Deployment revision 2 added to be removed", func(ctx context.Context) (bool, error) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: name, Name: "stuck"}, &appsv1.Deployment{})
		return apierrors.IsNotFound(err), nil
	})
	if cm, err := getCM(t, name, "a"); err != nil || cm.Data["value"] != "1" {
		t.Errorf("revision 1's ConfigMap is not back: %v %v", cm.Data, err)
	}
	bd = waitCondition(t, name, rukpakv1alpha1.TypeHealthy, metav1.ConditionTrue, rukpakv1alpha1.ReasonHealthy)
	wantMessage(t, condition(bd, rukpakv1alpha1.TypeInstalled).Message, "rolled back", "core.rukpak.io/retry-upgrade", "revision 3 is installed")
	if c := condition(bd, rukpakv1alpha1.TypeInstalled); c.Reason != rukpakv1alpha1.ReasonUpgradeFailed {
		t.Errorf("Installed while the spec's content is rolled back: %+v", c)
	}

	// A drift-correction reconcile re-applies revision 3, not the failed content.
	cm, _ := getCM(t, name, "a")
	cm.Data["value"] = "drift"
	if err := k8s.Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "drift reverted to revision 3's content", func(context.Context) (bool, error) {
		cm, err := getCM(t, name, "a")
		return err == nil && cm.Data["value"] == "1", nil
	})
	if bd := getBD(t, name); bd.Status.InstalledRevision != 3 {
		t.Errorf("drift correction re-applied the failed content: revision %d", bd.Status.InstalledRevision)
	}

	// A new spec is tried again.
	writeBundle(t, "example.com/"+name+":v3", map[string]string{"a.yaml": configMap("a", "3")})
	setRef(t, name, "example.com/"+name+":v3")
	waitRevision(t, name, 4)
	waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)
}

// TestRollbackBlockedByStoredVersion: revision 2 adds a CRD version and custom resources are
// stored in it; rolling back to revision 1's CRD would drop a stored version, so nothing is rolled
// back and Healthy says RollbackBlocked.
func TestRollbackBlockedByStoredVersion(t *testing.T) {
	const name = "rollback-blocked"
	writeBundle(t, "example.com/"+name+":v1", map[string]string{"crd.yaml": strings.ReplaceAll(widgetCRD(openSchema, "v1"), "preflight.example.com", "blocked.example.com")})
	writeBundle(t, "example.com/"+name+":v2", map[string]string{"crd.yaml": strings.ReplaceAll(widgetCRD(openSchema, "v2", "v1"), "preflight.example.com", "blocked.example.com"), "deploy.yaml": neverReady})
	newBD(t, name, "example.com/"+name+":v1")
	patchBD(t, name, func(bd *rukpakv1alpha1.BundleDeployment) {
		bd.Spec.ProgressDeadline = &metav1.Duration{Duration: 3 * time.Second}
		bd.Spec.UpgradeFailurePolicy = rukpakv1alpha1.UpgradeFailurePolicyRollback
	})
	waitCondition(t, name, rukpakv1alpha1.TypeHealthy, metav1.ConditionTrue, rukpakv1alpha1.ReasonHealthy)
	waitHealthyAt(t, name, 1)
	setRef(t, name, "example.com/"+name+":v2")
	waitRevision(t, name, 2)
	cr := mustObject(t, "apiVersion: blocked.example.com/v2\nkind: Widget\nmetadata:\n  name: w\n  namespace: "+name+"\nspec: {}\n")
	waitFor(t, "a Widget stored as v2", func(ctx context.Context) (bool, error) { return k8s.Create(ctx, cr) == nil, nil })

	bd := waitCondition(t, name, rukpakv1alpha1.TypeHealthy, metav1.ConditionFalse, rukpakv1alpha1.ReasonRollbackBlocked)
	wantMessage(t, condition(bd, rukpakv1alpha1.TypeHealthy).Message, "not rolled back", "revision 1's CustomResourceDefinitions", "v2")
	if bd.Status.InstalledRevision != 2 {
		t.Errorf("a blocked rollback changed the revision: %d", bd.Status.InstalledRevision)
	}
}

// TestLifecycleFieldsAreValidated: the CEL rules, on the API server.
func TestLifecycleFieldsAreValidated(t *testing.T) {
	base := func(name string) *rukpakv1alpha1.BundleDeployment {
		return &rukpakv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: rukpakv1alpha1.BundleDeploymentSpec{
			ProvisionerClassName: rukpakv1alpha1.ProvisionerPlain, InstallNamespace: "default",
			Source: rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: "example.com/x:v1"}},
		}}
	}
	bd := base("cel-rollback")
	bd.Spec.UpgradeFailurePolicy = rukpakv1alpha1.UpgradeFailurePolicyRollback
	if err := k8s.Create(t.Context(), bd, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "upgradeFailurePolicy Rollback needs spec.progressDeadline") {
		t.Errorf("Rollback without a deadline: %v", err)
	}
	bd = base("cel-deadline")
	bd.Spec.ProgressDeadline = &metav1.Duration{Duration: 100 * time.Millisecond}
	if err := k8s.Create(t.Context(), bd, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "at least 1s") {
		t.Errorf("a 100ms deadline: %v", err)
	}
	bd = base("cel-ok")
	bd.Spec.ProgressDeadline = &metav1.Duration{Duration: 10 * time.Minute}
	bd.Spec.UpgradeFailurePolicy = rukpakv1alpha1.UpgradeFailurePolicyRollback
	bd.Spec.Paused = true
	if err := k8s.Create(t.Context(), bd, client.DryRunAll); err != nil {
		t.Errorf("a valid spec: %v", err)
	}
}
