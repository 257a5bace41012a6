package controller

import (
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/internal/apply"
)

// Metrics are rukpak's own Prometheus metrics, next to controller-runtime's (reconcile counts and
// durations, work queue, REST client) on the same registry and endpoint:
//
//	rukpak_reconcile_step_duration_seconds{step="unpack|render|apply|health"}  histogram: time of each step of a BundleDeployment reconcile
//	rukpak_bundledeployments{condition="Unpacked|Installed|Healthy",status="True|False|Unknown"}  gauge: BundleDeployments by condition status
//	rukpak_revisions_total{result="installed|upgraded|install_failed|upgrade_rolled_back|deadline_rolled_back|blocked"}  counter: attempts to apply a new revision (Helm release), by outcome
//	rukpak_watched_kinds                                                     gauge: kinds of applied objects watched for drift
//
// An unchanged revision re-applied to revert drift is not a new revision: it shows in the apply
// step's duration only.
type Metrics struct {
	StepSeconds  *prometheus.HistogramVec
	Conditions   *prometheus.GaugeVec
	Revisions    *prometheus.CounterVec
	WatchedKinds prometheus.Gauge

	mu    sync.Mutex
	state map[string]map[string]metav1.ConditionStatus // BundleDeployment → condition → status
}

// Steps timed by rukpak_reconcile_step_duration_seconds.
const (
	StepUnpack = "unpack"
	StepRender = "render"
	StepApply  = "apply"
	StepHealth = "health"
)

// Outcomes counted by rukpak_revisions_total.
const (
	RevisionInstalled         = "installed"
	RevisionUpgraded          = "upgraded"
	RevisionInstallFailed     = "install_failed"
	RevisionUpgradeRolledBack = "upgrade_rolled_back"
	// RevisionDeadlineRolledBack: a revision missed its progress deadline and the previous healthy
	// revision was re-applied (upgradeFailurePolicy Rollback).
	RevisionDeadlineRolledBack = "deadline_rolled_back"
	RevisionBlocked            = "blocked"
)

var conditionTypes = []string{rukpakv1alpha1.TypeUnpacked, rukpakv1alpha1.TypeInstalled, rukpakv1alpha1.TypeHealthy}

// NewMetrics creates the metrics and registers them with reg (e.g. controller-runtime's
// metrics.Registry); reg may be nil.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		StepSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rukpak_reconcile_step_duration_seconds",
			Help:    "Time of each step of a BundleDeployment reconcile (unpack, render, apply, health), in seconds.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}, []string{"step"}),
		Conditions: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rukpak_bundledeployments",
			Help: "Number of BundleDeployments by condition (Unpacked, Installed, Healthy) and its status (True, False, Unknown).",
		}, []string{"condition", "status"}),
		Revisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rukpak_revisions_total",
			Help: "Attempts to apply a new revision of a BundleDeployment's release, by result: installed, upgraded, install_failed, upgrade_rolled_back, deadline_rolled_back (progress deadline missed, upgradeFailurePolicy Rollback), blocked (by the CRD upgrade-safety preflight).",
		}, []string{"result"}),
		WatchedKinds: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rukpak_watched_kinds",
			Help: "Number of kinds of applied objects rukpak watches (label-scoped) for drift and health.",
		}),
		state: map[string]map[string]metav1.ConditionStatus{},
	}
	for _, c := range conditionTypes {
		for _, s := range []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown} {
			m.Conditions.WithLabelValues(c, string(s)).Set(0)
		}
	}
	for _, r := range []string{RevisionInstalled, RevisionUpgraded, RevisionInstallFailed, RevisionUpgradeRolledBack, RevisionDeadlineRolledBack, RevisionBlocked} {
		m.Revisions.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(m.StepSeconds, m.Conditions, m.Revisions, m.WatchedKinds)
	}
	return m
}

// observeStep records how long step took since start (nil-safe).
func (m *Metrics) observeStep(step string, start time.Time) {
	if m != nil {
		m.StepSeconds.WithLabelValues(step).Observe(time.Since(start).Seconds())
	}
}

// observeApply counts the outcome of an apply that created, or tried to create, a new revision.
func (m *Metrics) observeApply(res *apply.Result, err error) {
	if m == nil {
		return
	}
	var ae *apply.Error
	switch {
	case err == nil && res != nil && res.Changed && res.Revision == 1:
		m.Revisions.WithLabelValues(RevisionInstalled).Inc()
	case err == nil && res != nil && res.Changed:
		m.Revisions.WithLabelValues(RevisionUpgraded).Inc()
	case errors.As(err, &ae) && ae.Reason == apply.ReasonPreflightFailed:
		m.Revisions.WithLabelValues(RevisionBlocked).Inc()
	case errors.As(err, &ae) && ae.Reason == apply.ReasonUpgradeFailed:
		m.Revisions.WithLabelValues(RevisionUpgradeRolledBack).Inc()
	case err != nil:
		m.Revisions.WithLabelValues(RevisionInstallFailed).Inc()
	}
}

// observeRollback counts a rollback after a missed progress deadline.
func (m *Metrics) observeRollback(err error) {
	if m == nil {
		return
	}
	var ae *apply.Error
	switch {
	case err == nil:
		m.Revisions.WithLabelValues(RevisionDeadlineRolledBack).Inc()
	case errors.As(err, &ae) && ae.Reason == apply.ReasonPreflightFailed:
		m.Revisions.WithLabelValues(RevisionBlocked).Inc()
	default:
		m.Revisions.WithLabelValues(RevisionInstallFailed).Inc()
	}
}

// observe records bd's condition statuses.
func (m *Metrics) observe(bd *rukpakv1alpha1.BundleDeployment) {
	if m == nil {
		return
	}
	now := map[string]metav1.ConditionStatus{}
	for _, c := range bd.Status.Conditions {
		for _, typ := range conditionTypes {
			if c.Type == typ {
				now[typ] = c.Status
			}
		}
	}
	m.set(bd.Name, now)
}

// forget drops a deleted BundleDeployment from the counts.
func (m *Metrics) forget(name string) {
	if m != nil {
		m.set(name, nil)
	}
}

func (m *Metrics) set(name string, now map[string]metav1.ConditionStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for typ, s := range m.state[name] {
		m.Conditions.WithLabelValues(typ, string(s)).Dec()
	}
	delete(m.state, name)
	if now == nil {
		return
	}
	for typ, s := range now {
		m.Conditions.WithLabelValues(typ, string(s)).Inc()
	}
	m.state[name] = now
}

// watchedKinds records how many kinds are watched.
func (m *Metrics) watchedKinds(n int) {
	if m != nil {
		m.WatchedKinds.Set(float64(n))
	}
}
