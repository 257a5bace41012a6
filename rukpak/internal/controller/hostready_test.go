package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/olmv1/olmv1/platform/step"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
)

// An unpack deferred by the per-host limit (source.KindPending) is pending, not failed: Unpacked says
// why, and so does Installed (which the Operator mirrors) while nothing is installed; an installed
// revision keeps its Installed condition.
func TestStatusOfADeferredUnpack(t *testing.T) {
	const why = "waiting: registry r:5000 has not completed a pull yet; image \"r:5000/x:1\" waits its turn"
	pending := &source.Error{Kind: source.KindPending, Reason: rukpakv1alpha1.ReasonUnpackPending, Retryable: true, RetryAfter: 2 * time.Second, Message: why}
	for _, installed := range []int64{0, 3} {
		r := &BundleDeploymentReconciler{}
		bd := &rukpakv1alpha1.BundleDeployment{}
		bd.Status.InstalledRevision = installed
		if installed > 0 {
			meta.SetStatusCondition(&bd.Status.Conditions, metav1.Condition{Type: rukpakv1alpha1.TypeInstalled, Status: metav1.ConditionTrue,
				Reason: rukpakv1alpha1.ReasonInstallationSucceeded, Message: "revision 3 is installed (1 objects)"})
		}
		err := step.Failed(rukpakv1alpha1.TypeUnpacked, source.ReasonOf(pending), pending).After(source.RetryAfterOf(pending))
		r.setStatus(bd, &state{}, err)
		u := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeUnpacked)
		if u == nil || u.Reason != rukpakv1alpha1.ReasonUnpackPending || u.Message != why {
			t.Errorf("installed %d: Unpacked %+v, want UnpackPending saying why", installed, u)
		}
		i := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled)
		switch {
		case installed == 0 && (i == nil || i.Reason != rukpakv1alpha1.ReasonInstallPending || !strings.HasSuffix(i.Message, "until the bundle is unpacked: "+why)):
			t.Errorf("nothing installed: Installed %+v, want InstallPending saying why", i)
		case installed > 0 && (i == nil || i.Reason != rukpakv1alpha1.ReasonInstallationSucceeded):
			t.Errorf("revision installed: Installed %+v, want it left as it was", i)
		}
		_, poll := recheck(bd, &state{}, unhealthyRecheck)
		if res, rerr := step.Result(err, poll); rerr != nil || res.RequeueAfter != 2*time.Second {
			t.Errorf("result %+v, %v; want a requeue after 2s without backoff", res, rerr)
		}
	}
}

// TestDeferredUnpackKeepsTheLastFailure: a BundleDeployment whose last install of this generation
// failed (ObjectConflict) keeps that reason while the retry's unpack waits its turn (a restarted
// rukpak whose limiter has not seen the registry answer yet); a failure of an older generation, or
// a pending install, gives way to InstallPending.
func TestDeferredUnpackKeepsTheLastFailure(t *testing.T) {
	pending := &source.Error{Kind: source.KindPending, Reason: rukpakv1alpha1.ReasonUnpackPending, Retryable: true, RetryAfter: 2 * time.Second, Message: "waiting"}
	for _, tc := range []struct {
		name       string
		generation int64
		reason     string
		want       string
	}{
		{"a conflict of this generation", 2, rukpakv1alpha1.ReasonObjectConflict, rukpakv1alpha1.ReasonObjectConflict},
		{"a failure of this generation", 2, rukpakv1alpha1.ReasonInstallFailed, rukpakv1alpha1.ReasonInstallFailed},
		{"a conflict of the previous generation", 1, rukpakv1alpha1.ReasonObjectConflict, rukpakv1alpha1.ReasonInstallPending},
		{"still pending", 2, rukpakv1alpha1.ReasonInstallPending, rukpakv1alpha1.ReasonInstallPending},
	} {
		bd := &rukpakv1alpha1.BundleDeployment{}
		bd.Generation = 2
		meta.SetStatusCondition(&bd.Status.Conditions, metav1.Condition{Type: rukpakv1alpha1.TypeInstalled, Status: metav1.ConditionFalse,
			Reason: tc.reason, Message: "before", ObservedGeneration: tc.generation})
		err := step.Failed(rukpakv1alpha1.TypeUnpacked, source.ReasonOf(pending), pending).After(source.RetryAfterOf(pending))
		(&BundleDeploymentReconciler{}).setStatus(bd, &state{}, err)
		if i := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled); i == nil || i.Reason != tc.want {
			t.Errorf("%s: Installed %+v, want reason %s", tc.name, i, tc.want)
		}
		if u := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeUnpacked); u == nil || u.Reason != rukpakv1alpha1.ReasonUnpackPending {
			t.Errorf("%s: Unpacked %+v, want UnpackPending", tc.name, u)
		}
	}
}

// notifier is an Unpacker that limits pulls per host.
type notifier struct {
	source.Unpacker
	ready func(key string)
}

func (n *notifier) OnHostReady(f func(key string)) { n.ready = f }

// The keys the Unpacker says may go ahead become events for their BundleDeployments; other keys
// are ignored, and a full channel drops the event (the RetryAfter still applies) instead of blocking.
func TestHostReadyEvents(t *testing.T) {
	if ch := (&BundleDeploymentReconciler{Unpacker: nil}).hostReadyEvents(); ch != nil {
		t.Fatal("an Unpacker without host limits has no events")
	}
	n := &notifier{}
	ch := (&BundleDeploymentReconciler{Unpacker: n}).hostReadyEvents()
	n.ready("catalog/other")
	n.ready(unpackKey(&rukpakv1alpha1.BundleDeployment{}) + "waiting")
	if ev := <-ch; ev.Object.GetName() != "waiting" || len(ch) != 0 {
		t.Fatalf("event for %q (%d more), want one for waiting", ev.Object.GetName(), len(ch))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		for range hostReadyBuffer + 1 {
			n.ready("bundledeployment/x")
		}
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("a full channel blocked the Unpacker")
	}
}
