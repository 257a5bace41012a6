package boot

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/certwatcher"

	"github.com/olmv1/olmv1/platform/pki"
)

// The serving certificate: one loader for every TLS server of the three controllers (the metrics
// endpoint of each; catalogd's content endpoint and CatalogMetadata API). It has two sources and no
// others:
//
//   - files (--tls-cert-dir: tls.crt and tls.key, the layout of a kubernetes.io/tls Secret volume).
//     Both must exist at start-up, or the binary stops with an error naming the flag. They are
//     watched (file events, and a re-read every CertReloadInterval, since kubelet swaps a Secret
//     volume through a symlink some watchers miss): new handshakes get a rotated certificate without
//     a restart. A rotation that leaves a pair that cannot be loaded keeps the previous certificate
//     served and makes the readiness check fail with the reason until the files are fixed.
//   - no files configured: a CA and a serving certificate it signs, generated in memory at start-up
//     (P-256, valid a year, for localhost, 127.0.0.1, ::1 and the component's names), never written
//     to disk. CABundle returns that CA, e.g. for an APIService's caBundle.
//
// The TLS profile (--tls-profile) is applied the same way everywhere: Apply sets the profile's
// versions, suites and curves and the certificate on a server's tls.Config; each server only adds
// its protocols (HTTP/1.1 for metrics and content, h2 for the aggregated API) and client auth.

// CertReloadInterval is how often a watched serving certificate is re-read even without a file event
// (kubelet replaces Secret volume files through a symlink swap, which some file watchers miss).
const CertReloadInterval = 10 * time.Second

// selfSignedValidity is how long a generated certificate (and its CA) is valid.
const selfSignedValidity = 365 * 24 * time.Hour

// ServingCertOptions say where a serving certificate comes from.
type ServingCertOptions struct {
	// What names the server(s) in logs and errors, e.g. "metrics" or "catalogd".
	What string
	// Flag names what configured the files, for errors, e.g. "--tls-cert-dir".
	Flag string
	// CertFile and KeyFile are the PEM certificate (chain) and private key, watched and reloaded.
	// Both empty: a certificate generated in memory.
	CertFile, KeyFile string
	// Hosts are the DNS names and IP addresses of a generated certificate, besides localhost,
	// 127.0.0.1 and ::1.
	Hosts []string
	// ReloadInterval is how often the files are re-read without a file event; 0 is CertReloadInterval.
	ReloadInterval time.Duration
}

// CertDirFiles are dir's tls.crt and tls.key (a kubernetes.io/tls Secret volume); an empty dir gives
// empty names, the generated fallback.
func CertDirFiles(dir string) (certFile, keyFile string) {
	if dir == "" {
		return "", ""
	}
	return filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
}

// ServingCert is a TLS server certificate: watched files, or one generated in memory. Start it (it is
// a manager Runnable, on every replica) for the files to be watched; several servers may share one.
type ServingCert struct {
	what, flag        string
	certFile, keyFile string
	// watcher serves the files; nil when generated.
	watcher *certwatcher.CertWatcher
	// generated is the in-memory certificate (leaf and CA); nil with files.
	generated *tls.Certificate
	caBundle  []byte
	started   atomic.Bool
}

// NewServingCert loads the files o names, or generates a certificate when it names none.
func NewServingCert(o ServingCertOptions) (*ServingCert, error) {
	c := &ServingCert{what: o.What, flag: o.Flag, certFile: o.CertFile, keyFile: o.KeyFile}
	if c.what == "" {
		c.what = "TLS server"
	}
	switch {
	case o.CertFile == "" && o.KeyFile == "":
		return c, c.generate(o.Hosts)
	case o.CertFile == "" || o.KeyFile == "":
		return nil, fmt.Errorf("%s: the %s serving certificate needs both a certificate and a key file", c.flag, c.what)
	}
	for _, p := range []string{o.CertFile, o.KeyFile} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("%s: the %s serving certificate: %w (the directory must hold tls.crt and tls.key, e.g. a kubernetes.io/tls Secret volume)", c.flag, c.what, err)
		}
	}
	w, err := certwatcher.New(o.CertFile, o.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("%s: loading the %s serving certificate %s / %s: %w", c.flag, c.what, o.CertFile, o.KeyFile, err)
	}
	if c.caBundle, err = os.ReadFile(o.CertFile); err != nil {
		return nil, err
	}
	if o.ReloadInterval <= 0 {
		o.ReloadInterval = CertReloadInterval
	}
	c.watcher = w.WithWatchInterval(o.ReloadInterval)
	return c, nil
}

