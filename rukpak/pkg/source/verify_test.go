package source

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/signature"
	"github.com/olmv1/olmv1/rukpak/pkg/signature/signaturetest"
	"github.com/olmv1/olmv1/rukpak/pkg/source/sourcetest"
)

func verifiedSrc(ref, secret string) rukpakv1alpha1.Source {
	src := imageSrc(ref)
	src.Image.Verify = &rukpakv1alpha1.ImageVerification{
		Provider: rukpakv1alpha1.VerificationProviderCosign,
		Cosign:   &rukpakv1alpha1.CosignVerification{SecretRef: &rukpakv1alpha1.SecretReference{Name: secret}},
	}
	return src
}

// keySecret is a Secret holding the public halves of keys, one data key each.
func keySecret(t testing.TB, name string, keys ...*ecdsa.PrivateKey) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace}, Data: map[string][]byte{}}
	for i, k := range keys {
		der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		s.Data[[]string{"cosign.pub", "next.pub", "third.pub"}[i]] = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	}
	return s
}

func ecKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func wantPolicyError(t *testing.T, err error, kind Kind, reason string, fragments ...string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want a %s error", err, kind)
	}
	if e.Kind != kind || e.Reason != reason || ReasonOf(err) != reason {
		t.Fatalf("got kind %s reason %s, want %s %s: %v", e.Kind, e.Reason, kind, reason, err)
	}
	t.Logf("%s (retryable=%v): %s", e.Reason, e.Retryable, e.Message)
	for _, f := range fragments {
		if !strings.Contains(e.Message, f) {
			t.Errorf("message %q does not contain %q", e.Message, f)
		}
	}
}

// A signed image is unpacked and its signature recorded; the verification time stays the same
// while the same digest is verified with the same key; the tag moved to an unsigned image is
// refused with Unsigned, naming the image, the digest and the Secret.
func TestImageVerify(t *testing.T) {
	reg := sourcetest.NewRegistry(t)
	key := ecKey(t)
	digest := reg.Push(t, catalogImage(t, "catalog"), "catalogs/demo:v1")
	if _, err := signature.Sign(ctx(t), digest, key); err != nil {
		t.Fatal(err)
	}
	u := newTestUnpacker(t, fakeClient(keySecret(t, "catalog-keys", key)))
	src := verifiedSrc(reg.Ref("catalogs/demo:v1"), "catalog-keys")

	res, err := u.Unpack(ctx(t), "catalog/demo", src, catalogOpts)
	if err != nil {
		t.Fatal(err)
	}
	v := res.ResolvedSource.Image.Verified
	fp, _ := signature.Fingerprint(&key.PublicKey)
	if v == nil || v.Provider != rukpakv1alpha1.VerificationProviderCosign || v.KeyFingerprint != fp || v.Time.IsZero() || v.Signature == "" {
		t.Fatalf("verified = %+v, want Cosign with key %s", v, fp)
	}
	wantTree(t, res.Dir, "catalog.json="+readFile(t, "testdata/catalog/catalog.json"))

	prev := res.ResolvedSource.DeepCopy()
	prev.Image.Verified.Time = metav1.Unix(1000, 0)
	again, err := u.Unpack(ctx(t), "catalog/demo", src, Options{ImageDir: "configs", Namespace: testNamespace, Previous: prev})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Unchanged || !again.ResolvedSource.Image.Verified.Time.Equal(&prev.Image.Verified.Time) {
		t.Errorf("again: Unchanged=%v verified at %v, want true and the previous time", again.Unchanged, again.ResolvedSource.Image.Verified.Time)
	}

	moved := reg.Push(t, catalogImage(t, "catalog-v2"), "catalogs/demo:v1")
	_, err = u.Unpack(ctx(t), "catalog/demo", src, catalogOpts)
	wantPolicyError(t, err, KindUnsigned, ReasonUnsigned, `image "`+reg.Ref("catalogs/demo:v1")+`"`, moved.DigestStr(), `Secret "catalog-keys"`, verifyField)
	if !IsRetryable(err) {
		t.Error("Unsigned is not retryable: a signature pushed after the image would never be seen")
	}
}

