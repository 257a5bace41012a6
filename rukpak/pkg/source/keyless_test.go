package source

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/signature"
	"github.com/olmv1/olmv1/rukpak/pkg/signature/signaturetest"
	"github.com/olmv1/olmv1/rukpak/pkg/source/sourcetest"
)

const (
	keylessIssuer  = "https://issuer.example.com"
	keylessSubject = "release@example.com"
)

func keylessSrc(ref string, k rukpakv1alpha1.KeylessVerification) rukpakv1alpha1.Source {
	src := imageSrc(ref)
	src.Image.Verify = &rukpakv1alpha1.ImageVerification{
		Provider: rukpakv1alpha1.VerificationProviderCosign,
		Cosign:   &rukpakv1alpha1.CosignVerification{Keyless: &k},
	}
	return src
}

func rootConfigMap(t testing.TB, name string, ca *signaturetest.Authority) *corev1.ConfigMap {
	t.Helper()
	data, err := ca.TrustedRootJSON()
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace}, Data: map[string]string{rukpakv1alpha1.DefaultTrustedRootKey: string(data)}}
}

// A keyless signature of the test authority is accepted and its identity recorded; another
// identity, a root without the authority, a missing ConfigMap and a bad regular expression are
// refused, each with its reason.
func TestImageVerifyKeyless(t *testing.T) {
	reg := sourcetest.NewRegistry(t)
	ca, err := signaturetest.NewAuthority("test")
	if err != nil {
		t.Fatal(err)
	}
	other, err := signaturetest.NewAuthority("other")
	if err != nil {
		t.Fatal(err)
	}
	digest := reg.Push(t, catalogImage(t, "catalog"), "catalogs/demo:v1")
	signer, err := ca.Signer(signaturetest.Identity{Issuer: keylessIssuer, Subject: keylessSubject})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := signature.SignKeyless(ctx(t), digest, signer); err != nil {
		t.Fatal(err)
	}
	rootSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "root-secret", Namespace: testNamespace}, Data: map[string][]byte{}}
	rootSecret.Data["root.json"], _ = ca.TrustedRootJSON()
	broken := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "broken", Namespace: testNamespace}, Data: map[string]string{"trusted_root.json": "{"}}
	u := newTestUnpacker(t, fakeClient(rootConfigMap(t, "sigstore-root", ca), rootConfigMap(t, "other-root", other), rootSecret, broken))
	ref := reg.Ref("catalogs/demo:v1")
	policy := rukpakv1alpha1.KeylessVerification{Issuer: keylessIssuer, Subject: keylessSubject, TrustedRootRef: rukpakv1alpha1.TrustedRootReference{Name: "sigstore-root"}}

	res, err := u.Unpack(ctx(t), "catalog/demo", keylessSrc(ref, policy), catalogOpts)
	if err != nil {
		t.Fatal(err)
	}
	v := res.ResolvedSource.Image.Verified
	if v == nil || v.KeyFingerprint != "" || v.Identity == nil || v.Identity.Issuer != keylessIssuer || v.Identity.Subject != keylessSubject ||
		v.Identity.IntegratedTime == nil || !v.Identity.IntegratedTime.Time.Equal(signer.IntegratedTime) {
		t.Fatalf("verified = %+v, want the identity %s %s", v, keylessIssuer, keylessSubject)
	}

	fromSecret := policy
	fromSecret.Subject, fromSecret.SubjectRegExp = "", `.*@example\.com`
	fromSecret.TrustedRootRef = rukpakv1alpha1.TrustedRootReference{Kind: rukpakv1alpha1.TrustedRootKindSecret, Name: "root-secret", Key: "root.json"}
	if _, err := u.Unpack(ctx(t), "catalog/demo", keylessSrc(ref, fromSecret), catalogOpts); err != nil {
		t.Errorf("trusted root in a Secret, subjectRegExp: %v", err)
	}

	otherSubject := policy
	otherSubject.Subject = "someone@example.com"
	_, err = u.Unpack(ctx(t), "catalog/demo", keylessSrc(ref, otherSubject), catalogOpts)
	wantPolicyError(t, err, KindSignatureInvalid, ReasonSignatureInvalid, digest.DigestStr(), `issued to "release@example.com", not "someone@example.com"`, `ConfigMap "sigstore-root"`)
	if IsRetryable(err) {
		t.Error("SignatureInvalid is retryable: a hot loop")
	}

	otherRoot := policy
	otherRoot.TrustedRootRef.Name = "other-root"
	_, err = u.Unpack(ctx(t), "catalog/demo", keylessSrc(ref, otherRoot), catalogOpts)
	wantPolicyError(t, err, KindSignatureInvalid, ReasonSignatureInvalid, "not in the trusted root")

	missing := policy
	missing.TrustedRootRef.Name = "nope"
	if _, err = u.Unpack(ctx(t), "catalog/demo", keylessSrc(ref, missing), catalogOpts); err == nil || !IsRetryable(err) || ReasonOf(err) == ReasonSignatureInvalid {
		t.Errorf("a missing trusted root: %v (retryable %v), want a retryable UnpackFailed", err, IsRetryable(err))
	}
	bad := policy
	bad.TrustedRootRef.Name = "broken"
	if _, err = u.Unpack(ctx(t), "catalog/demo", keylessSrc(ref, bad), catalogOpts); err == nil || !IsRetryable(err) {
		t.Errorf("a broken trusted root: %v, want a retryable error", err)
	}
	badRE := policy
	badRE.Subject, badRE.SubjectRegExp = "", "("
	if _, err = u.Unpack(ctx(t), "catalog/demo", keylessSrc(ref, badRE), catalogOpts); err == nil || IsRetryable(err) {
		t.Errorf("an invalid subjectRegExp: %v, want a terminal error", err)
	}
}
