package controller

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/apply"
)

func bdWith(name string, conds map[string]metav1.ConditionStatus) *rukpakv1alpha1.BundleDeployment {
	bd := &rukpakv1alpha1.BundleDeployment{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for typ, s := range conds {
		bd.Status.Conditions = append(bd.Status.Conditions, metav1.Condition{Type: typ, Status: s})
	}
	return bd
}

func TestMetricsCountBundleDeploymentsByCondition(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	gauge := func(cond string, s metav1.ConditionStatus) float64 {
		return testutil.ToFloat64(m.Conditions.WithLabelValues(cond, string(s)))
	}
	T, F := metav1.ConditionTrue, metav1.ConditionFalse
	m.observe(bdWith("a", map[string]metav1.ConditionStatus{"Unpacked": T, "Installed": T, "Healthy": F}))
	m.observe(bdWith("b", map[string]metav1.ConditionStatus{"Unpacked": T, "Installed": T, "Healthy": T}))
	if gauge("Installed", T) != 2 || gauge("Healthy", T) != 1 || gauge("Healthy", F) != 1 {
		t.Fatalf("Installed=True %v, Healthy=True %v, Healthy=False %v", gauge("Installed", T), gauge("Healthy", T), gauge("Healthy", F))
	}
	// a becomes healthy; observing it again does not count it twice.
	m.observe(bdWith("a", map[string]metav1.ConditionStatus{"Unpacked": T, "Installed": T, "Healthy": T}))
	m.observe(bdWith("a", map[string]metav1.ConditionStatus{"Unpacked": T, "Installed": T, "Healthy": T}))
	if gauge("Healthy", T) != 2 || gauge("Healthy", F) != 0 || gauge("Unpacked", T) != 2 {
		t.Fatalf("after a turned healthy: Healthy=True %v, Healthy=False %v", gauge("Healthy", T), gauge("Healthy", F))
	}
	m.forget("b")
	m.forget("b")
	if gauge("Healthy", T) != 1 || gauge("Installed", T) != 1 {
		t.Fatalf("after b was deleted: Healthy=True %v, Installed=True %v", gauge("Healthy", T), gauge("Installed", T))
	}
	n, err := testutil.GatherAndCount(reg, "rukpak_bundledeployments", "rukpak_revisions_total", "rukpak_reconcile_step_duration_seconds", "rukpak_watched_kinds")
	if err != nil || n == 0 {
		t.Fatalf("metrics are not registered: %d series, %v", n, err)
	}
}

func TestMetricsCountRevisionsByResult(t *testing.T) {
	m := NewMetrics(nil)
	m.observeApply(&apply.Result{Revision: 1, Changed: true}, nil)
	m.observeApply(&apply.Result{Revision: 2, Changed: true}, nil)
	m.observeApply(&apply.Result{Revision: 2}, nil) // an unchanged revision re-applied: not a new revision
	m.observeApply(nil, &apply.Error{Reason: apply.ReasonUpgradeFailed, Err: errors.New("x")})
	m.observeApply(nil, &apply.Error{Reason: apply.ReasonPreflightFailed, Err: errors.New("x")})
	m.observeApply(nil, errors.New("recording revision 1: conflict"))
	for result, want := range map[string]float64{RevisionInstalled: 1, RevisionUpgraded: 1, RevisionUpgradeRolledBack: 1, RevisionBlocked: 1, RevisionInstallFailed: 1} {
		if got := testutil.ToFloat64(m.Revisions.WithLabelValues(result)); got != want {
			t.Errorf("rukpak_revisions_total{result=%q} = %v, want %v", result, got, want)
		}
	}
	m.observeStep(StepApply, time.Now().Add(-time.Second))
	if n := testutil.CollectAndCount(m.StepSeconds); n != 1 {
		t.Errorf("step histogram has %d series, want 1", n)
	}
	var nilMetrics *Metrics // the reconciler works without metrics
	nilMetrics.observe(bdWith("a", nil))
	nilMetrics.observeStep(StepApply, time.Now())
	nilMetrics.observeApply(nil, nil)
	nilMetrics.forget("a")
	nilMetrics.watchedKinds(3)
}
