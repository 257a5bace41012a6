package boot

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/olmv1/olmv1/platform/boot/boottest"
)

// writeSecretVolume writes a new key pair for cn the way kubelet updates a Secret volume.
func writeSecretVolume(t *testing.T, dir, cn string) {
	t.Helper()
	must(t, boottest.RotateServingCert(dir, cn))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// servedCN is the common name of the certificate a TLS server on addr presents.
func servedCN(t *testing.T, addr string) string {
	t.Helper()
	cn, err := boottest.ServedCN(addr)
	must(t, err)
	return cn
}

// metricsTLS is the tls.Config the metrics server gets from opts.
func metricsTLS(t *testing.T, o *Options) *tls.Config {
	t.Helper()
	opts, _, err := o.metricsOptions()
	must(t, err)
	if !opts.SecureServing || opts.FilterProvider == nil || len(opts.TLSOpts) != 1 {
		t.Fatalf("metrics must be HTTPS behind authn/authz: %+v", opts)
	}
	cfg := &tls.Config{NextProtos: []string{"h2"}} // what controller-runtime starts from
	for _, f := range opts.TLSOpts {
		f(cfg)
	}
	if cfg.GetCertificate == nil || strings.Join(cfg.NextProtos, ",") != "http/1.1" {
		t.Errorf("metrics TLS config: certificate %v, protocols %v", cfg.GetCertificate != nil, cfg.NextProtos)
	}
	return cfg
}

// The metrics endpoint serves the component's certificate (--tls-cert-dir); the deprecated
// --metrics-cert-dir gives it a loader of its own.
func TestMetricsServeTheComponentCertificate(t *testing.T) {
	dir := t.TempDir()
	writeSecretVolume(t, dir, "component")
	o := Options{Component: "test", MetricsBindAddress: "127.0.0.1:0", CertDir: dir}
	cfg := metricsTLS(t, &o)
	addr := serveTLS(t, cfg)
	if got := servedCN(t, addr); got != "component" {
		t.Errorf("--tls-cert-dir: metrics served %q, want component", got)
	}

	old := t.TempDir()
	writeSecretVolume(t, old, "metrics-only")
	o = Options{Component: "test", MetricsBindAddress: "127.0.0.1:0", CertDir: dir, MetricsCertDir: old}
	_, own, err := o.metricsOptions()
	must(t, err)
	if own == nil {
		t.Fatal("--metrics-cert-dir: want the metrics endpoint's own loader, to be started and checked")
	}
	if got := servedCN(t, serveTLS(t, metricsTLS(t, &o))); got != "metrics-only" {
		t.Errorf("--metrics-cert-dir: metrics served %q, want metrics-only", got)
	}
}

// --tls-cert-dir and the deprecated --metrics-cert-dir must hold a key pair when they are given.
func TestMetricsCertDirMustHoldAKeyPair(t *testing.T) {
	for _, o := range []Options{
		{Component: "test", MetricsBindAddress: "127.0.0.1:0", CertDir: t.TempDir()},
		{Component: "test", MetricsBindAddress: "127.0.0.1:0", MetricsCertDir: t.TempDir()},
	} {
		flag := "--tls-cert-dir"
		if o.MetricsCertDir != "" {
			flag = "--metrics-cert-dir"
		}
		if _, _, err := o.metricsOptions(); err == nil || !strings.Contains(err.Error(), flag) || !strings.Contains(err.Error(), "tls.crt") {
			t.Errorf("want an error naming %s and tls.crt, got %v", flag, err)
		}
	}
	// Without a directory: a generated certificate, still TLS 1.2+.
	o := Options{Component: "test", MetricsBindAddress: "127.0.0.1:0"}
	cfg := metricsTLS(t, &o)
	if cfg.MinVersion != tls.VersionTLS12 || o.cert == nil || !o.cert.Generated() {
		t.Errorf("no cert dir: min version %x, certificate %v", cfg.MinVersion, o.cert)
	}
}

// A rotation that writes a broken pair under the deprecated --metrics-cert-dir makes the metrics
// endpoint's readiness check fail with the reason, while the last good certificate is still served;
// fixing the files makes it pass again.
func TestCertReadyReportsABrokenRotation(t *testing.T) {
	dir := t.TempDir()
	writeSecretVolume(t, dir, "good")
	o := Options{Component: "test", MetricsBindAddress: "127.0.0.1:0", MetricsCertDir: dir}
	_, own, err := o.metricsOptions()
	must(t, err)
	must(t, own.Ready(nil))
	must(t, os.WriteFile(filepath.Join(dir, "tls.key"), []byte("-----BEGIN PRIVATE KEY-----\nbroken\n-----END PRIVATE KEY-----\n"), 0o600))
	err = own.Ready(nil)
	if err == nil || !strings.Contains(err.Error(), "the metrics serving certificate in "+dir+" cannot be loaded (still serving the previous one)") {
		t.Fatalf("a broken key: %v", err)
	}
	if c, err := own.GetCertificate(nil); err != nil || c == nil || c.Leaf != nil && c.Leaf.Subject.CommonName != "good" {
		t.Fatalf("the previous certificate must still be served: %v", err)
	}
	writeSecretVolume(t, dir, "fixed")
	must(t, own.Ready(nil))
}
