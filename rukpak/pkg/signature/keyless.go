package signature

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Keyless signatures, checked offline.
//
// `cosign sign` without a key signs with an ephemeral key, gets a short-lived certificate for it
// from a CA (Fulcio) that names the signer's OIDC identity, and logs the signature in a
// transparency log (Rekor), which answers with a signed entry timestamp (SET). cosign stores all of
// it on the signature layer: the certificate (AnnotationCertificate), the chain to the CA's root
// (AnnotationChain) and the log entry with its SET (AnnotationBundle). Verifying one offline:
//
//  1. the signature verifies with the certificate's key over the payload, and the payload signs
//     the digest being unpacked (as for keys);
//  2. the SET verifies with the key of a transparency log of the trusted root, over the entry
//     (body, integratedTime, logID, logIndex) in canonical JSON, and the entry (a hashedrekord) is
//     this signature: its signature, its certificate and the payload's SHA-256;
//  3. the certificate chains to a CA of the trusted root and every certificate of the chain was
//     valid at the entry's integrated time (a Fulcio certificate lives ten minutes: the log's
//     timestamp is what proves it was used while valid), with the code-signing usage;
//  4. the certificate names the policy's OIDC issuer and a subject alternative name that is the
//     policy's subject or matches its regular expression.
//
// Not checked: the certificate's embedded SCTs (certificate transparency), and the log's inclusion
// proof (the SET is the log's promise of inclusion, as cosign checks offline).

// Layer annotations of a keyless signature, as cosign writes them.
const (
	// AnnotationCertificate holds the PEM signing certificate.
	AnnotationCertificate = "dev.sigstore.cosign/certificate"
	// AnnotationChain holds the PEM certificates from the signing certificate's issuer to the root.
	AnnotationChain = "dev.sigstore.cosign/chain"
	// AnnotationBundle holds the transparency log entry and its signed entry timestamp (RekorBundle).
	AnnotationBundle = "dev.sigstore.cosign/bundle"
)

// The certificate extensions naming the OIDC issuer (Fulcio's OID arc 1.3.6.1.4.1.57264.1).
var (
	// OIDIssuer is the issuer as a DER UTF8String (Fulcio since 2022).
	OIDIssuer = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 8}
	// OIDIssuerLegacy is the issuer as raw bytes (deprecated, still written by Fulcio).
	OIDIssuerLegacy = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 1}
)

// KeylessPolicy accepts a signature whose certificate a CA of Root issued to Subject (or a subject
// matching SubjectRegExp) as authenticated by Issuer, logged in a transparency log of Root.
type KeylessPolicy struct {
	Issuer string
	// Subject is compared exactly; when empty, SubjectRegExp (anchored) must match.
	Subject       string
	SubjectRegExp *regexp.Regexp
	Root          *TrustedRoot
}

// CompileSubjectRegExp anchors expr so that it must match a whole subject.
func CompileSubjectRegExp(expr string) (*regexp.Regexp, error) {
	return regexp.Compile("^(?:" + expr + ")$")
}

func (k *KeylessPolicy) String() string {
	subject := fmt.Sprintf("subject %q", k.Subject)
	if k.Subject == "" && k.SubjectRegExp != nil {
		subject = fmt.Sprintf("subject matching %s", k.SubjectRegExp)
	}
	root := "no trusted root"
	if k.Root != nil {
		root = fmt.Sprintf("a trusted root of %d CA(s) and %d transparency log key(s)", len(k.Root.CAs), len(k.Root.Logs))
	}
	return fmt.Sprintf("keyless: issuer %q, %s, %s", k.Issuer, subject, root)
}

// RekorBundle is the content of AnnotationBundle: a transparency log entry and the log's signature
// over it.
type RekorBundle struct {
	// SignedEntryTimestamp is the log's signature over Payload in canonical JSON.
	SignedEntryTimestamp []byte     `json:"SignedEntryTimestamp"`
	Payload              RekorEntry `json:"Payload"`
}

// RekorEntry is a transparency log entry, with the fields in the order of its canonical JSON.
type RekorEntry struct {
	// Body is the base64 of the entry (a hashedrekord, see HashedRekord).
	Body           string `json:"body"`
	IntegratedTime int64  `json:"integratedTime"`
	// LogID is the hex SHA-256 of the log's public key (LogID).
	LogID    string `json:"logID"`
	LogIndex int64  `json:"logIndex"`
}

// Canonical is the entry as the log signs it: JSON with sorted keys, no spaces, no HTML escaping.
func (e RekorEntry) Canonical() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// HashedRekord is the body of a transparency log entry of kind hashedrekord, apiVersion 0.0.1.
type HashedRekord struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Data struct {
			Hash struct {
				Algorithm string `json:"algorithm"`
				Value     string `json:"value"`
			} `json:"hash"`
		} `json:"data"`
		Signature struct {
			// Content is the signature (base64 in JSON).
			Content   []byte `json:"content"`
			PublicKey struct {
				// Content is the PEM certificate or public key (base64 in JSON).
				Content []byte `json:"content"`
			} `json:"publicKey"`
		} `json:"signature"`
	} `json:"spec"`
}

