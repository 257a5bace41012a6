package serve

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"

	"github.com/olmv1/olmv1/platform/boot"
	"github.com/olmv1/olmv1/platform/pki"
)

// Server runs the content endpoint. It is a controller-runtime Runnable that runs on every replica
// (not only the leader): every replica serves its own store.
type Server struct {
	// Addr is the listen address, e.g. 127.0.0.1:7082.
	Addr string
	// CertFile and KeyFile are a PEM certificate and key, reloaded when they change. When both are
	// empty and Insecure is false, a self-signed certificate is generated at start-up.
	CertFile, KeyFile string
	// Insecure serves plain HTTP. It must be asked for explicitly.
	Insecure bool
	// TLS is the profile (minimum version, cipher suites, curves) of the HTTPS endpoint; the zero
	// profile is Intermediate.
	TLS     boot.TLSProfile
	Handler http.Handler
	Log     logr.Logger

	// listener is set by Listen (tests listen on port 0 and read the address back).
	listener net.Listener
	// cert watches CertFile/KeyFile once Start loaded them (nil before, and without CertFile).
	mu   sync.Mutex
	cert *certwatcher.CertWatcher
}

// CertReady is a readiness check: with CertFile set it fails, with the reason, while the certificate
// files cannot be loaded (a broken rotation; the previous certificate is still served) or before
// Start loaded them.
func (s *Server) CertReady(*http.Request) error {
	if s.Insecure || s.CertFile == "" {
		return nil
	}
	s.mu.Lock()
	w := s.cert
	s.mu.Unlock()
	if w == nil {
		return fmt.Errorf("the content endpoint's certificate %s is not loaded yet", s.CertFile)
	}
	if err := w.ReadCertificate(); err != nil {
		return fmt.Errorf("the content endpoint's certificate %s / %s cannot be loaded (still serving the previous one): %w", s.CertFile, s.KeyFile, err)
	}
	return nil
}

// Validate checks the flag combination.
func (s *Server) Validate() error {
	if (s.CertFile == "") != (s.KeyFile == "") {
		return errors.New("--tls-cert-file and --tls-key-file must be given together")
	}
	if s.Insecure && s.CertFile != "" {
		return errors.New("--http-insecure cannot be combined with --tls-cert-file/--tls-key-file")
	}
	return nil
}

// Scheme is "http" or "https".
func (s *Server) Scheme() string {
	if s.Insecure {
		return "http"
	}
	return "https"
}

// Listen binds the address; Start calls it when it was not called before.
func (s *Server) Listen() (net.Addr, error) {
	if s.listener == nil {
		l, err := net.Listen("tcp", s.Addr)
		if err != nil {
			return nil, fmt.Errorf("listening on %s for the content endpoint (change --http-bind-address): %w", s.Addr, err)
		}
		s.listener = l
	}
	return s.listener.Addr(), nil
}

// NeedLeaderElection: every replica serves.
func (s *Server) NeedLeaderElection() bool { return false }

// Start serves until ctx is done.
func (s *Server) Start(ctx context.Context) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if _, err := s.Listen(); err != nil {
		return err
	}
	l := s.listener
	srv := &http.Server{Handler: s.Handler, ReadHeaderTimeout: 10 * time.Second}
	if !s.Insecure {
		cfg := s.TLS.ServerConfig()
		if s.CertFile != "" {
			w, err := certwatcher.New(s.CertFile, s.KeyFile)
			if err != nil {
				return fmt.Errorf("loading --tls-cert-file %s / --tls-key-file %s: %w", s.CertFile, s.KeyFile, err)
			}
			go func() {
				if err := w.Start(ctx); err != nil {
					s.Log.Error(err, "watching the content endpoint's certificate files failed; changes are not picked up", "cert", s.CertFile, "key", s.KeyFile)
				}
			}()
			s.mu.Lock()
			s.cert = w
			s.mu.Unlock()
			cfg.GetCertificate = w.GetCertificate
		} else {
			cert, err := selfSigned(l.Addr())
			if err != nil {
				return err
			}
			s.Log.Info("no --tls-cert-file given: serving content with a self-signed certificate")
			cfg.Certificates = []tls.Certificate{cert}
		}
		l = tls.NewListener(l, cfg)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	s.Log.Info("serving catalog content", "address", s.listener.Addr().String(), "scheme", s.Scheme())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	}
}

// selfSigned is the certificate served when no CertFile/KeyFile is configured: self-signed,
// P-256, valid for a year on localhost, catalogd, 127.0.0.1 and the listen address.
func selfSigned(addr net.Addr) (tls.Certificate, error) {
	now := time.Now()
	req := pki.Request{
		Subject:     pkix.Name{CommonName: "catalogd"},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(365 * 24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost", "catalogd"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	if ta, ok := addr.(*net.TCPAddr); ok && ta.IP != nil && !ta.IP.IsUnspecified() {
		req.IPAddresses = append(req.IPAddresses, ta.IP)
	}
	pair, err := pki.Issue(req, nil)
	if err != nil {
		return tls.Certificate{}, err
	}
	return pair.TLSCertificate(), nil
}
