package serve

import (
	"context"
	"crypto/tls"
	"net/http"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/olmv1/olmv1/platform/boot"
)

// startServer serves the content endpoint with the TLS profile p on a free loopback port.
func startServer(t *testing.T, p boot.TLSProfile) string {
	t.Helper()
	s := &Server{
		Addr:    "127.0.0.1:0",
		TLS:     p,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }),
		Log:     logr.Discard(),
	}
	addr, err := s.Listen()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	})
	return addr.String()
}

func handshake(addr string, cfg *tls.Config) (tls.ConnectionState, error) {
	cfg.InsecureSkipVerify = true //nolint:gosec // the generated self-signed certificate
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer c.Close()
	return c.ConnectionState(), nil
}

// The content endpoint serves with the --tls-profile: Intermediate by default (TLS 1.2 with ECDHE
// AEAD suites), Modern refuses TLS 1.2, and TLS 1.3 clients get the post-quantum hybrid.
func TestServerUsesTheTLSProfile(t *testing.T) {
	modern, err := boot.NamedTLSProfile(boot.TLSProfileModern)
	if err != nil {
		t.Fatal(err)
	}
	addr := startServer(t, modern)
	if _, err := handshake(addr, &tls.Config{MaxVersion: tls.VersionTLS12}); err == nil || !strings.Contains(err.Error(), "protocol version not supported") {
		t.Errorf("Modern with a TLS 1.2 client: want the handshake refused, got %v", err)
	}
	cs, err := handshake(addr, &tls.Config{})
	if err != nil || cs.Version != tls.VersionTLS13 || cs.CurveID != tls.X25519MLKEM768 {
		t.Errorf("Modern with a TLS 1.3 client: %v, %s with %s", err, tls.VersionName(cs.Version), cs.CurveID)
	}

	addr = startServer(t, boot.TLSProfile{}) // the zero profile: Intermediate
	if _, err := handshake(addr, &tls.Config{MaxVersion: tls.VersionTLS12}); err != nil {
		t.Errorf("Intermediate with a TLS 1.2 client: %v", err)
	}
	if _, err := handshake(addr, &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}}); err == nil {
		t.Error("Intermediate accepted a client offering only TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA")
	}
}
