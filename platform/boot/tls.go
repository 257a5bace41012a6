package boot

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// CertReloadInterval is how often a watched serving certificate is re-read even without a file event
// (kubelet replaces Secret volume files through a symlink swap, which some file watchers miss).
const CertReloadInterval = 10 * time.Second

// WatchServingCert loads dir/tls.crt and dir/tls.key (the layout of a kubernetes.io/tls Secret volume)
// and returns a watcher whose GetCertificate serves the latest pair: a rotated certificate is used by
// new TLS handshakes without a restart. The watcher must be started (it is a manager Runnable).
func WatchServingCert(dir string) (*certwatcher.CertWatcher, error) {
	crt, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for _, p := range []string{crt, key} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("serving certificate: %w (the directory must hold tls.crt and tls.key, e.g. a kubernetes.io/tls Secret volume)", err)
		}
	}
	w, err := certwatcher.New(crt, key)
	if err != nil {
		return nil, fmt.Errorf("loading the serving certificate from %s: %w", dir, err)
	}
	return w.WithWatchInterval(CertReloadInterval), nil
}

// CertReady is a readiness check for a watched serving certificate: it reads the pair from disk
// again and fails, naming what and where, when it cannot be loaded (a rotation that wrote a broken or
// mismatched pair). The watcher logs the same error on its own re-reads; the last good certificate
// keeps being served meanwhile, and the check passes again once the files are fixed.
func CertReady(w *certwatcher.CertWatcher, what, dir string) healthz.Checker {
	return func(*http.Request) error {
		if err := w.ReadCertificate(); err != nil {
			return fmt.Errorf("the %s serving certificate in %s cannot be loaded (still serving the previous one): %w", what, dir, err)
		}
		return nil
	}
}

// metricsOptions are the metrics server options: HTTPS behind TokenReview/SubjectAccessReview, the
// --tls-profile's versions, suites and curves, HTTP/1.1 only (no HTTP/2 rapid-reset exposure). With
// --metrics-cert-dir the certificate is watched and reloaded (the returned watcher must be added to
// the manager); without it, a self-signed certificate is generated at start-up.
func (o *Options) metricsOptions() (metricsserver.Options, *certwatcher.CertWatcher, error) {
	profile, err := o.TLS.TLSProfile()
	if err != nil {
		return metricsserver.Options{}, nil, err
	}
	opts := metricsserver.Options{
		BindAddress:    o.MetricsBindAddress,
		SecureServing:  true,
		FilterProvider: metricsAuth,
	}
	var w *certwatcher.CertWatcher
	if o.MetricsCertDir != "" && o.MetricsBindAddress != "0" {
		if w, err = WatchServingCert(o.MetricsCertDir); err != nil {
			return opts, nil, fmt.Errorf("--metrics-cert-dir: %w", err)
		}
	}
	opts.TLSOpts = []func(*tls.Config){func(c *tls.Config) {
		profile.Apply(c)
		c.NextProtos = []string{"http/1.1"}
		if w != nil {
			c.GetCertificate = w.GetCertificate
		}
	}}
	return opts, w, nil
}
