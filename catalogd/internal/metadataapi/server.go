package metadataapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	metadatav1alpha1 "github.com/olmv1/olmv1/catalogd/api/metadata/v1alpha1"
	"github.com/olmv1/olmv1/platform/boot"
)

// ServerOptions configure the aggregated API server.
type ServerOptions struct {
	// BindAddress is host:port to serve HTTPS on, e.g. 127.0.0.1:7444.
	BindAddress string
	// Cert is the serving certificate (platform/boot's loader: watched files, or generated in
	// memory), shared with the component's other servers and started by its manager.
	Cert *boot.ServingCert
	// CertDir, when Cert is nil, is the deprecated --metadata-cert-dir: tls.crt and tls.key (or
	// apiserver.crt and apiserver.key) there are served and reloaded; when it holds neither pair, a
	// certificate is generated in memory (servingcert.go). The server starts that loader itself.
	CertDir string
	// Config reaches kube-apiserver for delegated authentication (TokenReview, the client and
	// request-header CAs in kube-system/extension-apiserver-authentication) and authorization
	// (SubjectAccessReview). nil serves without authentication and authorization (tests only).
	Config *rest.Config
	// ExtraSANs are additional DNS names of a certificate generated for CertDir (e.g. the Service's).
	ExtraSANs []string
	// Log receives the server's own messages.
	Log logr.Logger
	// TLS is the profile (minimum version, cipher suites, curves) of the server; the zero profile is
	// Intermediate. HTTP/2 needs a Custom profile with TLS 1.0–1.2 suites to keep one of
	// TLS_ECDHE_{RSA,ECDSA}_WITH_AES_128_GCM_SHA256.
	TLS boot.TLSProfile
}

// Server is a prepared aggregated API server: listening, not yet serving.
type Server struct {
	listener net.Listener
	srv      *http.Server
	cert     *boot.ServingCert
	// ownCert: the server started from CertDir and starts its certificate's reloading itself.
	ownCert bool
	guard   *guard
	log     logr.Logger
	// CABundle is the PEM the APIService must trust: the generated CA, or the certificate file.
	CABundle []byte
}

// NewServer builds the CatalogMetadata API server over hub and opens its listener, so that a port
// in use fails the start.
func NewServer(o ServerOptions, hub *Hub) (*Server, error) {
	scheme, err := apiScheme()
	if err != nil {
		return nil, err
	}
	if _, _, err := net.SplitHostPort(o.BindAddress); err != nil {
		return nil, fmt.Errorf("--metadata-bind-address %q: %w", o.BindAddress, err)
	}
	s := &Server{cert: o.Cert, log: o.Log}
	if s.cert == nil {
		if s.cert, err = certFromDir(o.CertDir, o.ExtraSANs); err != nil {
			return nil, err
		}
		s.ownCert = true
	}
	s.CABundle = s.cert.CABundle()
	docs, err := newOpenAPIDocs()
	if err != nil {
		return nil, fmt.Errorf("building the OpenAPI documents: %w", err)
	}
	var authorize authorizeFunc
	if o.Config != nil {
		if s.guard, err = newGuard(o.Config); err != nil {
			return nil, err
		}
		authorize = s.guard.authorize
	}
	tlsConfig := s.cert.ServerConfig(o.TLS)
	// Every client certificate is verified by the authenticator, against the CAs it reloads.
	tlsConfig.ClientAuth = tls.RequestClientCert
	s.srv = &http.Server{
		Handler:           newHandler(NewREST(hub), scheme, docs, authorize),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    1 << 20,
		TLSConfig:         tlsConfig,
	}
	if s.listener, err = net.Listen("tcp", o.BindAddress); err != nil {
		return nil, fmt.Errorf("listening on %s for the metadata API (change --metadata-bind-address): %w", o.BindAddress, err)
	}
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.listener.Addr() }

// apiScheme is the scheme of the CatalogMetadata API: its kinds and field label conversion.
func apiScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := metadatav1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return scheme, nil
}

// Start serves until ctx ends; it implements controller-runtime's manager.Runnable. Open watches
// end with ctx, then the server shuts down.
func (s *Server) Start(ctx context.Context) error {
	if s.ownCert {
		go func() {
			if err := s.cert.Start(ctx); err != nil {
				s.log.Error(err, "reloading the metadata API serving certificate failed; changes are not picked up")
			}
		}()
	}
	if s.guard != nil {
		if err := s.guard.start(ctx, s.log); err != nil {
			_ = s.listener.Close()
			return err
		}
	}
	s.srv.BaseContext = func(net.Listener) context.Context { return ctx }
	done := make(chan error, 1)
	go func() { done <- s.srv.ServeTLS(s.listener, "", "") }()
	select {
	case err := <-done:
		return fmt.Errorf("serving the metadata API: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(shutdown); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
