package controller

import (
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/olmv1/olmv1/catalogd/internal/serve"
)

// catalogd_unpack_duration_seconds and catalogd_content_bytes are recorded by the Loader
// (catalogd/internal/replica) on every replica; the content endpoint's histogram is registered here.
func init() {
	metrics.Registry.MustRegister(serve.RequestDuration)
}
