package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/signature"
	"github.com/olmv1/olmv1/rukpak/pkg/signature/signaturetest"
)

const (
	keylessIssuer  = "https://token.actions.example.com"
	keylessSubject = "https://github.com/org/catalog/.github/workflows/release.yaml@refs/heads/main"
)

// trustedRootConfigMap creates a ConfigMap holding ca's trusted_root.json.
func trustedRootConfigMap(t *testing.T, name string, ca *signaturetest.Authority) {
	t.Helper()
	data, err := ca.TrustedRootJSON()
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: signatureNamespace},
		Data: map[string]string{rukpakv1alpha1.DefaultTrustedRootKey: string(data)}}
	if err := suite.Client.Create(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = suite.Client.Delete(context.Background(), cm) })
}

func (e *signatureEnv) signKeyless(t *testing.T, repoTag string, s signature.KeylessSigner) {
	t.Helper()
	if _, err := signature.SignKeyless(t.Context(), e.resolve(t, repoTag), s); err != nil {
		t.Fatal(err)
	}
}

func keylessSigner(t *testing.T, ca *signaturetest.Authority, subject string) signature.KeylessSigner {
	t.Helper()
	s, err := ca.Signer(signaturetest.Identity{Issuer: keylessIssuer, Subject: subject})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A Catalog with a keyless policy (the trusted root in a ConfigMap, made in the test): the image
// signed by the expected identity is served and the identity recorded; the tag moved to an image
// signed by another identity, by a CA the root does not hold, or with a forged transparency log
// timestamp is refused with SignatureInvalid saying what to fix, while the verified content stays
// served; the last one signed again by the expected identity is served.
func TestCatalogKeylessPolicy(t *testing.T) {
	e := startSignatureEnv(t)
	ca, err := signaturetest.NewAuthority("test")
	if err != nil {
		t.Fatal(err)
	}
	other, err := signaturetest.NewAuthority("other")
	if err != nil {
		t.Fatal(err)
	}
	trustedRootConfigMap(t, "sigstore-root", ca)

	const name, repoTag = "keyless", "catalogs/keyless:v1"
	pushCatalogImage(t, e.reg, "1.0.0", repoTag)
	signer := keylessSigner(t, ca, keylessSubject)
	e.signKeyless(t, repoTag, signer)
	createSignatureCatalog(t, name, rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{
		Ref: e.reg.Ref(repoTag), PollInterval: &metav1.Duration{Duration: time.Second},
		Verify: &rukpakv1alpha1.ImageVerification{Provider: rukpakv1alpha1.VerificationProviderCosign, Cosign: &rukpakv1alpha1.CosignVerification{
			Keyless: &rukpakv1alpha1.KeylessVerification{Issuer: keylessIssuer, SubjectRegExp: `https://github\.com/org/catalog/.*@refs/heads/main`,
				TrustedRootRef: rukpakv1alpha1.TrustedRootReference{Name: "sigstore-root"}}}},
	}})
	pollUntil(t, 30*time.Second, "v1 is served", func() (bool, string) {
		c := getCatalog(t, name)
		return meta.IsStatusConditionTrue(c.Status.Conditions, catalogdv1alpha1.TypeServing) && c.Status.ResolvedSource != nil, fmt.Sprintf("%+v", c.Status.Conditions)
	})
	good := getCatalog(t, name).Status
	v := good.ResolvedSource.Image.Verified
	if v == nil || v.Identity == nil || v.Identity.Issuer != keylessIssuer || v.Identity.Subject != keylessSubject || v.KeyFingerprint != "" ||
		v.Identity.IntegratedTime == nil || !v.Identity.IntegratedTime.Time.Equal(signer.IntegratedTime) {
		t.Fatalf("resolvedSource.image.verified = %+v, want the identity %s %s integrated at %s", v, keylessIssuer, keylessSubject, signer.IntegratedTime)
	}
	if !strings.Contains(e.served(t, name), "foo.v1.0.0") {
		t.Fatal("v1 is not served")
	}

	// Signed by another identity of the same CA.
	pushCatalogImage(t, e.reg, "2.0.0", repoTag)
	e.signKeyless(t, repoTag, keylessSigner(t, ca, "https://github.com/mallory/catalog/.github/workflows/release.yaml@refs/heads/main"))
	c := waitUnpacked(t, name, catalogdv1alpha1.ReasonSignatureInvalid, e.resolve(t, repoTag).DigestStr())
	wantMessage(t, c, "github.com/mallory/catalog", "keyless.subject or subjectRegExp", `ConfigMap "sigstore-root"`)
	e.assertStillServingV1(t, name, good)

	// Signed by the expected identity, but by a CA the trusted root does not hold.
	pushCatalogImage(t, e.reg, "3.0.0", repoTag)
	untrusted := keylessSigner(t, other, keylessSubject)
	untrusted.LogKey = ca.LogKey
	e.signKeyless(t, repoTag, untrusted)
	c = waitUnpacked(t, name, catalogdv1alpha1.ReasonSignatureInvalid, e.resolve(t, repoTag).DigestStr())
	wantMessage(t, c, "does not chain to a CA of the trusted root", "trustedRootRef")
	e.assertStillServingV1(t, name, good)

	// A transparency log entry whose integrated time was moved after the log signed it.
	pushCatalogImage(t, e.reg, "4.0.0", repoTag)
	digest := e.resolve(t, repoTag)
	payload, err := signature.NewPayload(digest)
	if err != nil {
		t.Fatal(err)
	}
	ann, err := keylessSigner(t, ca, keylessSubject).Annotations(payload)
	if err != nil {
		t.Fatal(err)
	}
	var b signature.RekorBundle
	if err := json.Unmarshal([]byte(ann[signature.AnnotationBundle]), &b); err != nil {
		t.Fatal(err)
	}
	b.Payload.IntegratedTime -= 3600
	forged, _ := json.Marshal(b)
	ann[signature.AnnotationBundle] = string(forged)
	pushSignatureLayer(t, digest, payload, ann)
	c = waitUnpacked(t, name, catalogdv1alpha1.ReasonSignatureInvalid, digest.DigestStr())
	wantMessage(t, c, "signed entry timestamp does not verify")
	e.assertStillServingV1(t, name, good)

	// The same image signed again by the expected identity (a second layer): served.
	e.signKeyless(t, repoTag, keylessSigner(t, ca, keylessSubject))
	waitUnpacked(t, name, catalogdv1alpha1.ReasonUnpackSucceeded, "")
	if !strings.Contains(e.served(t, name), "foo.v4.0.0") {
		t.Error("the signed v4 is not served")
	}
}

// pushSignatureLayer pushes a signature image of digest with one layer, in place of the one there.
func pushSignatureLayer(t testing.TB, digest name.Digest, payload []byte, annotations map[string]string) {
	t.Helper()
	if err := signaturetest.ReplaceSignature(digest, payload, annotations); err != nil {
		t.Fatal(err)
	}
}

func wantMessage(t *testing.T, c *catalogdv1alpha1.Catalog, fragments ...string) {
	t.Helper()
	u := meta.FindStatusCondition(c.Status.Conditions, catalogdv1alpha1.TypeUnpacked)
	for _, f := range fragments {
		if !strings.Contains(u.Message, f) {
			t.Errorf("Unpacked message %q does not say %q", u.Message, f)
		}
	}
}
