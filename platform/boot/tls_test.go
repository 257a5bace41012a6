package boot

import (
	"context"
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

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

func TestMetricsCertificateIsReloadedWithoutRestart(t *testing.T) {
	dir := t.TempDir()
	writeSecretVolume(t, dir, "first")
	o := Options{MetricsBindAddress: "127.0.0.1:0", MetricsCertDir: dir}
	opts, watcher, err := o.metricsOptions()
	if err != nil {
		t.Fatal(err)
	}
	if watcher == nil || !opts.SecureServing || opts.FilterProvider == nil {
		t.Fatalf("metrics must be HTTPS behind authn/authz with a watched certificate: %+v", opts)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = watcher.WithWatchInterval(100 * time.Millisecond).Start(ctx) }()

	cfg := &tls.Config{}
	for _, f := range opts.TLSOpts {
		f(cfg)
	}
	if cfg.MinVersion != tls.VersionTLS12 || strings.Join(cfg.NextProtos, ",") != "http/1.1" {
		t.Errorf("TLS config: min version %x, protocols %v", cfg.MinVersion, cfg.NextProtos)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()

	if got := servedCN(t, l.Addr().String()); got != "first" {
		t.Fatalf("served %q, want first", got)
	}
	writeSecretVolume(t, dir, "second")
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		return servedCN(t, l.Addr().String()) == "second", nil
	})
	if err != nil {
		t.Fatalf("the rotated certificate was not served within 20s: %v", err)
	}
}

func TestMetricsCertDirMustHoldAKeyPair(t *testing.T) {
	o := Options{MetricsBindAddress: "127.0.0.1:0", MetricsCertDir: t.TempDir()}
	if _, _, err := o.metricsOptions(); err == nil || !strings.Contains(err.Error(), "--metrics-cert-dir") || !strings.Contains(err.Error(), "tls.crt") {
		t.Errorf("want an error naming --metrics-cert-dir and tls.crt, got %v", err)
	}
	// Without a directory: a generated self-signed certificate, still TLS 1.2+.
	o.MetricsCertDir = ""
	opts, w, err := o.metricsOptions()
	if err != nil || w != nil || len(opts.TLSOpts) != 1 {
		t.Errorf("no cert dir: %v %v %v", opts, w, err)
	}
}

// A rotation that writes a broken pair makes the readiness check fail with the reason, while the
// last good certificate is still served; fixing the files makes it pass again.
func TestCertReadyReportsABrokenRotation(t *testing.T) {
	dir := t.TempDir()
	writeSecretVolume(t, dir, "good")
	w, err := WatchServingCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	check := CertReady(w, "metrics", dir)
	if err := check(nil); err != nil {
		t.Fatalf("a valid certificate: %v", err)
	}
	must(t, os.WriteFile(filepath.Join(dir, "tls.key"), []byte("-----BEGIN PRIVATE KEY-----\nbroken\n-----END PRIVATE KEY-----\n"), 0o600))
	err = check(nil)
	if err == nil || !strings.Contains(err.Error(), "the metrics serving certificate in "+dir+" cannot be loaded (still serving the previous one)") {
		t.Fatalf("a broken key: %v", err)
	}
	if c, err := w.GetCertificate(nil); err != nil || c == nil || c.Leaf != nil && c.Leaf.Subject.CommonName != "good" {
		t.Fatalf("the previous certificate must still be served: %v", err)
	}
	writeSecretVolume(t, dir, "fixed")
	if err := check(nil); err != nil {
		t.Fatalf("after fixing the files: %v", err)
	}
}
