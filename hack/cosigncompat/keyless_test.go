package cosigncompat

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	"github.com/sigstore/sigstore/pkg/tuf"

	"github.com/olmv1/olmv1/rukpak/pkg/signature"
	"github.com/olmv1/olmv1/rukpak/pkg/signature/signaturetest"
)

// TestCosignVerifiesKeylessOffline: a keyless signature made by the test sigstore of
// rukpak/pkg/signature/signaturetest (a CA, a leaf certificate with Fulcio's extensions, a "Rekor"
// key signing the entry timestamp) is accepted by cosign's own verifier offline, given that CA and
// that log key (as `cosign verify --certificate-chain … --insecure-ignore-sct --offline` with
// SIGSTORE_REKOR_PUBLIC_KEY), and refused for another identity or without the log key: the layout
// our verifier reads is cosign's.
func TestCosignVerifiesKeylessOffline(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	t.Cleanup(srv.Close)
	ctx := context.Background()
	_, digest := pushRandomImage(t, strings.TrimPrefix(srv.URL, "http://")+"/bundles/keyless:v1")

	const issuer, subject = "https://issuer.example.com", "https://github.com/org/repo/.github/workflows/release.yaml@refs/heads/main"
	ca, err := signaturetest.NewAuthority("compat")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ca.Signer(signaturetest.Identity{Issuer: issuer, Subject: subject})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := signature.SignKeyless(ctx, digest, signer); err != nil {
		t.Fatal(err)
	}

	roots, inter := x509.NewCertPool(), x509.NewCertPool()
	roots.AddCert(ca.Root)
	inter.AddCert(ca.Intermediate)
	der, err := x509.MarshalPKIXPublicKey(&ca.LogKey.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	rekor := cosign.NewTrustedTransparencyLogPubKeys()
	if err := rekor.AddTransparencyLogPubKey(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), tuf.Active); err != nil {
		t.Fatal(err)
	}
	opts := func(id cosign.Identity, logs *cosign.TrustedTransparencyLogPubKeys) *cosign.CheckOpts {
		return &cosign.CheckOpts{RootCerts: roots, IntermediateCerts: inter, RekorPubKeys: logs, IgnoreSCT: true, Offline: true,
			Identities: []cosign.Identity{id}, ClaimVerifier: cosign.SimpleClaimVerifier}
	}

	sigs, bundleVerified, err := cosign.VerifyImageSignatures(ctx, digest, opts(cosign.Identity{Issuer: issuer, Subject: subject}, &rekor))
	if err != nil {
		t.Fatalf("cosign rejects our keyless signature: %v", err)
	}
	if len(sigs) != 1 || !bundleVerified {
		t.Fatalf("cosign verified %d signatures (bundle verified: %v), want 1 with its bundle", len(sigs), bundleVerified)
	}

	if _, _, err := cosign.VerifyImageSignatures(ctx, digest, opts(cosign.Identity{Issuer: issuer, Subject: "someone@example.com"}, &rekor)); err == nil {
		t.Error("cosign accepted our keyless signature for another subject")
	}
	empty := cosign.NewTrustedTransparencyLogPubKeys()
	if _, _, err := cosign.VerifyImageSignatures(ctx, digest, opts(cosign.Identity{Issuer: issuer, Subject: subject}, &empty)); err == nil {
		t.Error("cosign accepted our keyless signature without the log's key")
	}
}