// NewHashedRekord is the entry a transparency log records for sig of payload made with the key of
// certPEM.
func NewHashedRekord(payload, sig, certPEM []byte) HashedRekord {
	var h HashedRekord
	h.APIVersion, h.Kind = "0.0.1", "hashedrekord"
	sum := sha256.Sum256(payload)
	h.Spec.Data.Hash.Algorithm, h.Spec.Data.Hash.Value = "sha256", hex.EncodeToString(sum[:])
	h.Spec.Signature.Content = sig
	h.Spec.Signature.PublicKey.Content = certPEM
	return h
}

// keylessLayer is what a signature layer carries for keyless verification.
type keylessLayer struct {
	payload, sig []byte
	annotations  map[string]string
}

// identity is what a verified keyless signature proves.
type identity struct {
	issuer, subject string
	integrated      time.Time
}

// verifyKeyless checks one signature layer against policy (steps 1-4 above). digest is the digest
// being unpacked. The error says what is wrong, for the message of a SignatureInvalid.
func verifyKeyless(l keylessLayer, digest string, policy *KeylessPolicy) (*identity, error) {
	certPEM := l.annotations[AnnotationCertificate]
	if certPEM == "" {
		return nil, fmt.Errorf("no %s annotation: signed with a key, not keyless (a keyless policy needs `cosign sign` without --key)", AnnotationCertificate)
	}
	leaf, err := parseCertPEM([]byte(certPEM))
	if err != nil {
		return nil, fmt.Errorf("the %s annotation: %v", AnnotationCertificate, err)
	}
	if err := verifyPayload(PublicKey{Key: leaf.PublicKey}, l.payload, l.sig); err != nil {
		return nil, errors.New("the signature does not verify with its certificate's key (tampered with)")
	}
	if err := checkPayload(l.payload, digest); err != nil {
		return nil, err
	}
	integrated, err := verifyBundle(l, leaf, policy.Root)
	if err != nil {
		return nil, err
	}
	if err := verifyChain(leaf, l.annotations[AnnotationChain], integrated, policy.Root); err != nil {
		return nil, err
	}
	issuer, subjects, err := certIdentity(leaf)
	if err != nil {
		return nil, err
	}
	if issuer != policy.Issuer {
		return nil, fmt.Errorf("the certificate was issued for OIDC issuer %q, not %q (check verify.cosign.keyless.issuer)", issuer, policy.Issuer)
	}
	for _, s := range subjects {
		if (policy.Subject != "" && s == policy.Subject) || (policy.Subject == "" && policy.SubjectRegExp != nil && policy.SubjectRegExp.MatchString(s)) {
			return &identity{issuer: issuer, subject: s, integrated: integrated}, nil
		}
	}
	want := fmt.Sprintf("%q", policy.Subject)
	if policy.Subject == "" && policy.SubjectRegExp != nil {
		want = "a match of " + policy.SubjectRegExp.String()
	}
	return nil, fmt.Errorf("the certificate was issued to %s, not %s (check verify.cosign.keyless.subject or subjectRegExp)", quoteAll(subjects), want)
}

