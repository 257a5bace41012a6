package controller

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
)

// Metrics are operator-controller's Prometheus metrics:
//
//	operator_controller_operators{state="installed|not_installed|unhealthy"}  Operators per state
//	operator_controller_resolution_duration_seconds                           time to resolve every Operator together
type Metrics struct {
	Operators         *prometheus.GaugeVec
	ResolutionSeconds prometheus.Histogram

	mu    sync.Mutex
	state map[string]string // Operator name → state
}

// Operator states counted by operator_controller_operators.
const (
	StateInstalled    = "installed"
	StateNotInstalled = "not_installed"
	StateUnhealthy    = "unhealthy"
)

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Operators: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "operator_controller_operators",
			Help: "Number of Operators by state: installed (Installed and Healthy), unhealthy (Installed but not Healthy) or not_installed.",
		}, []string{"state"}),
		ResolutionSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "operator_controller_resolution_duration_seconds",
			Help:    "Time to resolve every Operator together against the catalogs, in seconds.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
		state: map[string]string{},
	}
	for _, s := range []string{StateInstalled, StateNotInstalled, StateUnhealthy} {
		m.Operators.WithLabelValues(s).Set(0)
	}
	if reg != nil {
		reg.MustRegister(m.Operators, m.ResolutionSeconds)
	}
	return m
}

// observe records op's state (forget removes a deleted Operator). Status read: the conditions
// setStatus has just written, i.e. this reconcile's output, not an input of it.
func (m *Metrics) observe(op *operatorsv1alpha1.Operator) {
	state := StateNotInstalled
	if apimeta.IsStatusConditionTrue(op.Status.Conditions, operatorsv1alpha1.TypeInstalled) {
		state = StateInstalled
		if apimeta.IsStatusConditionFalse(op.Status.Conditions, operatorsv1alpha1.TypeHealthy) {
			state = StateUnhealthy
		}
	}
	m.set(op.Name, state)
}

// Forget drops a deleted Operator from the counts.
func (m *Metrics) Forget(name string) { m.set(name, "") }

func (m *Metrics) set(name, state string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.state[name]; ok {
		if old == state {
			return
		}
		m.Operators.WithLabelValues(old).Dec()
		delete(m.state, name)
	}
	if state != "" {
		m.state[name] = state
		m.Operators.WithLabelValues(state).Inc()
	}
}
