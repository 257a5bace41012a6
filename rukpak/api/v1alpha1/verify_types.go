package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// VerificationProvider names the signature format and tooling an ImageVerification checks.
// +kubebuilder:validation:Enum=Cosign
type VerificationProvider string

// VerificationProviderCosign checks signatures in the format cosign publishes: a signature image
// tagged sha256-<digest>.sig in the image's repository (or an OCI 1.1 referrer), whose layers are
// signed simple-signing payloads.
const VerificationProviderCosign VerificationProvider = "Cosign"

// Unpacked=False reasons of the signature policy (spec.source.image.verify), the same for a
// BundleDeployment and a Catalog.
const (
	// ReasonUnsigned: the image has no signature; retried with backoff, since the signature may be
	// pushed after the image.
	ReasonUnsigned = "Unsigned"
	// ReasonSignatureInvalid: signatures were found but none verifies with a key of the policy and
	// signs the digest being unpacked. Not retried until the object changes (or, for a tag with a
	// pollInterval, the next poll).
	ReasonSignatureInvalid = "SignatureInvalid"
)

// ImageVerification is the signature policy of an Image source: which signatures make an image
// trusted. Verification runs offline, against the keys of the policy only: no transparency log or
// certificate authority is contacted.
//
// +kubebuilder:validation:XValidation:rule="self.provider != 'Cosign' || has(self.cosign)",message="cosign is required when provider is Cosign"
type ImageVerification struct {
	// provider selects the signature format. Cosign is the only provider: signatures made by
	// `cosign sign --key` or `kubectl olmv1 bundle push --sign-key`.
	// +required
	Provider VerificationProvider `json:"provider"`

	// cosign is the policy for provider Cosign.
	// +optional
	Cosign *CosignVerification `json:"cosign,omitempty"`
}

// CosignVerification accepts an image when at least one of its cosign signatures verifies with one
// of the given public keys and signs the digest being unpacked.
//
// Keyless verification (a certificate identity checked against a trusted root) is not implemented
// yet; secretRef is therefore required today.
//
// +kubebuilder:validation:XValidation:rule="has(self.secretRef)",message="secretRef is required: key-based verification is the only mode implemented (keyless verification is not supported yet)"
type CosignVerification struct {
	// secretRef names a Secret, in the controller's namespace (as for pullSecret), holding the
	// trusted public keys. Every data key of the Secret may hold one or more PEM-encoded public
	// keys ("-----BEGIN PUBLIC KEY-----", PKIX: ECDSA P-256/P-384, RSA or Ed25519), as written by
	// `cosign generate-key-pair` (cosign.pub). A signature made with any one of the keys is
	// accepted, so that keys can be rotated: add the new key, re-sign, then remove the old one.
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`
}

// SecretReference names a Secret in the controller's namespace.
type SecretReference struct {
	// name of the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// VerifiedSignature describes the signature that made an image trusted.
type VerifiedSignature struct {
	// provider is the provider of the policy that accepted the image (Cosign).
	// +required
	Provider VerificationProvider `json:"provider"`

	// keyFingerprint identifies the public key whose signature was accepted: "sha256:" followed by
	// the hex SHA-256 of the key's DER (PKIX) encoding. `openssl pkey -pubin -in cosign.pub
	// -outform DER | sha256sum` prints the same digest.
	// +required
	KeyFingerprint string `json:"keyFingerprint"`

	// signature is the digest reference of the signature image (or referrer) the accepted
	// signature was read from.
	// +optional
	Signature string `json:"signature,omitempty"`

	// time is when the signature of this digest was first verified with this key.
	// +required
	Time metav1.Time `json:"time"`
}
