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
// trusted. Verification runs offline, against the keys or trusted root of the policy only: no transparency log or
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

// CosignVerification accepts an image when at least one of its cosign signatures is trusted and
// signs the digest being unpacked: made with one of the public keys of secretRef, or (keyless)
// made with the key of a certificate that a trusted certificate authority issued to the expected
// identity and that was logged in a trusted transparency log. Exactly one of secretRef and keyless
// is set.
//
// +kubebuilder:validation:XValidation:rule="has(self.secretRef) != has(self.keyless)",message="exactly one of secretRef (public keys) and keyless (certificate identity) is required"
type CosignVerification struct {
	// secretRef names a Secret, in the controller's namespace (as for pullSecret), holding the
	// trusted public keys. Every data key of the Secret may hold one or more PEM-encoded public
	// keys ("-----BEGIN PUBLIC KEY-----", PKIX: ECDSA P-256/P-384, RSA or Ed25519), as written by
	// `cosign generate-key-pair` (cosign.pub). A signature made with any one of the keys is
	// accepted, so that keys can be rotated: add the new key, re-sign, then remove the old one.
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`

	// keyless accepts signatures made by `cosign sign` without a key: the signature layer carries
	// a certificate (issued by a certificate authority such as Fulcio to an OIDC identity) and a
	// transparency log entry's signed timestamp (a Rekor bundle). Both are checked offline, against
	// the certificate authorities and transparency log keys of a trusted root: no network request
	// is made to a CA, a transparency log or an OIDC issuer.
	// +optional
	Keyless *KeylessVerification `json:"keyless,omitempty"`
}

// KeylessVerification is the identity a keyless signature's certificate must carry and the trusted
// root it must chain to.
//
// +kubebuilder:validation:XValidation:rule="has(self.subject) != has(self.subjectRegExp)",message="exactly one of subject and subjectRegExp is required"
type KeylessVerification struct {
	// issuer is the OIDC issuer the certificate must name (its Fulcio extension
	// 1.3.6.1.4.1.57264.1.8, or the legacy 1.3.6.1.4.1.57264.1.1), compared exactly, e.g.
	// "https://token.actions.githubusercontent.com" or "https://accounts.google.com".
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Issuer string `json:"issuer"`

	// subject is the identity the certificate must be issued to, compared exactly with each of its
	// subject alternative names (email address or URI), e.g. "release@example.com" or
	// "https://github.com/org/repo/.github/workflows/release.yaml@refs/heads/main".
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Subject string `json:"subject,omitempty"`

	// subjectRegExp is a Go regular expression (RE2) that one subject alternative name of the
	// certificate must match as a whole (it is anchored: "^(?:" + subjectRegExp + ")$"), e.g.
	// "https://github.com/org/.*/.github/workflows/release.yaml@refs/tags/v.*".
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	SubjectRegExp string `json:"subjectRegExp,omitempty"`

	// trustedRootRef names the ConfigMap or Secret, in the controller's namespace, holding the
	// trusted root: a sigstore trusted_root.json (as `cosign trusted-root create` writes, or the
	// public-good instance's from its TUF repository), with the certificate authorities
	// (certificateAuthorities) the certificate must chain to and the transparency log keys (tlogs)
	// that must have signed the entry's timestamp.
	// +required
	TrustedRootRef TrustedRootReference `json:"trustedRootRef"`
}

// TrustedRootKind is the kind of object holding a trusted root.
// +kubebuilder:validation:Enum=ConfigMap;Secret
type TrustedRootKind string

// The kinds of object that may hold a trusted root.
const (
	TrustedRootKindConfigMap TrustedRootKind = "ConfigMap"
	TrustedRootKindSecret    TrustedRootKind = "Secret"
)

// DefaultTrustedRootKey is the data key of the trusted root when trustedRootRef.key is not set.
const DefaultTrustedRootKey = "trusted_root.json"

// TrustedRootReference names a ConfigMap or Secret in the controller's namespace, and its data key
// holding a sigstore trusted_root.json.
type TrustedRootReference struct {
	// kind of the object: ConfigMap (the default) or Secret.
	// +optional
	// +kubebuilder:default=ConfigMap
	Kind TrustedRootKind `json:"kind,omitempty"`

	// name of the ConfigMap or Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// key is the data key holding the trusted root; trusted_root.json when not set.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
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

	// keyFingerprint identifies the public key whose signature was accepted (a secretRef policy):
	// "sha256:" followed by the hex SHA-256 of the key's DER (PKIX) encoding. `openssl pkey -pubin
	// -in cosign.pub -outform DER | sha256sum` prints the same digest.
	// +optional
	KeyFingerprint string `json:"keyFingerprint,omitempty"`

	// identity is the certificate identity whose signature was accepted (a keyless policy).
	// +optional
	Identity *SignerIdentity `json:"identity,omitempty"`

	// signature is the digest reference of the signature image (or referrer) the accepted
	// signature was read from.
	// +optional
	Signature string `json:"signature,omitempty"`

	// time is when the signature of this digest was first verified with this key (or identity).
	// +required
	Time metav1.Time `json:"time"`
}

// SignerIdentity is the identity of a keyless signature's certificate.
type SignerIdentity struct {
	// issuer is the OIDC issuer named by the certificate.
	// +required
	Issuer string `json:"issuer"`

	// subject is the certificate's subject alternative name that matched the policy.
	// +required
	Subject string `json:"subject"`

	// integratedTime is when the transparency log recorded the signature (from the entry's signed
	// timestamp); the certificate was valid then.
	// +optional
	IntegratedTime *metav1.Time `json:"integratedTime,omitempty"`
}