// generate issues a CA and a serving certificate signed by it, in memory.
func (c *ServingCert) generate(hosts []string) error {
	now := time.Now().Add(-time.Minute)
	ca, err := pki.Issue(pki.CARequest(fmt.Sprintf("%s-ca@%d", c.what, now.Unix()), now, now.Add(selfSignedValidity)), nil)
	if err != nil {
		return err
	}
	dns := []string{"localhost"}
	ips := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			if !ip.IsUnspecified() && !slices.ContainsFunc(ips, ip.Equal) {
				ips = append(ips, ip)
			}
		} else if h != "" && !slices.Contains(dns, h) {
			dns = append(dns, h)
		}
	}
	req := pki.ServingRequest(dns, now, now.Add(selfSignedValidity))
	req.IPAddresses = ips
	leaf, err := pki.Issue(req, ca)
	if err != nil {
		return err
	}
	cert := leaf.TLSCertificate()
	cert.Certificate = append(cert.Certificate, ca.Cert.Raw)
	cert.Leaf = leaf.Cert
	c.generated, c.caBundle = &cert, pki.EncodeCert(ca.Cert)
	return nil
}

// Generated reports whether the certificate was generated in memory (no files configured).
func (c *ServingCert) Generated() bool { return c.watcher == nil }

// CABundle is the PEM a client must trust: the generated CA, or the certificate file as it was at
// start-up (the served chain).
func (c *ServingCert) CABundle() []byte { return slices.Clone(c.caBundle) }

// String says where the certificate comes from, for logs.
func (c *ServingCert) String() string {
	if c.Generated() {
		return "generated in memory at start-up (no certificate files configured)"
	}
	return fmt.Sprintf("%s and %s, reloaded when they change", c.certFile, c.keyFile)
}

// GetCertificate is tls.Config's GetCertificate: the latest loaded pair, or the generated one.
func (c *ServingCert) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c.watcher == nil {
		return c.generated, nil
	}
	return c.watcher.GetCertificate(hello)
}

// Apply sets the TLS profile's versions, suites and curves and this certificate on cfg; it leaves
// protocols and client authentication to the server.
func (c *ServingCert) Apply(p TLSProfile, cfg *tls.Config) {
	p.Apply(cfg)
	cfg.Certificates = nil
	cfg.GetCertificate = c.GetCertificate
}

// ServerConfig is a new server configuration with the profile and this certificate applied.
func (c *ServingCert) ServerConfig(p TLSProfile) *tls.Config {
	cfg := &tls.Config{}
	c.Apply(p, cfg)
	return cfg
}

// Start watches the files until ctx ends (a generated certificate has nothing to watch). A second
// Start only waits for its ctx: one watcher serves every server sharing the certificate.
func (c *ServingCert) Start(ctx context.Context) error {
	if c.watcher == nil || !c.started.CompareAndSwap(false, true) {
		<-ctx.Done()
		return nil
	}
	if err := c.watcher.Start(ctx); err != nil {
		return fmt.Errorf("watching the %s serving certificate %s: %w", c.what, c.certFile, err)
	}
	return nil
}

// NeedLeaderElection: every replica serves, so every replica reloads.
func (c *ServingCert) NeedLeaderElection() bool { return false }

// Ready is a readiness check: it reads the files again and fails, naming what and where, when they
// cannot be loaded (a rotation that wrote a broken or mismatched pair). The watcher logs the same
// error on its own re-reads; the last good certificate keeps being served meanwhile, and the check
// passes again once the files are fixed. A generated certificate is always ready.
func (c *ServingCert) Ready(*http.Request) error {
	if c.watcher == nil {
		return nil
	}
	if err := c.watcher.ReadCertificate(); err != nil {
		return fmt.Errorf("the %s serving certificate in %s cannot be loaded (still serving the previous one): %w", c.what, c.location(), err)
	}
	return nil
}

// location is the files' directory, or both paths when they are in different directories.
func (c *ServingCert) location() string {
	if dir := filepath.Dir(c.certFile); dir == filepath.Dir(c.keyFile) {
		return dir
	}
	return c.certFile + " / " + c.keyFile
}
