package signature

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Reasons of a VerifyError; they are also the condition reasons controllers report.
const (
	// ReasonUnsigned: no signature was found for the digest (no signature image, no referrer).
	ReasonUnsigned = "Unsigned"
	// ReasonSignatureInvalid: signatures were found but none is valid for the digest under the
	// policy: made with another key, tampered with, malformed or truncated, signing another digest,
	// or a signature image without signatures.
	ReasonSignatureInvalid = "SignatureInvalid"
)

// Policy is a set of trusted keys, a signature made with any one of them being accepted, or (when
// Keyless is set) a keyless policy.
type Policy struct {
	// Name says where the keys come from, for messages, e.g. `Secret "catalog-keys"`.
	Name string
	// Keys are the trusted keys.
	Keys []PublicKey
	// Keyless, when set, is the policy instead of Keys.
	Keyless *KeylessPolicy
}

// String names the policy and its keys' fingerprints, for messages.
func (p Policy) String() string {
	if p.Keyless != nil {
		return fmt.Sprintf("%s: %s", p.Name, p.Keyless)
	}
	fps := make([]string, 0, len(p.Keys))
	for _, k := range p.Keys {
		fps = append(fps, shortFingerprint(k.Fingerprint))
	}
	return fmt.Sprintf("%s with %d key(s): %s", p.Name, len(p.Keys), strings.Join(fps, ", "))
}

func shortFingerprint(fp string) string {
	if len(fp) > len("sha256:")+16 {
		return fp[:len("sha256:")+16]
	}
	return fp
}

// VerifyError is an image that is not trusted: Reason is ReasonUnsigned or ReasonSignatureInvalid.
type VerifyError struct {
	Reason string
	// Image is the repository and Digest the digest that was checked.
	Image, Digest string
	// Policy names the policy and its keys.
	Policy string
	// Detail says what was found.
	Detail string
}

func (e *VerifyError) Error() string {
	return fmt.Sprintf("image %s@%s is not trusted (%s): %s; policy: %s", e.Image, e.Digest, e.Reason, e.Detail, e.Policy)
}

// Verified is the signature that made an image trusted.
type Verified struct {
	// KeyFingerprint is the Fingerprint of the key that verified the signature (a key policy).
	KeyFingerprint string
	// Issuer and Subject are the identity of the certificate that verified it, and IntegratedTime
	// when the transparency log recorded it (a keyless policy).
	Issuer, Subject string
	IntegratedTime  time.Time
	// Signature is the digest reference of the signature image it was read from.
	Signature string
}

// Verify checks that digest carries a cosign signature made with one of policy's keys and signing
// exactly digest. It reads the signature image tagged SignatureTag(digest) and, when that holds
// no valid signature, the OCI 1.1 referrers of digest with ArtifactType. A registry error is
// returned as is (the caller classifies it); an untrusted image gives a *VerifyError.
func Verify(ctx context.Context, digest name.Digest, policy Policy, opts ...remote.Option) (*Verified, error) {
	opts = append([]remote.Option{remote.WithContext(ctx)}, opts...)
	untrusted := func(reason, detail string) error {
		return &VerifyError{Reason: reason, Image: digest.Context().Name(), Digest: digest.DigestStr(), Policy: policy.String(), Detail: detail}
	}
	if policy.Keyless != nil {
		if policy.Keyless.Root == nil || (policy.Keyless.Subject == "" && policy.Keyless.SubjectRegExp == nil) {
			return nil, untrusted(ReasonSignatureInvalid, "the keyless policy has no trusted root or no subject")
		}
	} else if len(policy.Keys) == 0 {
		return nil, untrusted(ReasonSignatureInvalid, "the policy has no keys")
	}
	var problems []string
	found := 0
	tag, err := SignatureTag(digest)
	if err != nil {
		return nil, err
	}
	desc, err := remote.Get(tag, opts...)
	switch {
	case isNotFound(err):
	case err != nil:
		return nil, err
	default:
		found++
		sigRef := digest.Context().Digest(desc.Digest.String())
		v, probs, err := verifyDescriptor(desc, sigRef, digest.DigestStr(), policy)
		if err != nil || v != nil {
			return v, err
		}
		problems = append(problems, probs...)
	}

	refs, err := referrers(digest, opts)
	if err != nil {
		return nil, err
	}
	for _, r := range refs {
		found++
		sigRef := digest.Context().Digest(r.Digest.String())
		d, err := remote.Get(sigRef, opts...)
		if err != nil {
			return nil, err
		}
		v, probs, err := verifyDescriptor(d, sigRef, digest.DigestStr(), policy)
		if err != nil || v != nil {
			return v, err
		}
		problems = append(problems, probs...)
	}
	if found == 0 {
		return nil, untrusted(ReasonUnsigned, fmt.Sprintf("no signature found (neither tag %s nor an OCI referrer of type %s): sign it with `kubectl olmv1 bundle push --sign-key` or `cosign sign --key`", tag.TagStr(), ArtifactType))
	}
	return nil, untrusted(ReasonSignatureInvalid, strings.Join(problems, "; "))
}

