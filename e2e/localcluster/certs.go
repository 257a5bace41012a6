package localcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
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
	serviceAccountKey  = "sa.key"
	serviceAccountPub  = "sa.pub"
	frontProxyUserName = "front-proxy-client"
)

type keyPair struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// generatePKI creates a cluster CA with an apiserver serving certificate and an admin client
// certificate, a front-proxy CA with the aggregation layer's client certificate, and the
// service-account signing key pair.
func generatePKI(dir string) (pki, error) {
	p := pki{dir: dir}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return p, err
	}
	ca, err := newCA("olmv1-local-cluster-ca")
	if err != nil {
		return p, err
	}
	if err := p.write(caCert, caKey, ca); err != nil {
		return p, err
	}
	serving, err := ca.issue(x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("127.96.0.1")},
	})
	if err != nil {
		return p, err
	}
	if err := p.write(servingCert, servingKey, serving); err != nil {
		return p, err
	}
	admin, err := ca.issue(x509.Certificate{
		Subject:     pkix.Name{CommonName: "olmv1-admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return p, err
	}
	if err := p.write(adminCert, adminKey, admin); err != nil {
		return p, err
	}
	fpCA, err := newCA("olmv1-local-front-proxy-ca")
	if err != nil {
		return p, err
	}
	if err := p.write(frontProxyCACert, frontProxyCAKey, fpCA); err != nil {
		return p, err
	}
	fp, err := fpCA.issue(x509.Certificate{
		Subject:     pkix.Name{CommonName: frontProxyUserName},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return p, err
	}
	if err := p.write(frontProxyCert, frontProxyKey, fp); err != nil {
		return p, err
	}
	return p, p.writeServiceAccountKeys()
}

func newCA(cn string) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return keyPair{}, err
	}
	cert, err := x509.ParseCertificate(der)
	return keyPair{cert: cert, key: key}, err
}

func (ca keyPair) issue(tmpl x509.Certificate) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, err
	}
	tmpl.SerialNumber = serial()
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(365 * 24 * time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, &tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return keyPair{}, err
	}
	cert, err := x509.ParseCertificate(der)
	return keyPair{cert: cert, key: key}, err
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err))
	}
	return n
}

func (p pki) write(certName, keyName string, kp keyPair) error {
	keyDER, err := x509.MarshalECPrivateKey(kp.key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(p.path(certName), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: kp.cert.Raw}), 0o644); err != nil {
		return err
	}
	return os.WriteFile(p.path(keyName), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
}

// writeServiceAccountKeys writes the RSA key pair kube-apiserver signs and verifies tokens with.
func (p pki) writeServiceAccountKeys() error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(p.path(serviceAccountKey), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(p.path(serviceAccountPub), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
}