// Signed with a key the policy does not hold: SignatureInvalid, not retried.
func TestImageVerifyOtherKey(t *testing.T) {
	reg := sourcetest.NewRegistry(t)
	digest := reg.Push(t, catalogImage(t, "catalog"), "catalogs/demo:v1")
	if _, err := signature.Sign(ctx(t), digest, ecKey(t)); err != nil {
		t.Fatal(err)
	}
	u := newTestUnpacker(t, fakeClient(keySecret(t, "catalog-keys", ecKey(t), ecKey(t))))
	_, err := u.Unpack(ctx(t), "catalog/demo", verifiedSrc(reg.Ref("catalogs/demo:v1"), "catalog-keys"), catalogOpts)
	wantPolicyError(t, err, KindSignatureInvalid, ReasonSignatureInvalid, digest.DigestStr(), "2 key(s)")
	if IsRetryable(err) {
		t.Error("SignatureInvalid is retryable")
	}
}

// Content cached by digest without a policy is not served from the cache once a policy requires a
// signature it does not have.
func TestImageVerifyDigestNotServedFromCache(t *testing.T) {
	reg := sourcetest.NewRegistry(t)
	digest := reg.Push(t, catalogImage(t, "catalog"), "catalogs/demo:v1")
	u := newTestUnpacker(t, fakeClient(keySecret(t, "catalog-keys", ecKey(t))))
	if _, err := u.Unpack(ctx(t), "catalog/demo", imageSrc(digest.String()), catalogOpts); err != nil {
		t.Fatal(err)
	}
	_, err := u.Unpack(ctx(t), "catalog/demo", verifiedSrc(digest.String(), "catalog-keys"), catalogOpts)
	wantPolicyError(t, err, KindUnsigned, ReasonUnsigned, digest.DigestStr())
}

// A policy Secret that is missing or holds no key says what to fix, and is retried.
func TestImageVerifyBadSecret(t *testing.T) {
	reg := sourcetest.NewRegistry(t)
	reg.Push(t, catalogImage(t, "catalog"), "catalogs/demo:v1")
	empty := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "empty", Namespace: testNamespace}}
	garbage := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "garbage", Namespace: testNamespace}, Data: map[string][]byte{"cosign.pub": []byte("nope")}}
	u := newTestUnpacker(t, fakeClient(empty, garbage))
	for secret, want := range map[string]string{"missing": `Secret "missing" not found`, "empty": "holds no public key", "garbage": "no PEM-encoded public key"} {
		_, err := u.Unpack(ctx(t), "catalog/demo", verifiedSrc(reg.Ref("catalogs/demo:v1"), secret), catalogOpts)
		if err == nil || !strings.Contains(err.Error(), want) || !IsRetryable(err) || ReasonOf(err) != ReasonUnpackFailed {
			t.Errorf("Secret %s: got %v (retryable %v), want a retryable UnpackFailed error containing %q", secret, err, IsRetryable(err), want)
		}
	}
}

