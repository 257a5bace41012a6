package suite

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/signature"
	"github.com/olmv1/olmv1/rukpak/pkg/signature/signaturetest"
)

// Image signatures through the three controllers (docs/signatures.md): catalogd verifies a
// Catalog's image before serving it and keeps serving the last verified content when its tag moves
// to an image it refuses; operator-controller passes a Catalog's bundleVerify to the
// BundleDeployment, rukpak refuses the unsigned bundle and the Operator shows why.
var _ = Describe("image signatures", Label("signatures"), func() {
	var c client.Client

	BeforeEach(func() {
		_, c = operatorClients()
	})

	It("keeps serving a key-signed catalog's verified content while its tag points to an unsigned or wrongly signed image", func(ctx SpecContext) {
		key, stranger := newSigningKey(), newSigningKey()
		createKeySecret(ctx, "e2e-catalog-keys", key)
		catalogFBC := func(version string) *fixtureCatalog {
			return newFixtureCatalog().SingleBundlePackage("signed-pkg", version, env.registry.Addr+"/bundles/signed-pkg:v"+version)
		}
		ref := catalogFBC("1.0.0").Push(ctx, "signed-catalog", "latest")
		v1 := signImage(ctx, ref, key)

		const name = "e2e-signed-catalog"
		Expect(c.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "catalogd.operatorframework.io/v1alpha1", "kind": "Catalog",
			"metadata": map[string]any{"name": name},
			"spec": map[string]any{"source": map[string]any{"type": "Image", "image": map[string]any{
				"ref": ref, "pollInterval": "1s",
				"verify": map[string]any{"provider": "Cosign", "cosign": map[string]any{"secretRef": map[string]any{"name": "e2e-catalog-keys"}}},
			}}},
		}})).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, catalogNamed(name)) })

		By("the signed image is served, and its status names the key")
		got := waitCondition(ctx, c, catalogNamed(name), "Serving", "True", 2*time.Minute, anyGeneration())
		fp, err := signature.Fingerprint(&key.PublicKey)
		Expect(err).NotTo(HaveOccurred())
		Expect(nestedString(got.Object, "status", "resolvedSource", "image", "verified", "keyFingerprint")).To(Equal(fp))
		Expect(nestedString(got.Object, "status", "resolvedSource", "image", "ref")).To(HaveSuffix("@" + v1.DigestStr()))
		contentURL := nestedString(got.Object, "status", "contentURL")
		hash := nestedString(got.Object, "status", "contentHash")
		Expect(string(httpsGet(ctx, contentURL))).To(ContainSubstring("signed-pkg.v1.0.0"))

		stillServesV1 := func(ctx context.Context) {
			got := getCatalogObject(ctx, c, name)
			Expect(findCondition(got, "Serving")).To(HaveKeyWithValue("status", "True"))
			Expect(nestedString(got.Object, "status", "contentHash")).To(Equal(hash), "status still names the verified content")
			Expect(nestedString(got.Object, "status", "resolvedSource", "image", "ref")).To(HaveSuffix("@" + v1.DigestStr()))
			all := string(httpsGet(ctx, contentURL))
			Expect(all).To(ContainSubstring("signed-pkg.v1.0.0"), "the last verified content is served")
			Expect(all).NotTo(ContainSubstring("signed-pkg.v2.0.0"))
			Expect(all).NotTo(ContainSubstring("signed-pkg.v3.0.0"))
		}

		By("the tag moves to an unsigned image: Unsigned, naming its digest; v1 is still served")
		catalogFBC("2.0.0").Push(ctx, "signed-catalog", "latest")
		unsigned := resolveDigest(ctx, ref)
		got = waitCondition(ctx, c, catalogNamed(name), "Unpacked", "False", 2*time.Minute, withReason(rukpakv1alpha1.ReasonUnsigned))
		Expect(conditionMessage(got, "Unpacked")).To(ContainSubstring(unsigned.DigestStr()))
		Expect(conditionMessage(got, "Unpacked")).To(ContainSubstring(`Secret "e2e-catalog-keys"`))
		stillServesV1(ctx)

		By("the tag moves to an image signed by a key the Secret does not hold: SignatureInvalid; v1 is still served")
		catalogFBC("3.0.0").Push(ctx, "signed-catalog", "latest")
		wrong := signImage(ctx, ref, stranger)
		cat := catalogNamed(name)
		got = waitCondition(ctx, c, cat, "Unpacked", "False", 2*time.Minute, withReason(rukpakv1alpha1.ReasonSignatureInvalid),
			andAlso(func(g Gomega) { g.Expect(conditionMessage(cat, "Unpacked")).To(ContainSubstring(wrong.DigestStr())) }))
		fmt.Fprintf(GinkgoWriter, "Unpacked message: %s\n", conditionMessage(got, "Unpacked"))
		stillServesV1(ctx)
		Consistently(func(g Gomega) {
			got := getCatalogObject(ctx, c, name)
			g.Expect(nestedString(got.Object, "status", "contentHash")).To(Equal(hash))
		}).WithContext(ctx).WithTimeout(3 * time.Second).WithPolling(500 * time.Millisecond).Should(Succeed())
	})

	It("serves a catalog signed keyless by the expected identity, checked offline against a trusted root in a ConfigMap, and refuses another identity", func(ctx SpecContext) {
		const issuer, subject = "https://token.actions.example.com", "https://github.com/org/catalog/.github/workflows/release.yaml@refs/heads/main"
		ca, err := signaturetest.NewAuthority("e2e")
		Expect(err).NotTo(HaveOccurred())
		root, err := ca.TrustedRootJSON()
		Expect(err).NotTo(HaveOccurred())
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "e2e-sigstore-root", Namespace: catalogdNamespace},
			Data: map[string]string{rukpakv1alpha1.DefaultTrustedRootKey: string(root)}}
		_, err = env.clientset.CoreV1().ConfigMaps(catalogdNamespace).Create(ctx, cm, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_ = env.clientset.CoreV1().ConfigMaps(catalogdNamespace).Delete(ctx, cm.Name, metav1.DeleteOptions{})
		})
		signKeyless := func(ref, who string) name.Digest {
			s, err := ca.Signer(signaturetest.Identity{Issuer: issuer, Subject: who})
			Expect(err).NotTo(HaveOccurred())
			d := resolveDigest(ctx, ref)
			_, err = signature.SignKeyless(ctx, d, s)
			Expect(err).NotTo(HaveOccurred())
			return d
		}
		catalogFBC := func(version string) *fixtureCatalog {
			return newFixtureCatalog().SingleBundlePackage("keyless-pkg", version, env.registry.Addr+"/bundles/keyless-pkg:v"+version)
		}
		ref := catalogFBC("1.0.0").Push(ctx, "keyless-catalog", "latest")
		signKeyless(ref, subject)

		const name = "e2e-keyless-catalog"
		Expect(c.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "catalogd.operatorframework.io/v1alpha1", "kind": "Catalog",
			"metadata": map[string]any{"name": name},
			"spec": map[string]any{"source": map[string]any{"type": "Image", "image": map[string]any{
				"ref": ref, "pollInterval": "1s",
				"verify": map[string]any{"provider": "Cosign", "cosign": map[string]any{"keyless": map[string]any{
					"issuer": issuer, "subject": subject, "trustedRootRef": map[string]any{"name": cm.Name}}}},
			}}},
		}})).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, catalogNamed(name)) })

		By("served, with the signer's identity in the status")
		got := waitCondition(ctx, c, catalogNamed(name), "Serving", "True", 2*time.Minute, anyGeneration())
		Expect(nestedString(got.Object, "status", "resolvedSource", "image", "verified", "identity", "issuer")).To(Equal(issuer))
		Expect(nestedString(got.Object, "status", "resolvedSource", "image", "verified", "identity", "subject")).To(Equal(subject))
		contentURL := nestedString(got.Object, "status", "contentURL")
		Expect(string(httpsGet(ctx, contentURL))).To(ContainSubstring("keyless-pkg.v1.0.0"))

		By("the tag moves to an image signed by another identity: SignatureInvalid naming it; v1 is still served")
		catalogFBC("2.0.0").Push(ctx, "keyless-catalog", "latest")
		wrong := signKeyless(ref, "mallory@example.com")
		cat := catalogNamed(name)
		waitCondition(ctx, c, cat, "Unpacked", "False", 2*time.Minute, withReason(rukpakv1alpha1.ReasonSignatureInvalid),
			andAlso(func(g Gomega) { g.Expect(conditionMessage(cat, "Unpacked")).To(ContainSubstring(wrong.DigestStr())) }))
		Expect(conditionMessage(cat, "Unpacked")).To(ContainSubstring(`issued to "mallory@example.com"`))
		Expect(findCondition(cat, "Serving")).To(HaveKeyWithValue("status", "True"))
		all := string(httpsGet(ctx, contentURL))
		Expect(all).To(ContainSubstring("keyless-pkg.v1.0.0"))
		Expect(all).NotTo(ContainSubstring("keyless-pkg.v2.0.0"))
	})

	It("refuses an unsigned bundle listed by a catalog with bundleVerify, and the Operator says why", func(ctx SpecContext) {
		createKeySecret(ctx, "e2e-bundle-keys", newSigningKey())
		bundleRef := pushBundleAs(ctx, "0.1.0", "unsigned-example:v0.1.0")
		catalogRef := newFixtureCatalog().SingleBundlePackage("e2e-unsigned-pkg", "0.1.0", bundleRef).Push(ctx, "bundle-verify-catalog", "v1")

		const catalogName, opName = "e2e-bundle-verify", "e2e-unsigned-bundle"
		Expect(c.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "catalogd.operatorframework.io/v1alpha1", "kind": "Catalog",
			"metadata": map[string]any{"name": catalogName},
			"spec": map[string]any{
				"source":       map[string]any{"type": "Image", "image": map[string]any{"ref": catalogRef}},
				"bundleVerify": map[string]any{"provider": "Cosign", "cosign": map[string]any{"secretRef": map[string]any{"name": "e2e-bundle-keys"}}},
			},
		}})).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { _ = c.Delete(ctx, catalogNamed(catalogName)) })
		waitCondition(ctx, c, catalogNamed(catalogName), "Serving", "True", 2*time.Minute, anyGeneration())

		createOperator(ctx, c, opName, map[string]any{"packageName": "e2e-unsigned-pkg"})

		By("the BundleDeployment carries the catalog's policy, and rukpak refuses the unsigned bundle")
		bd := waitBundleDeploymentRef(ctx, c, opName, bundleRef)
		Expect(bd.Spec.Source.Image.Verify).NotTo(BeNil())
		Expect(bd.Spec.Source.Image.Verify.Cosign.SecretRef.Name).To(Equal("e2e-bundle-keys"))
		waitCondition(ctx, c, bd, rukpakv1alpha1.TypeUnpacked, "False", 2*time.Minute, anyGeneration(), withReason(rukpakv1alpha1.ReasonUnsigned))
		Expect(meta.IsStatusConditionTrue(bd.Status.Conditions, rukpakv1alpha1.TypeInstalled)).To(BeFalse())

		By("the Operator shows the refusal")
		op := waitCondition(ctx, c, operatorNamed(opName), "Installed", "False", 2*time.Minute, withReason(rukpakv1alpha1.ReasonUnsigned))
		msg := conditionMessage(op, "Installed")
		fmt.Fprintf(GinkgoWriter, "Operator Installed message: %s\n", msg)
		Expect(msg).To(ContainSubstring("unsigned-example"))
		Expect(msg).To(ContainSubstring(`Secret "e2e-bundle-keys"`))
	})
})

