package controller

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/olmv1/olmv1/catalogd/internal/serve"
)

var (
	// unpackDuration is catalogd_unpack_duration_seconds: fetch + parse + store of one Catalog, by
	// result (success, unchanged, unpack_failed, invalid_catalog, store_failed).
	unpackDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "catalogd_unpack_duration_seconds",
		Help:    "Time to fetch, parse, validate and store a Catalog's content, by result (success, unchanged, unpack_failed, invalid_catalog, store_failed).",
		Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300},
	}, []string{"result"})
	// contentBytes is catalogd_content_bytes: size of the served all.json per catalog.
	contentBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "catalogd_content_bytes",
		Help: "Size in bytes of the content (all.json) served for each catalog.",
	}, []string{"catalog"})
)

func init() {
	metrics.Registry.MustRegister(unpackDuration, contentBytes, serve.RequestDuration)
}
