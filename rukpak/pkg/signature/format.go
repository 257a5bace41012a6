package signature

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// The constants of cosign's signature format.
const (
	// PayloadMediaType is the media type of a signature layer: a simple-signing JSON payload.
	PayloadMediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	// AnnotationSignature is the layer annotation holding the base64 signature of the payload.
	AnnotationSignature = "dev.cosignproject.cosign/signature"
	// PayloadType is the critical.type of a container image signature payload.
	PayloadType = "cosign container image signature"
	// ArtifactType is the artifact type of a signature listed through the OCI 1.1 referrers API.
	ArtifactType = "application/vnd.dev.cosign.artifact.sig.v1+json"
	// maxPayloadBytes bounds a payload read from a registry (real ones are a few hundred bytes).
	maxPayloadBytes = 64 << 10
)

// Payload is the simple-signing JSON document a signature covers.
type Payload struct {
	Critical Critical       `json:"critical"`
	Optional map[string]any `json:"optional"`
}

// Critical is the part of a Payload that a verifier must check.
type Critical struct {
	Identity struct {
		DockerReference string `json:"docker-reference"`
	} `json:"identity"`
	Image struct {
		DockerManifestDigest string `json:"docker-manifest-digest"`
	} `json:"image"`
	Type string `json:"type"`
}

// NewPayload returns the payload that signs digest: its repository as identity, the digest, and
// PayloadType.
func NewPayload(digest name.Digest) ([]byte, error) {
	var p Payload
	p.Critical.Identity.DockerReference = digest.Context().Name()
	p.Critical.Image.DockerManifestDigest = digest.DigestStr()
	p.Critical.Type = PayloadType
	return json.Marshal(p)
}

// SignatureTag is the tag of the signature image of digest: sha256-<hex>.sig in digest's repository.
func SignatureTag(digest name.Digest) (name.Tag, error) {
	algo, hex, ok := strings.Cut(digest.DigestStr(), ":")
	if !ok {
		return name.Tag{}, fmt.Errorf("%s is not a digest reference", digest)
	}
	return digest.Context().Tag(algo + "-" + hex + ".sig"), nil
}

// SignPayload signs payload with key the way cosign does for the key's type, and returns the
// base64 signature for AnnotationSignature.
func SignPayload(key crypto.Signer, payload []byte) (string, error) {
	var (
		sig []byte
		err error
	)
	switch key.Public().(type) {
	case ed25519.PublicKey:
		sig, err = key.Sign(rand.Reader, payload, crypto.Hash(0))
	default:
		sum := sha256.Sum256(payload)
		sig, err = key.Sign(rand.Reader, sum[:], crypto.SHA256)
	}
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(sig), nil
}

// errBadSignature is a signature that does not verify with a key.
var errBadSignature = errors.New("the signature does not verify with this key")

// verifyPayload checks the raw signature sig of payload with key.
func verifyPayload(key PublicKey, payload, sig []byte) error {
	switch k := key.Key.(type) {
	case *ecdsa.PublicKey:
		sum := sha256.Sum256(payload)
		if !ecdsa.VerifyASN1(k, sum[:], sig) {
			return errBadSignature
		}
	case *rsa.PublicKey:
		sum := sha256.Sum256(payload)
		if rsa.VerifyPKCS1v15(k, crypto.SHA256, sum[:], sig) != nil {
			return errBadSignature
		}
	case ed25519.PublicKey:
		if !ed25519.Verify(k, payload, sig) {
			return errBadSignature
		}
	default:
		return fmt.Errorf("key type %T is not supported", key.Key)
	}
	return nil
}

// checkPayload checks that a verified payload signs digest as a container image signature.
func checkPayload(payload []byte, digest string) error {
	var p Payload
	if err := json.Unmarshal(payload, &p); err != nil {
		return fmt.Errorf("the signed payload is not valid simple-signing JSON: %v", err)
	}
	if p.Critical.Type != PayloadType {
		return fmt.Errorf("the signed payload has critical.type %q, not %q", p.Critical.Type, PayloadType)
	}
	if got := p.Critical.Image.DockerManifestDigest; got != digest {
		return fmt.Errorf("the signature is valid but signs digest %s, not %s (a signature copied from another image)", emptyAs(got, "(none)"), digest)
	}
	return nil
}

func emptyAs(s, none string) string {
	if s == "" {
		return none
	}
	return s
}
