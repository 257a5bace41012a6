package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"time"
)

// KeyPair is a certificate and its private key.
type KeyPair struct {
	Cert *x509.Certificate
	Key  crypto.Signer
}

// TLSCertificate returns the pair as a crypto/tls server certificate.
func (p *KeyPair) TLSCertificate() tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{p.Cert.Raw}, PrivateKey: p.Key}
}

// Request describes a certificate to issue. Every field is copied into the certificate as it is;
// nothing is defaulted except SerialNumber and Key.
type Request struct {
	Subject     pkix.Name
	DNSNames    []string
	IPAddresses []net.IP
	NotBefore   time.Time
	NotAfter    time.Time
	KeyUsage    x509.KeyUsage
	ExtKeyUsage []x509.ExtKeyUsage
	// IsCA makes a CA certificate (basicConstraints CA:TRUE).
	IsCA bool
	// SerialNumber, when nil, is a random 127-bit number (RandomSerial).
	SerialNumber *big.Int
	// Key is the certificate's key; when nil a new P-256 ECDSA key is generated.
	Key crypto.Signer
}

// ServingRequest is a TLS server certificate for dnsNames (the first is the common name), valid from
// notBefore to notAfter.
func ServingRequest(dnsNames []string, notBefore, notAfter time.Time) Request {
	return Request{
		Subject:     pkix.Name{CommonName: dnsNames[0]},
		DNSNames:    dnsNames,
		NotBefore:   notBefore,
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
}

// ClientRequest is a TLS client certificate for subject, valid from notBefore to notAfter. The
// Kubernetes API server reads the user name from the common name and the groups from the
// organizations.
func ClientRequest(subject pkix.Name, notBefore, notAfter time.Time) Request {
	return Request{
		Subject:     subject,
		NotBefore:   notBefore,
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
}

// CARequest is a CA certificate named commonName, valid from notBefore to notAfter, that signs
// certificates (key usages certSign and digitalSignature). Issue it with a nil parent for a root CA.
func CARequest(commonName string, notBefore, notAfter time.Time) Request {
	return Request{
		Subject:   pkix.Name{CommonName: commonName},
		NotBefore: notBefore,
		NotAfter:  notAfter,
		KeyUsage:  x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		IsCA:      true,
	}
}

// Issue creates the certificate req describes, signed by parent, or by its own key when parent is nil
// (self-signed).
func Issue(req Request, parent *KeyPair) (*KeyPair, error) {
	key := req.Key
	if key == nil {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		key = k
	}
	serial := req.SerialNumber
	if serial == nil {
		var err error
		if serial, err = RandomSerial(); err != nil {
			return nil, err
		}
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      req.Subject,
		DNSNames:     req.DNSNames,
		IPAddresses:  req.IPAddresses,
		NotBefore:    req.NotBefore,
		NotAfter:     req.NotAfter,
		KeyUsage:     req.KeyUsage,
		ExtKeyUsage:  req.ExtKeyUsage,
	}
	if req.IsCA {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	}
	signerCert, signerKey := tmpl, key
	if parent != nil {
		signerCert, signerKey = parent.Cert, parent.Key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, key.Public(), signerKey)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &KeyPair{Cert: cert, Key: key}, nil
}

// NewRSAKey returns a new RSA key of bits bits (at least 2048), for a Request whose certificate must
// be RSA, e.g. to negotiate the TLS_RSA_* and TLS_ECDHE_RSA_* suites.
func NewRSAKey(bits int) (crypto.Signer, error) {
	if bits < 2048 {
		return nil, fmt.Errorf("an RSA key of %d bits is too short: use at least 2048", bits)
	}
	return rsa.GenerateKey(rand.Reader, bits)
}

// RandomSerial returns a random 127-bit certificate serial number.
func RandomSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

// GenerateCA creates a new Ed25519 CA named commonName, valid from notBefore for validity, returned
// as PEM (a CERTIFICATE block and a PKCS#8 PRIVATE KEY block) ready to be stored; ParseCA reads it
// back. Ed25519 signatures are deterministic: the same CA signs the same template to the same bytes.
func GenerateCA(commonName string, notBefore time.Time, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	req := CARequest(commonName, notBefore, notBefore.Add(validity))
	req.Key = priv
	ca, err := Issue(req, nil)
	if err != nil {
		return nil, nil, err
	}
	if keyPEM, err = EncodePKCS8Key(ca.Key); err != nil {
		return nil, nil, err
	}
	return EncodeCert(ca.Cert), keyPEM, nil
}
