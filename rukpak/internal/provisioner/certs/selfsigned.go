package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/olmv1/olmv1/platform/pki"
)

// SelfSigned signs serving certificates with a CA it is given (pki.GenerateCA makes one, pki.ParseCA
// reads it back; CARotator keeps rukpak's in the webhook CA Secret and rotates it before NotAfter, and
// every serving certificate follows on the next render). Rendering stays a pure function: the
// serving key is derived from the CA key and the Service name, and the certificate takes its validity
// from the CA, so the same CA renders byte-identical Secrets (no churn on every reconcile). With an
// Ed25519 CA (pki.GenerateCA) signatures are deterministic too; other CA key types work but produce a new
// signature on every render. Rotation is the controller's job: it replaces the CA before it expires
// (Rotate), and re-renders every bundle. SelfSigned is safe for concurrent use.
type SelfSigned struct {
	mu       sync.RWMutex
	ca       *pki.CA
	previous []*pki.CA
	// unavailable says why there is no CA to sign with (see Unavailable).
	unavailable error
}

// Unavailable makes s refuse to issue certificates until the next Rotate, saying why (e.g. the CA
// Secret is corrupt); bundles with webhooks then report err instead of being installed.
func (s *SelfSigned) Unavailable(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ca, s.previous, s.unavailable = nil, nil, err
}

// NewSelfSigned returns the self-signed provider signing with ca. During a rotation the controller
// passes the CAs it replaced as previous: they stay in caBundle (and ca.crt) so that the API server
// keeps trusting pods that still serve a certificate of the old CA until the kubelet refreshes their
// Secret volume. Drop a previous CA once every serving certificate it signed has been replaced.
func NewSelfSigned(ca *pki.CA, previous ...*pki.CA) *SelfSigned {
	return &SelfSigned{ca: ca, previous: previous}
}

// Rotate makes s sign with ca from now on, trusting previous too (see NewSelfSigned). It reports
// whether the signing CA changed.
func (s *SelfSigned) Rotate(ca *pki.CA, previous ...*pki.CA) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := s.ca == nil || ca == nil || !s.ca.Cert.Equal(ca.Cert)
	s.ca, s.previous, s.unavailable = ca, previous, nil
	return changed
}

// CA returns the CA s signs with.
func (s *SelfSigned) CA() *pki.CA {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.ca
}

// snapshot returns the signing CA and the trust bundle as one consistent pair.
func (s *SelfSigned) snapshot() (*pki.CA, []byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	switch {
	case s.ca == nil && s.unavailable != nil:
		return nil, nil, fmt.Errorf("self-signed webhook certificates cannot be issued: %w", s.unavailable)
	case s.ca == nil:
		return nil, nil, errors.New("self-signed certificate provider has no CA")
	}
	return s.ca, s.trustBundle(), nil
}

// trustBundle is the current CA followed by the previous ones, as concatenated PEM (s.mu held).
func (s *SelfSigned) trustBundle() []byte {
	out := append([]byte(nil), s.ca.CertPEM...)
	for _, p := range s.previous {
		if p != nil {
			out = append(out, p.CertPEM...)
		}
	}
	return out
}

var _ Provider = (*SelfSigned)(nil)

// Name implements Provider.
func (*SelfSigned) Name() string { return SelfSignedName }

// Objects implements Provider: the serving Secret (type kubernetes.io/tls, with ca.crt).
func (s *SelfSigned) Objects(svc Service) ([]client.Object, error) {
	ca, bundle, err := s.snapshot()
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := servingCert(ca, svc)
	if err != nil {
		return nil, fmt.Errorf("serving certificate for Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	sec := &corev1.Secret{
		Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{
			corev1.TLSCertKey:       certPEM,
			corev1.TLSPrivateKeyKey: keyPEM,
			"ca.crt":                bundle,
		},
	}
	sec.Name, sec.Namespace = SecretName(svc.Name), svc.Namespace
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(sec)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion("v1")
	u.SetKind("Secret")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return []client.Object{u}, nil
}

// ModifyService implements Provider: nothing to add.
func (*SelfSigned) ModifyService(*corev1.Service) {}

// CAInjection implements Provider: the CA certificate as caBundle.
func (s *SelfSigned) CAInjection(Service) (Injection, error) {
	_, bundle, err := s.snapshot()
	if err != nil {
		return Injection{}, err
	}
	return Injection{CABundle: bundle}, nil
}

// servingCert issues the serving certificate of svc, deterministically: its key is derived from the
// CA key and the Service, its serial from the same seed, and its validity is the CA's.
func servingCert(ca *pki.CA, svc Service) (certPEM, keyPEM []byte, err error) {
	seed := sha256.New()
	seed.Write(ca.KeyDER())
	seed.Write(ca.Cert.Raw)
	seed.Write([]byte(svc.Namespace + "/" + svc.Name))
	base := seed.Sum(nil)

	key, err := deriveP256Key(base)
	if err != nil {
		return nil, nil, err
	}
	serialSum := sha256.Sum256(append([]byte("serial:"), base...))
	req := pki.ServingRequest(svc.DNSNames(), ca.Cert.NotBefore, ca.Cert.NotAfter)
	req.SerialNumber, req.Key = new(big.Int).SetBytes(serialSum[:16]), key
	leaf, err := pki.Issue(req, &ca.KeyPair)
	if err != nil {
		return nil, nil, err
	}
	if keyPEM, err = pki.EncodeECKey(key); err != nil {
		return nil, nil, err
	}
	return pki.EncodeCert(leaf.Cert), keyPEM, nil
}

// deriveP256Key turns a seed into a valid P-256 private scalar, trying successive counters until
// the candidate is in range (almost always the first).
func deriveP256Key(seed []byte) (*ecdsa.PrivateKey, error) {
	for i := uint32(0); i < 64; i++ {
		var ctr [4]byte
		binary.BigEndian.PutUint32(ctr[:], i)
		h := sha256.Sum256(append(append([]byte("p256-key:"), seed...), ctr[:]...))
		if k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), h[:]); err == nil {
			return k, nil
		}
	}
	return nil, errors.New("could not derive a P-256 key")
}