func newSigningKey() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	return k
}

// createKeySecret creates a Secret of the public halves of keys in the controllers' namespace.
func createKeySecret(ctx context.Context, name string, keys ...*ecdsa.PrivateKey) {
	var data []byte
	for _, k := range keys {
		der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
		Expect(err).NotTo(HaveOccurred())
		data = append(data, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})...)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: catalogdNamespace}, Data: map[string][]byte{"cosign.pub": data}}
	_, err := env.clientset.CoreV1().Secrets(catalogdNamespace).Create(ctx, s, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) {
		_ = env.clientset.CoreV1().Secrets(catalogdNamespace).Delete(ctx, name, metav1.DeleteOptions{})
	})
}

// resolveDigest is the digest reference ref (a tag in the suite's registry) points to now.
func resolveDigest(ctx context.Context, ref string) name.Digest {
	tag, err := name.NewTag(ref, name.Insecure)
	Expect(err).NotTo(HaveOccurred())
	desc, err := remote.Head(tag, remote.WithContext(ctx))
	Expect(err).NotTo(HaveOccurred())
	return tag.Context().Digest(desc.Digest.String())
}

// signImage signs the digest ref points to with key (as `bundle push --sign-key`) and returns it.
func signImage(ctx context.Context, ref string, key *ecdsa.PrivateKey) name.Digest {
	d := resolveDigest(ctx, ref)
	_, err := signature.Sign(ctx, d, key)
	Expect(err).NotTo(HaveOccurred())
	return d
}

func getCatalogObject(ctx context.Context, c client.Client, name string) *unstructured.Unstructured {
	got := catalogNamed(name)
	Expect(c.Get(ctx, client.ObjectKeyFromObject(got), got)).To(Succeed())
	return got
}
