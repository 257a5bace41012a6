// Package pki is OLM v1's one home for certificate code. It
//   - issues certificates: a CA (GenerateCA) or any certificate signed by a CA or by itself (Issue),
//     described by a Request that CARequest, ServingRequest and ClientRequest start from;
//   - parses PEM: a CA and its key (ParseCA), a serving key pair (ParseKeyPair), a trust bundle
//     (ParseCerts), each with an error that names what is wrong;
//   - encodes PEM: certificates and bundles (EncodeCert, EncodeCerts), private keys as PKCS#8, SEC 1
//     or PKCS#1, public keys as PKIX;
//   - decides renewal: a certificate is due when a third of its validity is left (RenewAt,
//     NeedsRenewal), and Loop runs a renewal pass whenever the next one is due.
//
// Its users: the registry+v1 webhook CA and serving certificates (rukpak/internal/provisioner/certs),
// the platform certificates rukpak renews in the chart's selfSigned mode (rukpak/internal/platformcerts),
// the serving certificate every controller generates when none is mounted (platform/boot ServingCert), the local control plane's certificates and
// service-account keys (e2e/localcluster), and tests (rukpak/pkg/boot/boottest, e2e).
//
// Key algorithms stay the caller's choice and are part of what each user stores: GenerateCA makes an
// Ed25519 CA; Issue makes a P-256 ECDSA key unless the request carries one
// (NewRSAKey makes an RSA one).
package pki