// verifyBundle checks the transparency log entry of the layer and returns its integrated time.
func verifyBundle(l keylessLayer, leaf *x509.Certificate, root *TrustedRoot) (time.Time, error) {
	raw := l.annotations[AnnotationBundle]
	if raw == "" {
		return time.Time{}, fmt.Errorf("no %s annotation: a keyless signature is verified offline only with its transparency log entry (sign with the log upload on, cosign's default)", AnnotationBundle)
	}
	var b RekorBundle
	if err := json.Unmarshal([]byte(raw), &b); err != nil {
		return time.Time{}, fmt.Errorf("the %s annotation is not a Rekor bundle: %v", AnnotationBundle, err)
	}
	log, ok := root.Logs[b.Payload.LogID]
	if !ok {
		return time.Time{}, fmt.Errorf("the transparency log entry is from log %s, which is not in the trusted root %s (add its key to tlogs)", shortID(b.Payload.LogID), root.Origin)
	}
	canonical, err := b.Payload.Canonical()
	if err != nil {
		return time.Time{}, err
	}
	if len(b.SignedEntryTimestamp) == 0 || verifyPayload(PublicKey{Key: log.Key}, canonical, b.SignedEntryTimestamp) != nil {
		return time.Time{}, fmt.Errorf("the transparency log entry's signed entry timestamp does not verify with the key of log %s (tampered with, or signed by another log)", shortID(log.ID))
	}
	integrated := time.Unix(b.Payload.IntegratedTime, 0).UTC()
	if (!log.Start.IsZero() && integrated.Before(log.Start)) || (!log.End.IsZero() && integrated.After(log.End)) {
		return time.Time{}, fmt.Errorf("the transparency log entry was integrated at %s, outside the validity of log %s in the trusted root", integrated.Format(time.RFC3339), shortID(log.ID))
	}
	body, err := base64.StdEncoding.DecodeString(b.Payload.Body)
	if err != nil {
		return time.Time{}, fmt.Errorf("the transparency log entry's body is not base64: %v", err)
	}
	var entry HashedRekord
	if err := json.Unmarshal(body, &entry); err != nil || entry.Kind != "hashedrekord" {
		return time.Time{}, fmt.Errorf("the transparency log entry is not a hashedrekord entry (kind %q, %v)", entry.Kind, err)
	}
	sum := sha256.Sum256(l.payload)
	if entry.Spec.Data.Hash.Algorithm != "sha256" || entry.Spec.Data.Hash.Value != hex.EncodeToString(sum[:]) {
		return time.Time{}, errors.New("the transparency log entry is for another payload (its hash differs): the bundle was copied from another signature")
	}
	if !bytes.Equal(entry.Spec.Signature.Content, l.sig) {
		return time.Time{}, errors.New("the transparency log entry holds another signature: the bundle was copied from another signature")
	}
	logged, err := parseCertPEM(entry.Spec.Signature.PublicKey.Content)
	if err != nil || !bytes.Equal(logged.Raw, leaf.Raw) {
		return time.Time{}, errors.New("the transparency log entry holds another certificate than the signature layer")
	}
	return integrated, nil
}

// verifyChain checks that leaf chains to a CA of root, every certificate valid at t, for code
// signing. The chain annotation's certificates may serve as intermediates, never as roots.
func verifyChain(leaf *x509.Certificate, chainPEM string, t time.Time, root *TrustedRoot) error {
	extra, err := parseCertsPEM([]byte(chainPEM))
	if err != nil {
		return fmt.Errorf("the %s annotation: %v", AnnotationChain, err)
	}
	var problems []string
	for i, ca := range root.CAs {
		if (!ca.Start.IsZero() && t.Before(ca.Start)) || (!ca.End.IsZero() && t.After(ca.End)) {
			problems = append(problems, fmt.Sprintf("CA %d (%s) was not valid at %s", i, ca.Root.Subject, t.Format(time.RFC3339)))
			continue
		}
		roots, inter := x509.NewCertPool(), x509.NewCertPool()
		roots.AddCert(ca.Root)
		for _, c := range ca.Intermediates {
			inter.AddCert(c)
		}
		for _, c := range extra {
			if !bytes.Equal(c.RawSubject, c.RawIssuer) {
				inter.AddCert(c)
			}
		}
		_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: t, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}})
		if err == nil {
			return nil
		}
		problems = append(problems, fmt.Sprintf("CA %q: %v", ca.Root.Subject.String(), err))
	}
	return fmt.Errorf("the certificate (issued by %q) does not chain to a CA of the trusted root %s at the entry's integrated time %s: %s (check verify.cosign.keyless.trustedRootRef)",
		leaf.Issuer.String(), root.Origin, t.Format(time.RFC3339), strings.Join(problems, "; "))
}

// certIdentity is the OIDC issuer and the subject alternative names (emails, URIs) of cert.
func certIdentity(cert *x509.Certificate) (string, []string, error) {
	issuer, legacy := "", ""
	for _, e := range cert.Extensions {
		switch {
		case e.Id.Equal(OIDIssuer):
			if _, err := asn1.Unmarshal(e.Value, &issuer); err != nil {
				return "", nil, fmt.Errorf("the certificate's issuer extension %s is not a UTF8String: %v", OIDIssuer, err)
			}
		case e.Id.Equal(OIDIssuerLegacy):
			legacy = string(e.Value)
		}
	}
	if issuer == "" {
		issuer = legacy
	}
	if issuer == "" {
		return "", nil, fmt.Errorf("the certificate names no OIDC issuer (no extension %s or %s): it was not issued by a Fulcio-like CA", OIDIssuer, OIDIssuerLegacy)
	}
	subjects := append([]string(nil), cert.EmailAddresses...)
	for _, u := range cert.URIs {
		subjects = append(subjects, u.String())
	}
	if len(subjects) == 0 {
		return "", nil, errors.New("the certificate has no email or URI subject alternative name")
	}
	return issuer, subjects, nil
}

func parseCertPEM(data []byte) (*x509.Certificate, error) {
	certs, err := parseCertsPEM(data)
	if err != nil {
		return nil, err
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM certificate")
	}
	return certs[0], nil
}

func parseCertsPEM(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return out, nil
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("PEM block %q is not a certificate", block.Type)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
}

func shortID(id string) string {
	if len(id) > 16 {
		return id[:16]
	}
	return id
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
