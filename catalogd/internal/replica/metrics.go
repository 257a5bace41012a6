package replica

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// unpackDuration is catalogd_unpack_duration_seconds: fetch + parse + store of one Catalog on
	// this replica (the leader's spec or another replica's pinned source), by result.
	unpackDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "catalogd_unpack_duration_seconds",
		Help:    "Time to fetch, parse, validate and store a Catalog's content, by result (success, unchanged, unpack_failed, invalid_catalog, content_mismatch, store_failed).",
		Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300},
	}, []string{"result"})
	// contentBytes is catalogd_content_bytes: size of the all.json this replica serves per catalog.
	contentBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "catalogd_content_bytes",
		Help: "Size in bytes of the content (all.json) served for each catalog.",
	}, []string{"catalog"})
)

func init() {
	metrics.Registry.MustRegister(unpackDuration, contentBytes)
}
