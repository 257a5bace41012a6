package boot

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// writeSecretVolume writes a key pair for cn the way kubelet updates a Secret volume: the files live
// in a timestamped directory, ..data points at it, and tls.crt/tls.key are symlinks through ..data,
// so a rotation is one atomic rename of ..data.
func writeSecretVolume(t *testing.T, dir, cn string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	ts := filepath.Join(dir, "..ts-"+cn)
	if err := os.MkdirAll(ts, 0o755); err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(ts, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644))
	must(t, os.WriteFile(filepath.Join(ts, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	tmpLink := filepath.Join(dir, "..data_tmp")
	must(t, os.Symlink(filepath.Base(ts), tmpLink))
	must(t, os.Rename(tmpLink, filepath.Join(dir, "..data")))
	for _, f := range []string{"tls.crt", "tls.key"} {
		if _, err := os.Lstat(filepath.Join(dir, f)); os.IsNotExist(err) {
			must(t, os.Symlink(filepath.Join("..data", f), filepath.Join(dir, f)))
		}
	}
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
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reading the served certificate
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
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
