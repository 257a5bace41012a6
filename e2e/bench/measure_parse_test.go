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
