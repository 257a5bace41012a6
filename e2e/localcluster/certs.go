package localcluster

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"os"
	"path/filepath"
	"time"

	// The certificate code of OLM v1; named olmpki here because pki is the type below.
	olmpki "github.com/olmv1/olmv1/platform/pki"
)

// pki is the set of credentials a control plane needs; every file lives in one directory.
type pki struct {
	dir string
}

func (p pki) path(name string) string { return filepath.Join(p.dir, name) }

// Files written by generatePKI.
const (
	caCert             = "ca.crt"
	caKey              = "ca.key"
	servingCert        = "apiserver.crt"
	servingKey         = "apiserver.key"
	frontProxyCACert   = "front-proxy-ca.crt"
	frontProxyCAKey    = "front-proxy-ca.key"
	frontProxyCert     = "front-proxy-client.crt"
	frontProxyKey      = "front-proxy-client.key"
	adminCert          = "admin.crt"
	adminKey           = "admin.key"
	kubeletClientCert  = "apiserver-kubelet-client.crt"
	kubeletClientKey   = "apiserver-kubelet-client.key"
	serviceAccountKey  = "sa.key"
	serviceAccountPub  = "sa.pub"
	frontProxyUserName = "front-proxy-client"
)

const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 365 * 24 * time.Hour
	// backdate starts every certificate an hour early, for clock skew between processes.
	backdate = time.Hour
)

// apiServerDNSNames and apiServerIPs are the names kube-apiserver is reached by: localhost and
// 127.0.0.1 from this machine, the kubernetes Service's names and its cluster IP (the first address
// of ServiceCIDR) in the cluster.
var (
	apiServerDNSNames = []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	apiServerIPs      = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("127.96.0.1")}
)

// generatePKI creates a cluster CA with an apiserver serving certificate (for apiServerIPs and
// extraIPs: a real-node cluster's node IP and kubernetes Service IP), an admin client certificate and
// the client certificate kube-apiserver presents to kubelets, a front-proxy CA with the aggregation
// layer's client certificate, and the service-account signing key pair. Every certificate has a
// P-256 ECDSA key, stored as SEC 1.
func generatePKI(dir string, extraIPs ...net.IP) (pki, error) {
	p := pki{dir: dir}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return p, err
	}
	now := time.Now()
	notBefore, caNotAfter, leafNotAfter := now.Add(-backdate), now.Add(caValidity), now.Add(leafValidity)
	// Like kubeadm's, these CAs also allow keyEncipherment.
	caRequest := func(cn string) olmpki.Request {
		req := olmpki.CARequest(cn, notBefore, caNotAfter)
		req.KeyUsage |= x509.KeyUsageKeyEncipherment
		return req
	}

	ca, err := p.issue(caCert, caKey, caRequest("olmv1-local-cluster-ca"), nil)
	if err != nil {
		return p, err
	}
	serving := olmpki.ServingRequest(apiServerDNSNames, notBefore, leafNotAfter)
	serving.Subject, serving.IPAddresses = pkix.Name{CommonName: "kube-apiserver"}, append(append([]net.IP{}, apiServerIPs...), extraIPs...)
	if _, err := p.issue(servingCert, servingKey, serving, ca); err != nil {
		return p, err
	}
	admin := olmpki.ClientRequest(pkix.Name{CommonName: "olmv1-admin", Organization: []string{"system:masters"}}, notBefore, leafNotAfter)
	if _, err := p.issue(adminCert, adminKey, admin, ca); err != nil {
		return p, err
	}
	kubeletClient := olmpki.ClientRequest(pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}}, notBefore, leafNotAfter)
	if _, err := p.issue(kubeletClientCert, kubeletClientKey, kubeletClient, ca); err != nil {
		return p, err
	}
	fpCA, err := p.issue(frontProxyCACert, frontProxyCAKey, caRequest("olmv1-local-front-proxy-ca"), nil)
	if err != nil {
		return p, err
	}
	fp := olmpki.ClientRequest(pkix.Name{CommonName: frontProxyUserName}, notBefore, leafNotAfter)
	if _, err := p.issue(frontProxyCert, frontProxyKey, fp, fpCA); err != nil {
		return p, err
	}
	return p, p.writeServiceAccountKeys()
}

// issue issues req, signed by parent (self-signed when nil), and writes the certificate to certName
// and its key (SEC 1 EC PRIVATE KEY) to keyName.
func (p pki) issue(certName, keyName string, req olmpki.Request, parent *olmpki.KeyPair) (*olmpki.KeyPair, error) {
	pair, err := olmpki.Issue(req, parent)
	if err != nil {
		return nil, err
	}
	keyPEM, err := olmpki.EncodeECKey(pair.Key)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.path(certName), olmpki.EncodeCert(pair.Cert), 0o644); err != nil {
		return nil, err
	}
	return pair, os.WriteFile(p.path(keyName), keyPEM, 0o600)
}

// writeServiceAccountKeys writes the RSA key pair kube-apiserver signs and verifies tokens with:
// the private key as PKCS#1, the public key as PKIX.
func (p pki) writeServiceAccountKeys() error {
	key, err := olmpki.NewRSAKey(2048)
	if err != nil {
		return err
	}
	keyPEM, err := olmpki.EncodeRSAKey(key)
	if err != nil {
		return err
	}
	pubPEM, err := olmpki.EncodePublicKey(key.Public())
	if err != nil {
		return err
	}
	if err := os.WriteFile(p.path(serviceAccountKey), keyPEM, 0o600); err != nil {
		return err
	}
	return os.WriteFile(p.path(serviceAccountPub), pubPEM, 0o644)
}
