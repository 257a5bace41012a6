package controller

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/apply"
)

func TestDecideProgress(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	healthy := apply.Revision{Version: 1, Status: "superseded", Deployed: t0, HealthyAt: t0.Add(time.Minute)}
	failing := apply.Revision{Version: 2, Status: "deployed", Deployed: t0.Add(time.Hour)}
	rollback := apply.Revision{Version: 3, Status: "deployed", Deployed: t0.Add(time.Hour), RollbackFrom: 2}
	never := apply.Revision{Version: 1, Status: "superseded", Deployed: t0}
	const hold, rb = rukpakv1alpha1.UpgradeFailurePolicyHold, rukpakv1alpha1.UpgradeFailurePolicyRollback
	for _, tc := range []struct {
		name     string
		now      time.Time
		policy   rukpakv1alpha1.UpgradeFailurePolicy
		current  int
		hist     []apply.Revision
		exceeded bool
		to       int
		blocked  string
		recheck  time.Duration
	}{
		{name: "within the deadline", now: t0.Add(time.Hour + 4*time.Minute), policy: rb, current: 2, hist: []apply.Revision{failing, healthy}, recheck: time.Minute},
		{name: "exceeded, Hold", now: t0.Add(2 * time.Hour), policy: hold, current: 2, hist: []apply.Revision{failing, healthy}, exceeded: true},
		{name: "exceeded, default policy", now: t0.Add(2 * time.Hour), current: 2, hist: []apply.Revision{failing, healthy}, exceeded: true},
		{name: "exceeded, Rollback", now: t0.Add(2 * time.Hour), policy: rb, current: 2, hist: []apply.Revision{failing, healthy}, exceeded: true, to: 1},
		{name: "no earlier healthy revision", now: t0.Add(2 * time.Hour), policy: rb, current: 2, hist: []apply.Revision{failing, never}, exceeded: true, blocked: "no earlier revision was ever Healthy"},
		{name: "first install", now: t0.Add(2 * time.Hour), policy: rb, current: 1, hist: []apply.Revision{never}, exceeded: true, blocked: "first revision"},
		{name: "a rollback is not rolled back", now: t0.Add(2 * time.Hour), policy: rb, current: 3, hist: []apply.Revision{rollback, failing, healthy}, exceeded: true, blocked: "itself the rollback of revision 2"},
		{name: "healthy once: not a deadline matter", now: t0.Add(2 * time.Hour), policy: rb, current: 1, hist: []apply.Revision{healthy}},
		{name: "unknown revision", now: t0.Add(2 * time.Hour), policy: rb, current: 7, hist: []apply.Revision{healthy}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := decideProgress(tc.now, 5*time.Minute, tc.policy, tc.current, tc.hist)
			if p.exceeded != tc.exceeded || p.rollbackTo != tc.to || p.recheck != tc.recheck || !strings.Contains(p.blocked, tc.blocked) || (tc.blocked == "" && p.blocked != "") {
				t.Errorf("got %+v", p)
			}
		})
	}
}

func TestAttemptIgnoresLifecycleFields(t *testing.T) {
	bd := &rukpakv1alpha1.BundleDeployment{Spec: rukpakv1alpha1.BundleDeploymentSpec{ProvisionerClassName: rukpakv1alpha1.ProvisionerPlain, InstallNamespace: "ns",
		Source: rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: "a:1"}}}}
	a := attempt(bd)
	bd.Spec.Paused, bd.Spec.ProgressDeadline = true, &metav1.Duration{Duration: time.Minute}
	if attempt(bd) != a {
		t.Error("pausing or a deadline must not retry abandoned content")
	}
	bd.Annotations = map[string]string{RetryUpgradeAnnotation: "1"}
	if attempt(bd) == a {
		t.Error("the retry annotation must make a new attempt")
	}
	bd.Annotations = nil
	bd.Spec.Source.Image.Ref = "a:2"
	if attempt(bd) == a {
		t.Error("a new source must make a new attempt")
	}
}

func TestSetPausedKeepsItsStart(t *testing.T) {
	bd := &rukpakv1alpha1.BundleDeployment{}
	bd.Status.InstalledRevision = 4
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	setPaused(bd, start)
	setPaused(bd, start.Add(time.Hour))
	c := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypePaused)
	if c.Status != metav1.ConditionTrue || c.Reason != rukpakv1alpha1.ReasonPaused || !c.LastTransitionTime.Time.Equal(start) ||
		!strings.Contains(c.Message, "paused since 2026-03-01T10:00:00Z") || !strings.Contains(c.Message, "revision 4 stays installed") {
		t.Errorf("Paused: %+v", c)
	}
	setNotPaused(bd)
	if c := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypePaused); c.Status != metav1.ConditionFalse || c.Reason != rukpakv1alpha1.ReasonNotPaused {
		t.Errorf("resumed: %+v", c)
	}
}
