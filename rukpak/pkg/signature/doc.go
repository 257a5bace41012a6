// Package signature signs and verifies container image signatures in the format cosign publishes,
// offline (nothing is contacted but the registry), using the Go standard library for the
// cryptography: with public keys (Policy.Keys), or keyless (Policy.Keyless: a certificate chained
// to a trusted root's CA, naming an OIDC identity, logged in a transparency log whose signed entry
// timestamp is checked with the root's log key; see keyless.go).
//
// The format, as this package reads and writes it:
//
//   - A signature of the image repo@sha256:<hex> is stored in the same repository, as an OCI image
//     tagged sha256-<hex>.sig (the "signature image"). Registries with the OCI 1.1 referrers API may
//     also list it as a referrer of the image with artifact type ArtifactType.
//   - Each layer of the signature image is one signature: its blob is a simple-signing JSON
//     payload (media type PayloadMediaType) and its annotation AnnotationSignature holds the
//     base64 of the signature over the payload bytes. Signing a digest again appends a layer.
//   - The payload's critical.image.docker-manifest-digest is the digest that was signed and
//     critical.type is PayloadType. Whoever verifies must check both, since the signature covers
//     the payload, not the image.
//   - ECDSA signatures are ASN.1 DER over the SHA-256 of the payload; RSA signatures are PKCS #1
//     v1.5 over its SHA-256; Ed25519 signatures are over the payload itself.
//
// Verify answers with a *VerifyError (reason Unsigned or SignatureInvalid) when the image is not
// trusted, and with the registry's error when the signature could not be fetched: the caller
// classifies that one as it does any registry error.
package signature
