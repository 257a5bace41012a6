package metadataapi

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/olmv1/olmv1/platform/boot"
)

// The CatalogMetadata API server handshakes with the --tls-profile: under Modern a TLS 1.2 client
// (such as a kube-apiserver limited to TLS 1.2) is refused, a TLS 1.3 client gets the post-quantum
// hybrid, and client certificates are still asked for.
func TestServerUsesTheTLSProfile(t *testing.T) {
	hub, err := NewHub(&memReader{catalogs: demoCatalogs()})
	if err != nil {
		t.Fatal(err)
	}
	modern, err := boot.NamedTLSProfile(boot.TLSProfileModern)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(ServerOptions{BindAddress: "127.0.0.1:0", CertDir: t.TempDir(), Log: logr.Discard(), TLS: modern}, hub)
	if err != nil {
		t.Fatal(err)
	}
	if s.srv.TLSConfig.ClientAuth != tls.RequestClientCert || s.srv.TLSConfig.GetCertificate == nil {
		t.Errorf("the profile must not replace the certificate or client authentication: %+v", s.srv.TLSConfig)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	}()
	addr := s.listener.Addr().String()
	dial := func(cfg *tls.Config) (tls.ConnectionState, error) {
		cfg.InsecureSkipVerify = true //nolint:gosec // the generated self-signed certificate
		c, err := tls.Dial("tcp", addr, cfg)
		if err != nil {
			return tls.ConnectionState{}, err
		}
		defer c.Close()
		return c.ConnectionState(), nil
	}
	if _, err := dial(&tls.Config{MaxVersion: tls.VersionTLS12}); err == nil || !strings.Contains(err.Error(), "protocol version not supported") {
		t.Errorf("a TLS 1.2 client: want the handshake refused, got %v", err)
	}
	cs, err := dial(&tls.Config{NextProtos: []string{"h2"}})
	if err != nil || cs.Version != tls.VersionTLS13 || cs.CurveID != tls.X25519MLKEM768 || cs.NegotiatedProtocol != "h2" {
		t.Errorf("a TLS 1.3 client: %v, %s with %s, protocol %q", err, tls.VersionName(cs.Version), cs.CurveID, cs.NegotiatedProtocol)
	}
}
