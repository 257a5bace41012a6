package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
)

// PEM block types written by this package.
const (
	CertificateBlock = "CERTIFICATE"
	PKCS8KeyBlock    = "PRIVATE KEY"
	ECKeyBlock       = "EC PRIVATE KEY"
	PKCS1RSAKeyBlock = "RSA PRIVATE KEY"
	PublicKeyBlock   = "PUBLIC KEY"
)

// EncodeCert returns c as a PEM CERTIFICATE block.
func EncodeCert(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: CertificateBlock, Bytes: c.Raw})
}

// EncodeCerts returns a trust bundle: each certificate as a PEM CERTIFICATE block, in order.
func EncodeCerts(cs []*x509.Certificate) []byte {
	var buf bytes.Buffer
	for _, c := range cs {
		buf.Write(EncodeCert(c))
	}
	return buf.Bytes()
}

// EncodePKCS8Key returns k as a PEM PKCS#8 PRIVATE KEY block (any key type).
func EncodePKCS8Key(k crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: PKCS8KeyBlock, Bytes: der}), nil
}

// EncodeECKey returns an ECDSA key as a PEM SEC 1 EC PRIVATE KEY block.
func EncodeECKey(k crypto.Signer) ([]byte, error) {
	ek, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("an %s block holds an ECDSA key, not %T", ECKeyBlock, k)
	}
	der, err := x509.MarshalECPrivateKey(ek)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: ECKeyBlock, Bytes: der}), nil
}

// EncodeRSAKey returns an RSA key as a PEM PKCS#1 RSA PRIVATE KEY block.
func EncodeRSAKey(k crypto.Signer) ([]byte, error) {
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("an %s block holds an RSA key, not %T", PKCS1RSAKeyBlock, k)
	}
	return pem.EncodeToMemory(&pem.Block{Type: PKCS1RSAKeyBlock, Bytes: x509.MarshalPKCS1PrivateKey(rk)}), nil
}

// EncodePublicKey returns pub as a PEM PKIX PUBLIC KEY block (any key type), e.g. the key that
// verifies what a private key signs, handed out without the private key.
func EncodePublicKey(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: PublicKeyBlock, Bytes: der}), nil
}
