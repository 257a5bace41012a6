// Package signaturetest makes what keyless signatures need, for tests: a certificate authority (a
// root and an intermediate, as Fulcio has), signing certificates naming an OIDC identity with
// Fulcio's extensions, and a transparency log key that signs entry timestamps, all made in the
// test (nothing is contacted). Its TrustedRootJSON is what a keyless policy's trustedRootRef holds.
package signaturetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"math/big"
	"net/url"
	"strings"
	"time"

	"github.com/olmv1/olmv1/rukpak/pkg/signature"
)

// Authority is a test sigstore instance: a CA (Root, Intermediate) and a transparency log key.
type Authority struct {
	Root, Intermediate *x509.Certificate
	rootKey, interKey  *ecdsa.PrivateKey
	// LogKey signs transparency log entries.
	LogKey *ecdsa.PrivateKey
	// Start is when the CA and the log became valid (an hour before NewAuthority).
	Start time.Time
}

// Identity is what a signing certificate names.
type Identity struct {
	// Issuer is the OIDC issuer; with Legacy it goes in extension 1.3.6.1.4.1.57264.1.1 only.
	Issuer string
	Legacy bool
	// Subject is an email address, or a URI when it holds "://".
	Subject string
}

// NewAuthority makes a CA (self-signed root, intermediate) and a transparency log key.
func NewAuthority(name string) (*Authority, error) {
	a := &Authority{Start: time.Now().Add(-time.Hour).UTC().Truncate(time.Second)}
	var err error
	for _, k := range []**ecdsa.PrivateKey{&a.rootKey, &a.interKey, &a.LogKey} {
		if *k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			return nil, err
		}
	}
	end := a.Start.Add(10 * 365 * 24 * time.Hour)
	root := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{Organization: []string{name}, CommonName: name + " root"},
		NotBefore: a.Start, NotAfter: end, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	if a.Root, err = create(root, root, &a.rootKey.PublicKey, a.rootKey); err != nil {
		return nil, err
	}
	inter := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{Organization: []string{name}, CommonName: name + " intermediate"},
		NotBefore: a.Start, NotAfter: end, IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
	}
	if a.Intermediate, err = create(inter, a.Root, &a.interKey.PublicKey, a.rootKey); err != nil {
		return nil, err
	}
	return a, nil
}

func create(tmpl, parent *x509.Certificate, pub *ecdsa.PublicKey, key *ecdsa.PrivateKey) (*x509.Certificate, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, key)
	if err != nil {
		return nil, err
	}
	return x509.ParseCertificate(der)
}

// TrustedRootJSON is the sigstore trusted_root.json of the authority.
func (a *Authority) TrustedRootJSON() ([]byte, error) {
	return signature.TrustedRootJSON([]*x509.Certificate{a.Intermediate, a.Root}, &a.LogKey.PublicKey, a.Start)
}

// Leaf issues a signing certificate for key to id, valid from notBefore for ten minutes (as
// Fulcio's), with the code-signing usage and the issuer extension.
func (a *Authority) Leaf(id Identity, key *ecdsa.PrivateKey, notBefore time.Time) (*x509.Certificate, error) {
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(notBefore.UnixNano()), NotBefore: notBefore, NotAfter: notBefore.Add(10 * time.Minute),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
	}
	if strings.Contains(id.Subject, "://") {
		u, err := url.Parse(id.Subject)
		if err != nil {
			return nil, err
		}
		tmpl.URIs = []*url.URL{u}
	} else if id.Subject != "" {
		tmpl.EmailAddresses = []string{id.Subject}
	}
	if id.Issuer != "" {
		tmpl.ExtraExtensions = append(tmpl.ExtraExtensions, pkix.Extension{Id: signature.OIDIssuerLegacy, Value: []byte(id.Issuer)})
		if !id.Legacy {
			v, err := asn1.MarshalWithParams(id.Issuer, "utf8")
			if err != nil {
				return nil, err
			}
			tmpl.ExtraExtensions = append(tmpl.ExtraExtensions, pkix.Extension{Id: signature.OIDIssuer, Value: v})
		}
	}
	return create(tmpl, a.Intermediate, &key.PublicKey, a.interKey)
}

// Signer is a KeylessSigner for id: a fresh key, its certificate issued a minute ago, and an entry
// integrated now by the authority's log.
func (a *Authority) Signer(id Identity) (signature.KeylessSigner, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return signature.KeylessSigner{}, err
	}
	now := time.Now().UTC().Truncate(time.Second)
	cert, err := a.Leaf(id, key, now.Add(-time.Minute))
	if err != nil {
		return signature.KeylessSigner{}, err
	}
	return signature.KeylessSigner{
		Key: key, Cert: cert, Chain: []*x509.Certificate{a.Intermediate, a.Root},
		LogKey: a.LogKey, IntegratedTime: now, LogIndex: now.UnixNano() % 1e9,
	}, nil
}
