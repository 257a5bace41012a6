package bench

import "testing"

// TestMetricSamples: the counters the benchmark reports are read off a Prometheus text exposition:
// samples with and without labels, summed and broken down by verb and resource; other metrics, and
// names that only start with the one asked for, do not count.
func TestMetricSamples(t *testing.T) {
	exposition := []byte(`# HELP apiserver_request_total Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",resource="events",subresource="",verb="POST"} 12
apiserver_request_total{code="200",resource="bundledeployments",subresource="status",verb="PATCH"} 3
apiserver_request_total{code="409",resource="events",subresource="",verb="POST"} 1
apiserver_request_total_other{code="200",resource="events",verb="POST"} 100
rest_client_requests_total 7
rest_client_requests_total{code="200",method="GET"} 5
`)
	if got := sumMetric(exposition, "apiserver_request_total"); got != 16 {
		t.Errorf("sumMetric(apiserver_request_total) = %v, want 16", got)
	}
	if got := sumMetric(exposition, "rest_client_requests_total"); got != 12 {
		t.Errorf("sumMetric(rest_client_requests_total) = %v, want 12 (with and without labels)", got)
	}
	by := requestsByKind(exposition)
	if len(by) != 2 || by["POST events"] != 13 || by["PATCH bundledeployments/status"] != 3 {
		t.Errorf("requestsByKind = %v, want POST events 13, PATCH bundledeployments/status 3", by)
	}
}

// TestQueueStats: the work queues' reconciles (every result), reconcile seconds and queued seconds
// are read per controller, and summarised per Operator between two readings.
func TestQueueStats(t *testing.T) {
	before, after := map[string]queueStats{}, map[string]queueStats{}
	addQueueStats(before, "oc", []byte(`controller_runtime_reconcile_total{controller="operator",result="success"} 10
controller_runtime_reconcile_time_seconds_sum{controller="operator"} 1
workqueue_queue_duration_seconds_sum{controller="operator",name="operator"} 2
`))
	addQueueStats(after, "oc", []byte(`controller_runtime_reconcile_total{controller="operator",result="success"} 25
controller_runtime_reconcile_total{controller="operator",result="error"} 5
controller_runtime_reconcile_total{controller="idle",result="success"} 3
controller_runtime_reconcile_time_seconds_sum{controller="operator"} 3
controller_runtime_reconcile_time_seconds_count{controller="operator"} 30
workqueue_queue_duration_seconds_sum{controller="operator",name="operator"} 6
`))
	if got := after["oc/operator"]; got != (queueStats{reconciles: 30, reconcileSeconds: 3, queueSeconds: 6}) {
		t.Errorf("after: oc/operator = %+v, want 30 reconciles, 3 s, 6 s queued", got)
	}
	want := "oc/idle 0.30 reconciles per Operator, 0 ms each, 0 ms queued each; oc/operator 2.00 reconciles per Operator, 100 ms each, 200 ms queued each"
	if got := queueSummary(before, after, 10); got != want {
		t.Errorf("queueSummary = %q, want %q", got, want)
	}
}