// referrers lists the signature referrers of digest; a registry without the referrers API (or
// the fallback tag) has none.
func referrers(digest name.Digest, opts []remote.Option) ([]v1.Descriptor, error) {
	idx, err := remote.Referrers(digest, append(opts, remote.WithFilter("artifactType", ArtifactType))...)
	if isNotFound(err) || isUnsupported(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var out []v1.Descriptor
	for _, d := range m.Manifests {
		if d.ArtifactType == ArtifactType {
			out = append(out, d)
		}
	}
	return out, nil
}

// verifyDescriptor checks every signature of one signature image. It returns the first valid one,
// or what is wrong with each; err is a registry error.
func verifyDescriptor(desc *remote.Descriptor, sigRef name.Digest, digest string, policy Policy) (*Verified, []string, error) {
	where := "signature image " + sigRef.DigestStr()
	if desc.MediaType.IsIndex() {
		return nil, []string{where + " is an image index, not a signature image"}, nil
	}
	img, err := desc.Image()
	if err != nil {
		return nil, []string{fmt.Sprintf("%s cannot be read: %v", where, err)}, nil
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, []string{fmt.Sprintf("%s has a malformed manifest: %v", where, err)}, nil
	}
	if len(m.Layers) == 0 {
		return nil, []string{where + " has no layers, so no signature"}, nil
	}
	var problems []string
	for i, l := range m.Layers {
		at := fmt.Sprintf("%s layer %d", where, i)
		if l.MediaType != types.MediaType(PayloadMediaType) {
			problems = append(problems, fmt.Sprintf("%s has media type %q, not %s", at, l.MediaType, PayloadMediaType))
			continue
		}
		b64, ok := l.Annotations[AnnotationSignature]
		if !ok || b64 == "" {
			problems = append(problems, fmt.Sprintf("%s has no %s annotation", at, AnnotationSignature))
			continue
		}
		sig, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: the signature is not valid base64 (truncated or malformed): %v", at, err))
			continue
		}
		if l.Size > maxPayloadBytes {
			problems = append(problems, fmt.Sprintf("%s: the payload is %d bytes, more than the %d a signature payload may have", at, l.Size, maxPayloadBytes))
			continue
		}
		payload, err := readPayload(img, l.Digest)
		if err != nil {
			var terr *transport.Error
			if errors.As(err, &terr) && !isNotFound(err) {
				return nil, nil, err
			}
			problems = append(problems, fmt.Sprintf("%s: the payload cannot be read: %v", at, err))
			continue
		}
		if policy.Keyless != nil {
			id, err := verifyKeyless(keylessLayer{payload: payload, sig: sig, annotations: l.Annotations}, digest, policy.Keyless)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", at, err))
				continue
			}
			return &Verified{Issuer: id.issuer, Subject: id.subject, IntegratedTime: id.integrated, Signature: sigRef.String()}, nil, nil
		}
		verifiedBy := ""
		for _, k := range policy.Keys {
			if verifyPayload(k, payload, sig) == nil {
				verifiedBy = k.Fingerprint
				break
			}
		}
		if verifiedBy == "" {
			problems = append(problems, fmt.Sprintf("%s: the signature does not verify with any key of the policy (signed with another key, or tampered with)", at))
			continue
		}
		if err := checkPayload(payload, digest); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", at, err))
			continue
		}
		return &Verified{KeyFingerprint: verifiedBy, Signature: sigRef.String()}, nil, nil
	}
	return nil, problems, nil
}

// readPayload reads a payload blob, at most maxPayloadBytes; go-containerregistry checks its
// digest as it is read.
func readPayload(img v1.Image, digest v1.Hash) ([]byte, error) {
	l, err := img.LayerByDigest(digest)
	if err != nil {
		return nil, err
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxPayloadBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxPayloadBytes {
		return nil, fmt.Errorf("more than %d bytes", maxPayloadBytes)
	}
	return b, nil
}

func isNotFound(err error) bool {
	var terr *transport.Error
	if !errors.As(err, &terr) {
		return false
	}
	if terr.StatusCode == http.StatusNotFound {
		return true
	}
	for _, d := range terr.Errors {
		if d.Code == transport.ManifestUnknownErrorCode || d.Code == transport.NameUnknownErrorCode {
			return true
		}
	}
	return false
}

// isUnsupported is a registry answering the referrers API with a client error other than 401/403.
func isUnsupported(err error) bool {
	var terr *transport.Error
	return errors.As(err, &terr) && (terr.StatusCode == http.StatusBadRequest || terr.StatusCode == http.StatusMethodNotAllowed || terr.StatusCode == http.StatusNotAcceptable)
}
