package controller

import (
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/signature"
	"github.com/olmv1/olmv1/rukpak/pkg/signature/signaturetest"
	"github.com/olmv1/olmv1/rukpak/pkg/source/sourcetest"
)

// A BundleDeployment with a keyless policy whose trusted root is in a Secret: the bundle signed by
// the expected identity (made with a test CA and log key) is installed with the identity recorded;
// moved to a bundle signed by another identity it is refused with SignatureInvalid naming the
// identity found, and the installed revision stays.
func TestBundleKeylessPolicy(t *testing.T) {
	const name, issuer, subject = "keyless-bundle", "https://issuer.example.com", "release@example.com"
	reg := sourcetest.NewRegistry(t)
	ca, err := signaturetest.NewAuthority("test")
	if err != nil {
		t.Fatal(err)
	}
	root, err := ca.TrustedRootJSON()
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sigstore-root", Namespace: systemNamespace}, Data: map[string][]byte{"root.json": root}}
	if err := k8s.Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(t.Context(), secret) })

	sign := func(repoTag, who string) {
		s, err := ca.Signer(signaturetest.Identity{Issuer: issuer, Subject: who})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := signature.SignKeyless(t.Context(), headDigest(t, reg.Ref(repoTag)), s); err != nil {
			t.Fatal(err)
		}
	}
	pushPlainBundle(t, reg, "bundles/keyless:v1", nil, map[string]string{"a.yaml": configMap("a", "1")})
	sign("bundles/keyless:v1", subject)
	pushPlainBundle(t, reg, "bundles/keyless:mallory", nil, map[string]string{"a.yaml": configMap("a", "evil")})
	sign("bundles/keyless:mallory", "mallory@example.com")

	newBDFrom(t, name, rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{
		Ref: reg.Ref("bundles/keyless:v1"),
		Verify: &rukpakv1alpha1.ImageVerification{Provider: rukpakv1alpha1.VerificationProviderCosign, Cosign: &rukpakv1alpha1.CosignVerification{
			Keyless: &rukpakv1alpha1.KeylessVerification{Issuer: issuer, Subject: subject,
				TrustedRootRef: rukpakv1alpha1.TrustedRootReference{Kind: rukpakv1alpha1.TrustedRootKindSecret, Name: "sigstore-root", Key: "root.json"}}}},
	}})
	bd := waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)
	if v := bd.Status.ResolvedSource.Image.Verified; v == nil || v.Identity == nil || v.Identity.Issuer != issuer || v.Identity.Subject != subject {
		t.Fatalf("resolvedSource.image.verified = %+v, want the identity %s %s", v, issuer, subject)
	}

	setRef(t, name, reg.Ref("bundles/keyless:mallory"))
	bd = waitCondition(t, name, rukpakv1alpha1.TypeUnpacked, metav1.ConditionFalse, rukpakv1alpha1.ReasonSignatureInvalid)
	msg := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeUnpacked).Message
	for _, want := range []string{reg.Ref("bundles/keyless:mallory"), `issued to "mallory@example.com"`, `Secret "sigstore-root" key "root.json"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("Unpacked message %q does not say %q", msg, want)
		}
	}
	if bd.Status.InstalledRevision != 1 {
		t.Errorf("installedRevision %d, want 1 (nothing of the refused image installed)", bd.Status.InstalledRevision)
	}
	if cm, err := getCM(t, name, "a"); err != nil || cm.Data["value"] != "1" {
		t.Errorf("ConfigMap a = %v, %v; want the signed bundle's value 1", cm.Data, err)
	}
}

// headDigest is the digest reference ref points to now.
func headDigest(t *testing.T, ref string) name.Digest {
	t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(tag)
	if err != nil {
		t.Fatal(err)
	}
	return tag.Context().Digest(desc.Digest.String())
}
