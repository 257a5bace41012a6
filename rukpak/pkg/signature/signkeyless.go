package signature

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// KeylessSigner makes keyless signatures in cosign's layout without a CA or a transparency log to
// talk to: the certificate and the log's key are given. Tests use it with a CA and a log key of
// their own (see package signaturetest); nothing in the controllers signs keyless.
type KeylessSigner struct {
	// Key is the signing key and Cert its certificate; Chain the certificates from Cert's issuer
	// to the root.
	Key   crypto.Signer
	Cert  *x509.Certificate
	Chain []*x509.Certificate
	// LogKey signs the transparency log entry (the signed entry timestamp); IntegratedTime and
	// LogIndex are the entry's.
	LogKey         crypto.Signer
	IntegratedTime time.Time
	LogIndex       int64
}

// SignKeyless signs digest with s and pushes the signature to its signature tag, appending to the
// signatures already there (as Sign). It returns the digest reference of the signature image.
func SignKeyless(ctx context.Context, digest name.Digest, s KeylessSigner, opts ...remote.Option) (name.Digest, error) {
	payload, err := NewPayload(digest)
	if err != nil {
		return name.Digest{}, err
	}
	annotations, err := s.Annotations(payload)
	if err != nil {
		return name.Digest{}, fmt.Errorf("signing %s: %w", digest, err)
	}
	img, err := signatureImage(payload, annotations)
	if err != nil {
		return name.Digest{}, err
	}
	return pushSignature(ctx, digest, img, opts)
}

// Annotations signs payload and returns the annotations of its signature layer: the signature, the
// certificate, the chain and the transparency log bundle.
func (s KeylessSigner) Annotations(payload []byte) (map[string]string, error) {
	sig64, err := SignPayload(s.Key, payload)
	if err != nil {
		return nil, err
	}
	sig, _ := base64.StdEncoding.DecodeString(sig64)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Cert.Raw})
	var chainPEM []byte
	for _, c := range s.Chain {
		chainPEM = append(chainPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	body, err := json.Marshal(NewHashedRekord(payload, sig, certPEM))
	if err != nil {
		return nil, err
	}
	logDER, err := x509.MarshalPKIXPublicKey(s.LogKey.Public())
	if err != nil {
		return nil, err
	}
	entry := RekorEntry{Body: base64.StdEncoding.EncodeToString(body), IntegratedTime: s.IntegratedTime.Unix(), LogID: LogID(logDER), LogIndex: s.LogIndex}
	canonical, err := entry.Canonical()
	if err != nil {
		return nil, err
	}
	set64, err := SignPayload(s.LogKey, canonical)
	if err != nil {
		return nil, err
	}
	set, _ := base64.StdEncoding.DecodeString(set64)
	bundle, err := json.Marshal(RekorBundle{SignedEntryTimestamp: set, Payload: entry})
	if err != nil {
		return nil, err
	}
	return map[string]string{
		AnnotationSignature:   sig64,
		AnnotationCertificate: string(certPEM),
		AnnotationChain:       string(chainPEM),
		AnnotationBundle:      string(bundle),
	}, nil
}
