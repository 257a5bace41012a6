package signature

import (
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// TrustedRoot is what a keyless signature is checked against: the certificate authorities that
// may issue signing certificates and the transparency logs whose signed entry timestamps are
// accepted. It is read from a sigstore trusted_root.json (ParseTrustedRoot).
type TrustedRoot struct {
	// CAs are the certificate authorities, each a chain from an issuing certificate to a root.
	CAs []CertificateAuthority
	// Logs are the transparency logs' public keys, by log ID (hex SHA-256 of the key's DER).
	Logs map[string]TransparencyLog
	// Origin says where it was read from, for messages.
	Origin string
}

// CertificateAuthority is one CA of a trusted root.
type CertificateAuthority struct {
	// Root is the self-signed root; Intermediates the certificates between it and the leaves.
	Root          *x509.Certificate
	Intermediates []*x509.Certificate
	// Start and End bound when it may have issued certificates (End zero: still valid).
	Start, End time.Time
}

// TransparencyLog is one transparency log of a trusted root.
type TransparencyLog struct {
	Key crypto.PublicKey
	// ID is the hex SHA-256 of the key's DER (PKIX) encoding, as in a Rekor entry's logID.
	ID string
	// Start and End bound the entries it may have signed (End zero: still valid).
	Start, End time.Time
}

// TrustedRootMediaType is the media type of the trusted_root.json format ParseTrustedRoot reads.
const TrustedRootMediaType = "application/vnd.dev.sigstore.trustedroot+json;version=0.1"

// trustedRootJSON is the part of sigstore's trusted root (protobuf JSON) this package reads.
type trustedRootJSON struct {
	MediaType              string     `json:"mediaType"`
	Tlogs                  []tlogJSON `json:"tlogs"`
	CertificateAuthorities []caJSON   `json:"certificateAuthorities"`
}

type tlogJSON struct {
	BaseURL   string `json:"baseUrl,omitempty"`
	PublicKey struct {
		RawBytes   []byte     `json:"rawBytes"`
		KeyDetails string     `json:"keyDetails,omitempty"`
		ValidFor   *validJSON `json:"validFor,omitempty"`
	} `json:"publicKey"`
	LogID struct {
		KeyID []byte `json:"keyId"`
	} `json:"logId"`
}

type caJSON struct {
	URI       string `json:"uri,omitempty"`
	CertChain struct {
		Certificates []rawBytesJSON `json:"certificates"`
	} `json:"certChain"`
	ValidFor *validJSON `json:"validFor,omitempty"`
}

type rawBytesJSON struct {
	RawBytes []byte `json:"rawBytes"`
}

type validJSON struct {
	Start *time.Time `json:"start,omitempty"`
	End   *time.Time `json:"end,omitempty"`
}

func (v *validJSON) bounds() (start, end time.Time) {
	if v == nil {
		return
	}
	if v.Start != nil {
		start = *v.Start
	}
	if v.End != nil {
		end = *v.End
	}
	return
}

// ParseTrustedRoot reads a sigstore trusted_root.json: its certificateAuthorities (certChain, the
// issuing certificate first and the root last) and tlogs (publicKey.rawBytes, PKIX DER). Its
// ctlogs and timestampAuthorities are not used. origin names it in errors.
func ParseTrustedRoot(data []byte, origin string) (*TrustedRoot, error) {
	var raw trustedRootJSON
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%s is not a sigstore trusted_root.json: %v", origin, err)
	}
	if raw.MediaType != "" && raw.MediaType != TrustedRootMediaType {
		return nil, fmt.Errorf("%s has mediaType %q, want %q", origin, raw.MediaType, TrustedRootMediaType)
	}
	root := &TrustedRoot{Logs: map[string]TransparencyLog{}, Origin: origin}
	for i, ca := range raw.CertificateAuthorities {
		certs := ca.CertChain.Certificates
		if len(certs) == 0 {
			return nil, fmt.Errorf("%s: certificateAuthorities[%d] has no certificates", origin, i)
		}
		var chain []*x509.Certificate
		for j, c := range certs {
			cert, err := x509.ParseCertificate(c.RawBytes)
			if err != nil {
				return nil, fmt.Errorf("%s: certificateAuthorities[%d].certChain.certificates[%d]: %v", origin, i, j, err)
			}
			chain = append(chain, cert)
		}
		start, end := ca.ValidFor.bounds()
		root.CAs = append(root.CAs, CertificateAuthority{Root: chain[len(chain)-1], Intermediates: chain[:len(chain)-1], Start: start, End: end})
	}
	for i, l := range raw.Tlogs {
		key, err := x509.ParsePKIXPublicKey(l.PublicKey.RawBytes)
		if err != nil {
			return nil, fmt.Errorf("%s: tlogs[%d].publicKey.rawBytes is not a PKIX public key: %v", origin, i, err)
		}
		if err := supported(key); err != nil {
			return nil, fmt.Errorf("%s: tlogs[%d]: %w", origin, i, err)
		}
		id := LogID(l.PublicKey.RawBytes)
		if len(l.LogID.KeyID) > 0 && hex.EncodeToString(l.LogID.KeyID) != id {
			return nil, fmt.Errorf("%s: tlogs[%d].logId.keyId is not the SHA-256 of its public key", origin, i)
		}
		start, end := l.PublicKey.ValidFor.bounds()
		root.Logs[id] = TransparencyLog{Key: key, ID: id, Start: start, End: end}
	}
	if len(root.CAs) == 0 {
		return nil, fmt.Errorf("%s has no certificateAuthorities: a keyless signature's certificate cannot chain to anything", origin)
	}
	if len(root.Logs) == 0 {
		return nil, fmt.Errorf("%s has no tlogs: a keyless signature's transparency log entry cannot be verified", origin)
	}
	return root, nil
}

// LogID is the ID of a transparency log with the public key der (PKIX): the hex SHA-256 of der.
func LogID(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// TrustedRootJSON writes a trusted_root.json with one certificate authority (chain: the issuing
// certificate first, the root last) and one transparency log key, as ParseTrustedRoot reads it.
// Tests and tools use it to make a trusted root of their own.
func TrustedRootJSON(chain []*x509.Certificate, logKey crypto.PublicKey, start time.Time) ([]byte, error) {
	if len(chain) == 0 {
		return nil, errors.New("no certificate")
	}
	der, err := x509.MarshalPKIXPublicKey(logKey)
	if err != nil {
		return nil, err
	}
	var raw trustedRootJSON
	raw.MediaType = TrustedRootMediaType
	var tlog tlogJSON
	tlog.BaseURL = "https://rekor.invalid"
	tlog.PublicKey.RawBytes = der
	tlog.PublicKey.KeyDetails = "PKIX_ECDSA_P256_SHA_256"
	tlog.PublicKey.ValidFor = &validJSON{Start: &start}
	tlog.LogID.KeyID, _ = hex.DecodeString(LogID(der))
	ca := caJSON{URI: "https://fulcio.invalid", ValidFor: &validJSON{Start: &start}}
	for _, c := range chain {
		ca.CertChain.Certificates = append(ca.CertChain.Certificates, rawBytesJSON{RawBytes: c.Raw})
	}
	raw.Tlogs = []tlogJSON{tlog}
	raw.CertificateAuthorities = []caJSON{ca}
	return json.MarshalIndent(raw, "", "  ")
}
