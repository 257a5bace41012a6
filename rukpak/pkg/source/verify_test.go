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
	for name, src := range map[string]rukpakv1alpha1.Source{
		"no-policy": imageSrc(reg.Ref("catalogs/demo:v1")),
		"key":       verifiedSrc(reg.Ref("catalogs/demo:v1"), "catalog-keys"),
	} {
		b.Run(name, func(b *testing.B) {
			u := newTestUnpacker(b, fakeClient(keySecret(b, "catalog-keys", key)))
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
