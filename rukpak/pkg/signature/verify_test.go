package signature

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// testRegistry is go-containerregistry's in-memory registry on 127.0.0.1.
type testRegistry struct{ host string }

func newRegistry(t testing.TB, opts ...registry.Option) *testRegistry {
	t.Helper()
	opts = append(opts, registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(registry.New(opts...))
	t.Cleanup(srv.Close)
	return &testRegistry{host: strings.TrimPrefix(srv.URL, "http://")}
}

// push pushes a random image to repo:tag and returns its digest reference.
func (r *testRegistry) push(t testing.TB, repoTag string) name.Digest {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	return r.write(t, img, repoTag)
}

func (r *testRegistry) write(t testing.TB, img v1.Image, repoTag string) name.Digest {
	t.Helper()
	tag, err := name.NewTag(r.host + "/" + repoTag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return tag.Context().Digest(d.String())
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// publicPEM is key's public half as cosign.pub holds it.
func publicPEM(t testing.TB, key crypto.Signer) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func policyOf(t testing.TB, keys ...crypto.Signer) Policy {
	t.Helper()
	var data []byte
	for _, k := range keys {
		data = append(data, publicPEM(t, k)...)
	}
	pks, err := ParsePublicKeys(data, `Secret "keys" key "cosign.pub"`)
	if err != nil {
		t.Fatal(err)
	}
	return Policy{Name: `Secret "keys"`, Keys: pks}
}

func sign(t testing.TB, digest name.Digest, key crypto.Signer) {
	t.Helper()
	if _, err := Sign(context.Background(), digest, key); err != nil {
		t.Fatal(err)
	}
}

// putSignatureImage pushes a hand-made signature image for digest: one layer per payload, annotated
// with the matching signature ("" leaves the annotation out).
func putSignatureImage(t testing.TB, digest name.Digest, payloads [][]byte, sigs []string) {
	t.Helper()
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	for i, p := range payloads {
		ann := map[string]string{}
		if sigs[i] != "" {
			ann[AnnotationSignature] = sigs[i]
		}
		var err error
		if img, err = mutate.Append(img, mutate.Addendum{Layer: static.NewLayer(p, PayloadMediaType), Annotations: ann}); err != nil {
			t.Fatal(err)
		}
	}
	tag, err := SignatureTag(digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
}

func wantVerifyError(t *testing.T, err error, reason string, fragments ...string) {
	t.Helper()
	var verr *VerifyError
	if !errors.As(err, &verr) {
		t.Fatalf("got %v, want a %s VerifyError", err, reason)
	}
	if verr.Reason != reason {
		t.Fatalf("reason %s, want %s: %v", verr.Reason, reason, err)
	}
	t.Logf("%s", err)
	for _, f := range append(fragments, verr.Image, verr.Digest, `Secret "keys"`) {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("message %q does not contain %q", err, f)
		}
	}
}

func TestVerifySigned(t *testing.T) {
	reg := newRegistry(t)
	digest := reg.push(t, "catalogs/demo:v1")
	key := newKey(t)
	sign(t, digest, key)
	policy := policyOf(t, key)

	v, err := Verify(context.Background(), digest, policy)
	if err != nil {
		t.Fatal(err)
	}
	if v.KeyFingerprint != policy.Keys[0].Fingerprint || !strings.HasPrefix(v.KeyFingerprint, "sha256:") {
		t.Errorf("fingerprint %q, want %q", v.KeyFingerprint, policy.Keys[0].Fingerprint)
	}
	if !strings.HasPrefix(v.Signature, digest.Context().Name()+"@sha256:") {
		t.Errorf("signature %q is not a digest reference in %s", v.Signature, digest.Context())
	}
}

func TestVerifyUnsigned(t *testing.T) {
	reg := newRegistry(t)
	digest := reg.push(t, "catalogs/demo:v1")
	_, err := Verify(context.Background(), digest, policyOf(t, newKey(t)))
	wantVerifyError(t, err, ReasonUnsigned, "no signature found", ".sig")
}

func TestVerifyOtherKey(t *testing.T) {
	reg := newRegistry(t)
	digest := reg.push(t, "catalogs/demo:v1")
	sign(t, digest, newKey(t))
	_, err := Verify(context.Background(), digest, policyOf(t, newKey(t)))
	wantVerifyError(t, err, ReasonSignatureInvalid, "does not verify with any key")
}

// A valid signature of image A copied to the signature tag of image B.
func TestVerifySignatureOfAnotherDigest(t *testing.T) {
	reg := newRegistry(t)
	a := reg.push(t, "catalogs/demo:v1")
	b := reg.push(t, "catalogs/demo:v2")
	key := newKey(t)
	payload, sig := signedPayload(t, a, key)
	putSignatureImage(t, b, [][]byte{payload}, []string{sig})
	_, err := Verify(context.Background(), b, policyOf(t, key))
	wantVerifyError(t, err, ReasonSignatureInvalid, "signs digest "+a.DigestStr())
}

// The tag of a signed image moved to another image: the signature of the old digest does not
// make the new one trusted.
func TestVerifyRetaggedImage(t *testing.T) {
	reg := newRegistry(t)
	key := newKey(t)
	signed := reg.push(t, "catalogs/demo:v1")
	sign(t, signed, key)
	moved := reg.push(t, "catalogs/demo:v1")
	if _, err := Verify(context.Background(), signed, policyOf(t, key)); err != nil {
		t.Fatalf("the old digest: %v", err)
	}
	_, err := Verify(context.Background(), moved, policyOf(t, key))
	wantVerifyError(t, err, ReasonUnsigned)
}

func TestVerifyTruncatedOrMalformedSignature(t *testing.T) {
	reg := newRegistry(t)
	key := newKey(t)
	digest := reg.push(t, "catalogs/demo:v1")
	payload, sig := signedPayload(t, digest, key)
	raw, _ := base64.StdEncoding.DecodeString(sig)
	for name, tc := range map[string]struct {
		payload []byte
		sig     string
		want    string
	}{
		"truncated signature bytes": {payload, base64.StdEncoding.EncodeToString(raw[:len(raw)/2]), "does not verify"},
		"truncated base64":          {payload, sig[:len(sig)-5], "not valid base64"},
		"no annotation":             {payload, "", "no " + AnnotationSignature},
		"truncated payload":         {payload[:len(payload)-10], sig, "does not verify"},
		"not JSON, validly signed":  {[]byte("hello"), mustSign(t, key, []byte("hello")), "not valid simple-signing JSON"},
		"another type":              {[]byte(`{"critical":{"type":"x","image":{"docker-manifest-digest":"` + digest.DigestStr() + `"}}}`), "", ""},
	} {
		t.Run(name, func(t *testing.T) {
			s, want := tc.sig, tc.want
			if name == "another type" {
				s, want = mustSign(t, key, tc.payload), `critical.type "x"`
			}
			putSignatureImage(t, digest, [][]byte{tc.payload}, []string{s})
			_, err := Verify(context.Background(), digest, policyOf(t, key))
			wantVerifyError(t, err, ReasonSignatureInvalid, want)
		})
	}
}

// signedPayload is the payload signing digest and its signature by key.
func signedPayload(t testing.TB, digest name.Digest, key crypto.Signer) ([]byte, string) {
	t.Helper()
	payload, err := NewPayload(digest)
	if err != nil {
		t.Fatal(err)
	}
	return payload, mustSign(t, key, payload)
}

func mustSign(t testing.TB, key crypto.Signer, payload []byte) string {
	t.Helper()
	s, err := SignPayload(key, payload)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A registry serving a signature manifest without layers.
func TestVerifySignatureImageWithoutLayers(t *testing.T) {
	reg := newRegistry(t)
	digest := reg.push(t, "catalogs/demo:v1")
	putSignatureImage(t, digest, nil, nil)
	_, err := Verify(context.Background(), digest, policyOf(t, newKey(t)))
	wantVerifyError(t, err, ReasonSignatureInvalid, "has no layers")
}

// Key rotation: a policy with two keys accepts a signature by either; a signature image with a
// signature by a removed key and one by a trusted key is accepted (Sign appends).
func TestVerifyTwoKeysEitherAccepted(t *testing.T) {
	reg := newRegistry(t)
	oldKey, newK := newKey(t), newKey(t)
	policy := policyOf(t, oldKey, newK)
	for i, key := range []crypto.Signer{oldKey, newK} {
		digest := reg.push(t, "catalogs/demo:v1")
		sign(t, digest, key)
		v, err := Verify(context.Background(), digest, policy)
		if err != nil {
			t.Fatalf("key %d: %v", i, err)
		}
		if v.KeyFingerprint != policy.Keys[i].Fingerprint {
			t.Errorf("key %d: fingerprint %s, want %s", i, v.KeyFingerprint, policy.Keys[i].Fingerprint)
		}
	}

	digest := reg.push(t, "catalogs/demo:v2")
	retired := newKey(t)
	sign(t, digest, retired)
	sign(t, digest, newK)
	v, err := Verify(context.Background(), digest, policyOf(t, newK))
	if err != nil {
		t.Fatalf("appended signature: %v", err)
	}
	if v.KeyFingerprint != policyOf(t, newK).Keys[0].Fingerprint {
		t.Errorf("fingerprint %s", v.KeyFingerprint)
	}
}

// RSA and Ed25519 keys sign and verify too.
func TestVerifyRSAAndEd25519(t *testing.T) {
	reg := newRegistry(t)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for name, key := range map[string]crypto.Signer{"rsa": rsaKey, "ed25519": edKey} {
		digest := reg.push(t, "bundles/"+name+":v1")
		sign(t, digest, key)
		if _, err := Verify(context.Background(), digest, policyOf(t, key)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// A signature published as an OCI 1.1 referrer (artifact type ArtifactType, subject the image) is
// found on a registry with the referrers API.
func TestVerifyReferrer(t *testing.T) {
	reg := newRegistry(t, registry.WithReferrersSupport(true))
	digest := reg.push(t, "catalogs/demo:v1")
	key := newKey(t)
	img, err := SignatureImage(digest, key)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(digest)
	if err != nil {
		t.Fatal(err)
	}
	img = mutate.Subject(mutate.ConfigMediaType(img, ArtifactType), *desc).(v1.Image)
	ref := reg.write(t, img, "catalogs/demo:referrer")
	v, err := Verify(context.Background(), digest, policyOf(t, key))
	if err != nil {
		t.Fatal(err)
	}
	if v.Signature != ref.String() {
		t.Errorf("signature %s, want %s", v.Signature, ref)
	}
}

func TestParseKeys(t *testing.T) {
	if _, err := ParsePublicKeys([]byte("not pem"), "x"); err == nil || !strings.Contains(err.Error(), "no PEM-encoded public key") {
		t.Errorf("got %v", err)
	}
	key := newKey(t)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	if _, err := ParsePublicKeys(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), "x"); err == nil {
		t.Error("a private key was taken for a public key")
	}
	if _, err := ParsePrivateKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})); err != nil {
		t.Errorf("PKCS#8: %v", err)
	}
	ec, _ := x509.MarshalECPrivateKey(key)
	if _, err := ParsePrivateKey(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: ec})); err != nil {
		t.Errorf("SEC 1: %v", err)
	}
	if _, err := ParsePrivateKey(pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED SIGSTORE PRIVATE KEY", Bytes: []byte("x")})); err == nil || !strings.Contains(err.Error(), "encrypted") {
		t.Errorf("encrypted key: %v", err)
	}
}

// BenchmarkVerify is the cost verification adds to each unpack of a signed image: fetching the
// signature image (manifest, config, one payload) from a registry on loopback and one ECDSA P-256
// verification.
func BenchmarkVerify(b *testing.B) {
	reg := newRegistry(b)
	digest := reg.push(b, "catalogs/demo:v1")
	key := newKey(b)
	sign(b, digest, key)
	policy := policyOf(b, key)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Verify(context.Background(), digest, policy); err != nil {
			b.Fatal(err)
		}
	}
}
