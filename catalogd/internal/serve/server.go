package serve

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"

	"github.com/olmv1/olmv1/platform/boot"
)

// Server runs the content endpoint. It is a controller-runtime Runnable that runs on every replica
// (not only the leader): every replica serves its own store.
type Server struct {
	// Addr is the listen address, e.g. 127.0.0.1:7082.
	Addr string
	// Cert is the serving certificate (platform/boot's loader: watched files, or generated in
	// memory), shared with the component's other servers and started by its manager. nil generates
	// one at Start.
	Cert *boot.ServingCert
	// Insecure serves plain HTTP. It must be asked for explicitly.
	Insecure bool
	// TLS is the profile (minimum version, cipher suites, curves) of the HTTPS endpoint; the zero
	// profile is Intermediate.
	TLS     boot.TLSProfile
	Handler http.Handler
	Log     logr.Logger

	// listener is set by Listen (tests listen on port 0 and read the address back).
	listener net.Listener
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
	if _, err := s.Listen(); err != nil {
		return err
	}
	l := s.listener
	srv := &http.Server{Handler: s.Handler, ReadHeaderTimeout: 10 * time.Second}
	if !s.Insecure {
		cert := s.Cert
		if cert == nil {
			host, _, _ := net.SplitHostPort(l.Addr().String())
			var err error
			if cert, err = boot.NewServingCert(boot.ServingCertOptions{What: "content endpoint", Hosts: []string{"catalogd", host}}); err != nil {
				return err
			}
		}
		s.Log.Info("serving certificate of the content endpoint", "source", cert.String())
		l = tls.NewListener(l, cert.ServerConfig(s.TLS))
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
