package controller

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
	"github.com/olmv1/olmv1/rukpak/pkg/signature"
	"github.com/olmv1/olmv1/rukpak/pkg/source/sourcetest"
)

// pushPlainBundle pushes a plain bundle image whose manifests/ holds files to reg as repoTag and,
// with a key, signs it.
func pushPlainBundle(t *testing.T, reg *sourcetest.Registry, repoTag string, key *ecdsa.PrivateKey, files map[string]string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "manifests"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, "manifests", name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	img, err := imagebuild.PlainBundleImage(dir)
	if err != nil {
		t.Fatal(err)
	}
	digest := reg.Push(t, img, repoTag)
	if key != nil {
		if _, err := signature.Sign(t.Context(), digest, key); err != nil {
			t.Fatal(err)
		}
	}
}

// A BundleDeployment whose image source requires a signature by the key of a Secret: the signed
// bundle is installed and its signature recorded; moved to an unsigned image it is refused with
// Unpacked=False Unsigned and the installed revision stays; moved to an image signed by another
// key, SignatureInvalid.
func TestBundleSignaturePolicy(t *testing.T) {
	const name = "signed-bundle"
	reg := sourcetest.NewRegistry(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "bundle-keys", Namespace: systemNamespace},
		Data: map[string][]byte{"cosign.pub": pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})}}
	if err := k8s.Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(t.Context(), secret) })

	// Three different contents, so three digests: a signature is for one digest.
	pushPlainBundle(t, reg, "bundles/signed:v1", key, map[string]string{"a.yaml": configMap("a", "1")})
	pushPlainBundle(t, reg, "bundles/signed:unsigned", nil, map[string]string{"a.yaml": configMap("a", "evil")})
	pushPlainBundle(t, reg, "bundles/signed:stranger", stranger, map[string]string{"a.yaml": configMap("a", "other")})

	newBDFrom(t, name, rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{
		Ref: reg.Ref("bundles/signed:v1"),
		Verify: &rukpakv1alpha1.ImageVerification{Provider: rukpakv1alpha1.VerificationProviderCosign,
			Cosign: &rukpakv1alpha1.CosignVerification{SecretRef: &rukpakv1alpha1.SecretReference{Name: "bundle-keys"}}},
	}})
	bd := waitCondition(t, name, rukpakv1alpha1.TypeInstalled, metav1.ConditionTrue, rukpakv1alpha1.ReasonInstallationSucceeded)
	fp, _ := signature.Fingerprint(&key.PublicKey)
	if v := bd.Status.ResolvedSource.Image.Verified; v == nil || v.KeyFingerprint != fp {
		t.Fatalf("resolvedSource.image.verified = %+v, want key %s", v, fp)
	}

	for ref, reason := range map[string]string{"bundles/signed:unsigned": rukpakv1alpha1.ReasonUnsigned, "bundles/signed:stranger": rukpakv1alpha1.ReasonSignatureInvalid} {
		setRef(t, name, reg.Ref(ref))
		bd = waitCondition(t, name, rukpakv1alpha1.TypeUnpacked, metav1.ConditionFalse, reason)
		msg := meta.FindStatusCondition(bd.Status.Conditions, rukpakv1alpha1.TypeUnpacked).Message
		for _, want := range []string{reg.Ref(ref), "sha256:", `Secret "bundle-keys"`} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: Unpacked message %q does not name %q", reason, msg, want)
			}
		}
		if bd.Status.InstalledRevision != 1 {
			t.Errorf("%s: installedRevision %d, want 1 (nothing of the refused image installed)", reason, bd.Status.InstalledRevision)
		}
		if cm, err := getCM(t, name, "a"); err != nil || cm.Data["value"] != "1" {
			t.Errorf("%s: ConfigMap a = %v, %v; want the signed bundle's value 1", reason, cm.Data, err)
		}
	}
}
