// Package cosigncompat checks, with cosign's own verification code, that the signatures
// rukpak/pkg/signature writes (kubectl olmv1 bundle push --sign-key) are cosign signatures. It is a
// module of its own, kept out of go.work, so that cosign's dependencies never reach the
// controllers' modules: run it with `cd hack/cosigncompat && GOWORK=off go test ./...`.
package cosigncompat

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	sigsig "github.com/sigstore/sigstore/pkg/signature"

	"github.com/olmv1/olmv1/rukpak/pkg/signature"
)

func TestCosignVerifiesOurSignature(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	ctx := context.Background()

	// The bundle image: any image will do, pushed under a tag, then named by its digest.
	tag, digest := pushRandomImage(t, host+"/bundles/demo:v1")
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := signature.Sign(ctx, digest, key); err != nil {
		t.Fatal(err)
	}

	verifier, err := sigsig.LoadECDSAVerifier(&key.PublicKey, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	co := &cosign.CheckOpts{SigVerifier: verifier, IgnoreTlog: true, ClaimVerifier: cosign.SimpleClaimVerifier}
	for _, ref := range []name.Reference{tag, digest} {
		sigs, _, err := cosign.VerifyImageSignatures(ctx, ref, co)
		if err != nil {
			t.Fatalf("cosign rejects our signature of %s: %v", ref, err)
		}
		if len(sigs) != 1 {
			t.Fatalf("cosign verified %d signatures, want 1", len(sigs))
		}
	}

	// And cosign refuses it with another key, so the check above means something.
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	otherVerifier, err := sigsig.LoadECDSAVerifier(&other.PublicKey, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := cosign.VerifyImageSignatures(ctx, digest, &cosign.CheckOpts{SigVerifier: otherVerifier, IgnoreTlog: true, ClaimVerifier: cosign.SimpleClaimVerifier}); err == nil {
		t.Fatal("cosign accepted our signature with another key")
	}
}

// pushRandomImage pushes a random image under ref and returns that tag and the image's reference by
// digest.
func pushRandomImage(t *testing.T, ref string) (name.Tag, name.Digest) {
	t.Helper()
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err == nil {
		err = remote.Write(tag, img)
	}
	if err != nil {
		t.Fatal(err)
	}
	return tag, tag.Context().Digest(d.String())
}
