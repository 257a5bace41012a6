package pki

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
)

// CA is a certificate authority to sign with, as read by ParseCA.
type CA struct {
	KeyPair
	// CertPEM is the CA certificate as it was given to ParseCA, byte for byte: trust bundles built
	// from it (caBundle, ca.crt) do not change when the CA does not.
	CertPEM []byte
	keyDER  []byte
}

// KeyDER is the DER of the CA's private key as stored (the bytes of its PEM block); callers derive
// stable values from it.
func (ca *CA) KeyDER() []byte { return ca.keyDER }

// ParseCA reads a CA from PEM: the first CERTIFICATE block that parses (other blocks are skipped),
// which must be a CA, and the first block of keyPEM, a private key in PKCS#8 (what GenerateCA writes),
// PKCS#1 RSA or SEC 1 EC form that matches the certificate. Errors start with "CA certificate:" or
// "CA key:" and say what is wrong.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	cert, err := firstCert(certPEM)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, errors.New("CA certificate: not a CA (basicConstraints CA:TRUE missing)")
	}
	key, der, err := parseKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	if pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(cert.PublicKey) {
		return nil, errors.New("CA key: does not match the CA certificate")
	}
	return &CA{KeyPair: KeyPair{Cert: cert, Key: key}, CertPEM: certPEM, keyDER: der}, nil
}

// ParseKeyPair reads a serving certificate and its key (e.g. tls.crt and tls.key of a
// kubernetes.io/tls Secret) the way a TLS server loads them. Errors start with "invalid key pair:" or
// "invalid certificate:".
func ParseKeyPair(certPEM, keyPEM []byte) (*KeyPair, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("invalid key pair: %w", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("invalid certificate: %w", err)
	}
	key, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("invalid key pair: %T cannot sign", pair.PrivateKey)
	}
	return &KeyPair{Cert: leaf, Key: key}, nil
}

// ParseCerts returns the certificates of a PEM trust bundle in order, skipping blocks that are not
// certificates or do not parse.
func ParseCerts(b []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return out
		}
		if blk.Type != CertificateBlock {
			continue
		}
		if c, err := x509.ParseCertificate(blk.Bytes); err == nil {
			out = append(out, c)
		}
	}
}

// firstCert returns the first CERTIFICATE block of b that parses; when none does, the error of the
// first that did not, or that there is none.
func firstCert(b []byte) (*x509.Certificate, error) {
	var first error
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			if first != nil {
				return nil, first
			}
			return nil, errors.New("no PEM " + CertificateBlock + " block")
		}
		if blk.Type != CertificateBlock {
			continue
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
	}
}

// parseKey reads the first PEM block of b as a private key: PKCS#1 RSA, SEC 1 EC or PKCS#8 by its
// block type. It returns the key and the DER it was read from.
func parseKey(b []byte) (crypto.Signer, []byte, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, nil, errors.New("no PEM block")
	}
	var (
		key any
		err error
	)
	switch blk.Type {
	case PKCS1RSAKeyBlock:
		key, err = x509.ParsePKCS1PrivateKey(blk.Bytes)
	case ECKeyBlock:
		key, err = x509.ParseECPrivateKey(blk.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(blk.Bytes)
	}
	if err != nil {
		return nil, nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("%T cannot sign", key)
	}
	return signer, blk.Bytes, nil
}