// BenchmarkImageUnpackVerify is the cost of one Unpack of a tag whose content is cached (the
// common case: a poll that finds the tag unchanged), without and with a signature policy. The
// difference is what verification adds to each unpack.
func BenchmarkImageUnpackVerify(b *testing.B) {
	reg := sourcetest.NewRegistry(b)
	key := ecKey(b)
	digest := reg.Push(b, catalogImage(b, "catalog"), "catalogs/demo:v1")
	if _, err := signature.Sign(ctx(b), digest, key); err != nil {
		b.Fatal(err)
	}
	ca, err := signaturetest.NewAuthority("bench")
	if err != nil {
		b.Fatal(err)
	}
	signer, err := ca.Signer(signaturetest.Identity{Issuer: keylessIssuer, Subject: keylessSubject})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := signature.SignKeyless(ctx(b), reg.Push(b, catalogImage(b, "catalog"), "catalogs/keyless:v1"), signer); err != nil {
		b.Fatal(err)
	}
	for name, src := range map[string]rukpakv1alpha1.Source{
		"no-policy": imageSrc(reg.Ref("catalogs/demo:v1")),
		"key":       verifiedSrc(reg.Ref("catalogs/demo:v1"), "catalog-keys"),
		"keyless": keylessSrc(reg.Ref("catalogs/keyless:v1"), rukpakv1alpha1.KeylessVerification{Issuer: keylessIssuer, Subject: keylessSubject,
			TrustedRootRef: rukpakv1alpha1.TrustedRootReference{Name: "sigstore-root"}}),
	} {
		b.Run(name, func(b *testing.B) {
			u := newTestUnpacker(b, fakeClient(keySecret(b, "catalog-keys", key), rootConfigMap(b, "sigstore-root", ca)))
			if _, err := u.Unpack(ctx(b), "catalog/demo", src, catalogOpts); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := u.Unpack(ctx(b), "catalog/demo", src, catalogOpts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// requireSignatures is the Config of --require-image-signatures=secret.
func requireSignatures(secret string) func(*Config) {
	return func(c *Config) { c.RequireSignaturesSecret = secret }
}

// With the cluster-wide default, an image source without verify is refused when unsigned (also by
// digest, when its content is cached from before the default) and accepted when signed by a key of
// the default Secret.
func TestRequireSignaturesImageWithoutVerify(t *testing.T) {
	reg := sourcetest.NewRegistry(t)
	key := ecKey(t)
	unsigned := reg.Push(t, catalogImage(t, "catalog"), "catalogs/demo:v1")
	objs := fakeClient(keySecret(t, "cluster-keys", key))

	if _, err := newTestUnpacker(t, objs).Unpack(ctx(t), "catalog/digest", imageSrc(unsigned.String()), catalogOpts); err != nil {
		t.Fatal(err)
	}
	u := newTestUnpacker(t, objs, requireSignatures("cluster-keys"))
	for _, ref := range []string{reg.Ref("catalogs/demo:v1"), unsigned.String()} {
		_, err := u.Unpack(ctx(t), "catalog/demo", imageSrc(ref), catalogOpts)
		wantPolicyError(t, err, KindUnsigned, ReasonUnsigned, unsigned.DigestStr(), `Secret "cluster-keys"`, "--require-image-signatures=cluster-keys")
	}

	signed := reg.Push(t, catalogImage(t, "catalog-v2"), "catalogs/demo:v2")
	if _, err := signature.Sign(ctx(t), signed, key); err != nil {
		t.Fatal(err)
	}
	res, err := u.Unpack(ctx(t), "catalog/demo", imageSrc(reg.Ref("catalogs/demo:v2")), catalogOpts)
	if err != nil {
		t.Fatal(err)
	}
	fp, _ := signature.Fingerprint(&key.PublicKey)
	if v := res.ResolvedSource.Image.Verified; v == nil || v.KeyFingerprint != fp {
		t.Fatalf("verified = %+v, want the default Secret's key %s", v, fp)
	}

	other := reg.Push(t, catalogImage(t, "catalog"), "catalogs/other:v1")
	if _, err := signature.Sign(ctx(t), other, ecKey(t)); err != nil {
		t.Fatal(err)
	}
	_, err = u.Unpack(ctx(t), "catalog/other", imageSrc(reg.Ref("catalogs/other:v1")), catalogOpts)
	wantPolicyError(t, err, KindSignatureInvalid, ReasonSignatureInvalid, other.DigestStr(), "--require-image-signatures=cluster-keys")
}

// An image source with its own verify must satisfy its own policy and the default: a Secret of the
// user's own cannot weaken the default. Naming the default's Secret itself is checked once.
func TestRequireSignaturesImageWithOwnVerify(t *testing.T) {
	reg := sourcetest.NewRegistry(t)
	clusterKey, ownKey := ecKey(t), ecKey(t)
	u := newTestUnpacker(t, fakeClient(keySecret(t, "cluster-keys", clusterKey), keySecret(t, "own-keys", ownKey)), requireSignatures("cluster-keys"))

	ownOnly := reg.Push(t, catalogImage(t, "catalog"), "catalogs/demo:own")
	if _, err := signature.Sign(ctx(t), ownOnly, ownKey); err != nil {
		t.Fatal(err)
	}
	_, err := u.Unpack(ctx(t), "catalog/demo", verifiedSrc(reg.Ref("catalogs/demo:own"), "own-keys"), catalogOpts)
	wantPolicyError(t, err, KindSignatureInvalid, ReasonSignatureInvalid, ownOnly.DigestStr(), "--require-image-signatures=cluster-keys")

	clusterOnly := reg.Push(t, catalogImage(t, "catalog-v2"), "catalogs/demo:cluster")
	if _, err := signature.Sign(ctx(t), clusterOnly, clusterKey); err != nil {
		t.Fatal(err)
	}
	_, err = u.Unpack(ctx(t), "catalog/demo", verifiedSrc(reg.Ref("catalogs/demo:cluster"), "own-keys"), catalogOpts)
	wantPolicyError(t, err, KindSignatureInvalid, ReasonSignatureInvalid, clusterOnly.DigestStr(), `Secret "own-keys"`, verifyField)

	res, err := u.Unpack(ctx(t), "catalog/demo", verifiedSrc(reg.Ref("catalogs/demo:cluster"), "cluster-keys"), catalogOpts)
	if err != nil {
		t.Fatalf("own verify naming the default's Secret: %v", err)
	}
	clusterFP, _ := signature.Fingerprint(&clusterKey.PublicKey)
	if v := res.ResolvedSource.Image.Verified; v == nil || v.KeyFingerprint != clusterFP {
		t.Fatalf("verified = %+v, want key %s", v, clusterFP)
	}

	if _, err := signature.Sign(ctx(t), clusterOnly, ownKey); err != nil {
		t.Fatal(err)
	}
	res, err = u.Unpack(ctx(t), "catalog/demo", verifiedSrc(reg.Ref("catalogs/demo:cluster"), "own-keys"), catalogOpts)
	if err != nil {
		t.Fatalf("signed by both keys: %v", err)
	}
	ownFP, _ := signature.Fingerprint(&ownKey.PublicKey)
	if v := res.ResolvedSource.Image.Verified; v == nil || v.KeyFingerprint != ownFP {
		t.Fatalf("verified = %+v, want the source's own key %s (status records the spec's policy)", v, ownFP)
	}
}

// With the default, sources that cannot carry a signature are refused with Unsigned, naming the
// flag, before anything is fetched; not retried.
func TestRequireSignaturesNonImageRefused(t *testing.T) {
	u := newTestUnpacker(t, fakeClient(), requireSignatures("cluster-keys"))
	for _, src := range []rukpakv1alpha1.Source{
		gitSrc("https://git.invalid/catalog.git", rukpakv1alpha1.GitRef{Branch: "main"}, ""),
		httpSrc("https://http.invalid/catalog.tar.gz"),
		cmSrc(cmEntry("catalog", "")),
	} {
		_, err := u.Unpack(ctx(t), "catalog/demo", src, catalogOpts)
		wantPolicyError(t, err, KindUnsigned, ReasonUnsigned, "the cluster requires signed images (--require-image-signatures=cluster-keys)",
			string(src.Type)+" sources cannot be verified", `Secret "cluster-keys" in namespace "olmv1-system"`)
		if IsRetryable(err) {
			t.Errorf("%s: refusing a non-image source is retryable", src.Type)
		}
	}
}

// A default Secret that is missing or holds no key fails every image unpack, naming the flag,
// and is retried (creating the Secret fixes it).
func TestRequireSignaturesBadSecret(t *testing.T) {
	reg := sourcetest.NewRegistry(t)
	reg.Push(t, catalogImage(t, "catalog"), "catalogs/demo:v1")
	empty := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "empty", Namespace: testNamespace}}
	for secret, want := range map[string]string{"missing": `Secret "missing" not found`, "empty": "holds no public key"} {
		u := newTestUnpacker(t, fakeClient(empty), requireSignatures(secret))
		_, err := u.Unpack(ctx(t), "catalog/demo", imageSrc(reg.Ref("catalogs/demo:v1")), catalogOpts)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--require-image-signatures") ||
			!IsRetryable(err) || ReasonOf(err) != ReasonUnpackFailed {
			t.Errorf("default Secret %s: got %v (retryable %v), want a retryable UnpackFailed error naming the flag and containing %q", secret, err, IsRetryable(err), want)
		}
	}
}
