package controller

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
)

func TestMetricsCountOperatorsByState(t *testing.T) {
	m := NewMetrics(nil)
	op := func(name string, installed, healthy metav1.ConditionStatus) *operatorsv1alpha1.Operator {
		return &operatorsv1alpha1.Operator{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: operatorsv1alpha1.OperatorStatus{Conditions: []metav1.Condition{
			{Type: operatorsv1alpha1.TypeInstalled, Status: installed}, {Type: operatorsv1alpha1.TypeHealthy, Status: healthy},
		}}}
	}
	count := func(state string) float64 { return testutil.ToFloat64(m.Operators.WithLabelValues(state)) }

	m.observe(op("a", metav1.ConditionTrue, metav1.ConditionTrue))
	m.observe(op("b", metav1.ConditionTrue, metav1.ConditionFalse))
	m.observe(op("c", metav1.ConditionFalse, metav1.ConditionUnknown))
	m.observe(op("c", metav1.ConditionFalse, metav1.ConditionUnknown))
	if count(StateInstalled) != 1 || count(StateUnhealthy) != 1 || count(StateNotInstalled) != 1 {
		t.Fatalf("installed %v, unhealthy %v, not installed %v", count(StateInstalled), count(StateUnhealthy), count(StateNotInstalled))
	}
	m.observe(op("c", metav1.ConditionTrue, metav1.ConditionTrue))
	m.Forget("a")
	if count(StateInstalled) != 1 || count(StateNotInstalled) != 0 {
		t.Fatalf("after c installed and a deleted: installed %v, not installed %v", count(StateInstalled), count(StateNotInstalled))
	}
}
