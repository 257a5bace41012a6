package metadataapi

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// requestDuration is catalogd_metadata_request_duration_seconds, by verb and HTTP status code.
	// Watches are not in it (they last until the client leaves); they are counted by openWatches.
	requestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "catalogd_metadata_request_duration_seconds",
		Help:    "Duration of requests to the CatalogMetadata API (watches excluded), by verb (get, list, discovery, openapi, health, other) and HTTP status code.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"verb", "code"})
	// openWatches is catalogd_metadata_watches: the watches of the CatalogMetadata API open now.
	openWatches = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "catalogd_metadata_watches",
		Help: "Watches of the CatalogMetadata API open now.",
	})
)

func init() {
	metrics.Registry.MustRegister(requestDuration, openWatches)
}

// metricVerb is the verb label of a request: its verb for catalogmetadata, else what the path is.
func metricVerb(req request) string {
	path := strings.TrimSuffix(req.Path, "/")
	switch {
	case req.Resource:
		return req.Verb
	case healthPaths[path]:
		return "health"
	case path == "/apis" || path == groupPath || path == versionPath:
		return "discovery"
	case strings.HasPrefix(path, "/openapi/"):
		return "openapi"
	}
	return "other"
}

// observe serves r with serve and records it: watches in openWatches while they last, every other
// request in requestDuration.
func observe(w http.ResponseWriter, r *http.Request, req request, serve http.HandlerFunc) {
	if req.Verb == "watch" {
		openWatches.Inc()
		defer openWatches.Dec()
		serve(w, r)
		return
	}
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
	serve(sw, r)
	requestDuration.WithLabelValues(metricVerb(req), strconv.Itoa(sw.code)).Observe(time.Since(start).Seconds())
}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}
