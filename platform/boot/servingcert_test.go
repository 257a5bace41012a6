package boot

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// startCert starts c's reloading until the test ends.
func startCert(t *testing.T, c *ServingCert) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
}

// The files of a Secret volume are served, a rotation is picked up by new handshakes without a
// restart, and a broken rotation fails the readiness check while the last good certificate is still
// served.
func TestServingCertFilesAreReloaded(t *testing.T) {
	dir := t.TempDir()
	writeSecretVolume(t, dir, "first")
	crt, key := CertDirFiles(dir)
	c, err := NewServingCert(ServingCertOptions{What: "test", Flag: "--tls-cert-dir", CertFile: crt, KeyFile: key, ReloadInterval: 100 * time.Millisecond})
	must(t, err)
	if c.Generated() || !strings.Contains(c.String(), crt) {
		t.Errorf("files: generated %v, %s", c.Generated(), c)
	}
	startCert(t, c)
	// A second Start (another server sharing the certificate) only waits.
	startCert(t, c)
	addr := serveTLS(t, c.ServerConfig(TLSProfile{}))
	if got := servedCN(t, addr); got != "first" {
		t.Fatalf("served %q, want first", got)
	}
	must(t, c.Ready(nil))

	writeSecretVolume(t, dir, "second")
	if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		return servedCN(t, addr) == "second", nil
	}); err != nil {
		t.Fatalf("the rotated certificate was not served within 20s: %v", err)
	}

	must(t, os.WriteFile(filepath.Join(dir, "tls.key"), []byte("-----BEGIN PRIVATE KEY-----\nbroken\n-----END PRIVATE KEY-----\n"), 0o600))
	err = c.Ready(nil)
	if err == nil || !strings.Contains(err.Error(), "the test serving certificate in "+dir+" cannot be loaded (still serving the previous one)") {
		t.Fatalf("readiness with a broken key: %v", err)
	}
	if got := servedCN(t, addr); got != "second" {
		t.Fatalf("after a broken rotation served %q, want the previous certificate", got)
	}
	writeSecretVolume(t, dir, "fixed")
	must(t, c.Ready(nil))
}

// Without files: a CA and a certificate it signs, generated in memory, valid for localhost, the
// loopback addresses and the extra hosts; CABundle is the CA, and nothing is written anywhere.
func TestServingCertFallsBackToAGeneratedCertificate(t *testing.T) {
	c, err := NewServingCert(ServingCertOptions{What: "test", Hosts: []string{"catalogd.olmv1-system.svc", "10.1.2.3", "0.0.0.0"}})
	must(t, err)
	if !c.Generated() || c.Ready(nil) != nil {
		t.Fatalf("generated %v, ready %v", c.Generated(), c.Ready(nil))
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(c.CABundle()) {
		t.Fatalf("CABundle holds no certificate: %q", c.CABundle())
	}
	served, err := c.GetCertificate(&tls.ClientHelloInfo{})
	must(t, err)
	if len(served.Certificate) != 2 {
		t.Errorf("want the certificate and its CA served, got %d certificates", len(served.Certificate))
	}
	leaf, err := x509.ParseCertificate(served.Certificate[0])
	must(t, err)
	for _, host := range []string{"localhost", "127.0.0.1", "::1", "catalogd.olmv1-system.svc", "10.1.2.3"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: roots}); err != nil {
			t.Errorf("%s: %v", host, err)
		}
	}
	// A real handshake, verified against the CA bundle.
	addr := serveTLS(t, c.ServerConfig(TLSProfile{}))
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: "localhost", MinVersion: tls.VersionTLS12})
	must(t, err)
	conn.Close()
	startCert(t, c) // nothing to watch: Start waits for its context
}

func TestServingCertRefusesMissingFiles(t *testing.T) {
	dir := t.TempDir()
	crt, key := CertDirFiles(dir)
	for _, o := range []ServingCertOptions{
		{What: "test", Flag: "--tls-cert-dir", CertFile: crt, KeyFile: key},
		{What: "test", Flag: "--tls-cert-file", CertFile: crt},
	} {
		if _, err := NewServingCert(o); err == nil || !strings.HasPrefix(err.Error(), o.Flag+": the test serving certificate") {
			t.Errorf("%+v: want an error naming the flag, got %v", o, err)
		}
	}
	if crt, key := CertDirFiles(""); crt != "" || key != "" {
		t.Errorf("no directory: %q %q, want the generated fallback", crt, key)
	}
}

// The --tls-profile is applied by Apply/ServerConfig whatever the certificate's source, and
// replaces neither protocols nor client authentication.
func TestServingCertAppliesTheTLSProfile(t *testing.T) {
	modern, err := NamedTLSProfile(TLSProfileModern)
	must(t, err)
	dir := t.TempDir()
	writeSecretVolume(t, dir, "files")
	crt, key := CertDirFiles(dir)
	fromFiles, err := NewServingCert(ServingCertOptions{What: "files", CertFile: crt, KeyFile: key})
	must(t, err)
	generated, err := NewServingCert(ServingCertOptions{What: "generated"})
	must(t, err)
	for _, c := range []*ServingCert{fromFiles, generated} {
		cfg := &tls.Config{NextProtos: []string{"h2"}, ClientAuth: tls.RequestClientCert, Certificates: []tls.Certificate{{}}}
		c.Apply(modern, cfg)
		if cfg.MinVersion != tls.VersionTLS13 || len(cfg.CurvePreferences) == 0 || cfg.NextProtos[0] != "h2" ||
			cfg.ClientAuth != tls.RequestClientCert || cfg.Certificates != nil || cfg.GetCertificate == nil {
			t.Errorf("%s: %+v", c.what, cfg)
		}
		addr := serveTLS(t, c.ServerConfig(modern))
		if _, err := tls.Dial("tcp", addr, &tls.Config{MaxVersion: tls.VersionTLS12, InsecureSkipVerify: true}); err == nil || //nolint:gosec // only the handshake matters
			!strings.Contains(err.Error(), "protocol version not supported") {
			t.Errorf("%s under Modern with a TLS 1.2 client: want the handshake refused, got %v", c.what, err)
		}
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only the handshake matters
		must(t, err)
		if cs := conn.ConnectionState(); cs.Version != tls.VersionTLS13 || cs.CurveID != tls.X25519MLKEM768 {
			t.Errorf("%s: negotiated %s with %s", c.what, tls.VersionName(cs.Version), cs.CurveID)
		}
		conn.Close()
	}
}
