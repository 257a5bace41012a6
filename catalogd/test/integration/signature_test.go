package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	"github.com/olmv1/olmv1/catalogd/internal/serve"
	"github.com/olmv1/olmv1/catalogd/internal/storage"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/signature"
	"github.com/olmv1/olmv1/rukpak/pkg/source"
	"github.com/olmv1/olmv1/rukpak/pkg/source/sourcetest"
	"github.com/olmv1/olmv1/rukpak/pkg/source/unpackertest"
)

const (
	signatureLabel     = "test.olmv1.io/signatures"
	signatureNamespace = "olmv1-signatures"
)

// signatureEnv is catalogd's Catalog reconciler, with the real source unpacker reading Secrets
// from this package's kube-apiserver, against a registry on 127.0.0.1.
type signatureEnv struct {
	reg        *sourcetest.Registry
	contentURL string
	unpacks    atomic.Int64
}

func startSignatureEnv(t *testing.T, configure ...func(*source.Config)) *signatureEnv {
	t.Helper()
	e := &signatureEnv{reg: sourcetest.NewRegistry(t)}
	if err := suite.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: signatureNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	store, err := storage.New(filepath.Join(tmp, "storage"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := source.Config{CacheDir: filepath.Join(tmp, "cache"), Client: suite.Client}
	for _, c := range configure {
		c(&cfg)
	}
	real, err := source.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	unpacker := unpackertest.New(t)
	unpacker.Route(real, rukpakv1alpha1.SourceTypeImage, rukpakv1alpha1.SourceTypeConfigMaps)
	unpacker.OnUnpack(func(string) { e.unpacks.Add(1) })
	e.contentURL = startCatalogManager(t, signatureLabel, unpacker, store, signatureNamespace)
	return e
}

// keysSecret creates a Secret holding the public halves of keys.
func keysSecret(t *testing.T, name string, keys ...*ecdsa.PrivateKey) {
	t.Helper()
	var data []byte
	for _, k := range keys {
		der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})...)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: signatureNamespace}, Data: map[string][]byte{"cosign.pub": data}}
	if err := suite.Client.Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = suite.Client.Delete(context.Background(), s) })
}

func (e *signatureEnv) pushSigned(t *testing.T, version, repoTag string, key *ecdsa.PrivateKey) {
	t.Helper()
	pushCatalogImage(t, e.reg, version, repoTag)
	if key == nil {
		return
	}
	if _, err := signature.Sign(t.Context(), e.resolve(t, repoTag), key); err != nil {
		t.Fatal(err)
	}
}

// resolve is the digest reference repoTag points to now.
func (e *signatureEnv) resolve(t *testing.T, repoTag string) name.Digest {
	t.Helper()
	tag, err := name.NewTag(e.reg.Ref(repoTag))
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(tag)
	if err != nil {
		t.Fatal(err)
	}
	return tag.Context().Digest(desc.Digest.String())
}

// createCatalog creates a Catalog of the image ref, polled every second, with a verify naming
// secret ("": without verify).
func (e *signatureEnv) createCatalog(t *testing.T, name, ref, secret string) {
	t.Helper()
	img := &rukpakv1alpha1.ImageSource{Ref: ref, PollInterval: &metav1.Duration{Duration: time.Second}}
	if secret != "" {
		img.Verify = &rukpakv1alpha1.ImageVerification{Provider: rukpakv1alpha1.VerificationProviderCosign,
			Cosign: &rukpakv1alpha1.CosignVerification{SecretRef: &rukpakv1alpha1.SecretReference{Name: secret}}}
	}
	createSignatureCatalog(t, name, rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: img})
}

func createSignatureCatalog(t *testing.T, name string, src rukpakv1alpha1.Source) {
	t.Helper()
	cat := &catalogdv1alpha1.Catalog{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{signatureLabel: "true"}},
		Spec:       catalogdv1alpha1.CatalogSpec{Source: src},
	}
	if err := suite.Client.Create(t.Context(), cat); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Deleted while the reconciler runs, so that it removes the finalizer.
		_ = suite.Client.Delete(context.Background(), cat)
		pollUntil(t, 30*time.Second, "the Catalog is gone", func() (bool, string) {
			err := suite.Client.Get(context.Background(), client.ObjectKeyFromObject(cat), &catalogdv1alpha1.Catalog{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	})
}

func getCatalog(t *testing.T, name string) *catalogdv1alpha1.Catalog {
	t.Helper()
	c := &catalogdv1alpha1.Catalog{}
	if err := suite.Client.Get(t.Context(), client.ObjectKey{Name: name}, c); err != nil {
		t.Fatal(err)
	}
	return c
}

func (e *signatureEnv) served(t *testing.T, name string) string {
	t.Helper()
	resp, err := http.Get(e.contentURL + serve.URLPath(name))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", serve.URLPath(name), resp.Status)
	}
	return string(body)
}

// waitUnpacked waits until Unpacked has reason and says msg.
func waitUnpacked(t *testing.T, name, reason, msg string) *catalogdv1alpha1.Catalog {
	t.Helper()
	var c *catalogdv1alpha1.Catalog
	pollUntil(t, 30*time.Second, "Unpacked reason "+reason, func() (bool, string) {
		c = getCatalog(t, name)
		u := meta.FindStatusCondition(c.Status.Conditions, catalogdv1alpha1.TypeUnpacked)
		return u != nil && u.Reason == reason && strings.Contains(u.Message, msg), fmt.Sprintf("%+v", c.Status.Conditions)
	})
	return c
}

// A Catalog with a key policy: the signed image is served and its signature recorded; the tag
// moved to an unsigned image is refused with Unsigned, then to an image signed by another key with
// SignatureInvalid, while the verified content stays served; a verification failure is not retried
// in a hot loop; signing the new image with a trusted key (a rotation: the Secret holds two keys)
// gets it served.
func TestCatalogSignaturePolicy(t *testing.T) {
	e := startSignatureEnv(t)
	key, next, stranger := newECKey(t), newECKey(t), newECKey(t)
	keysSecret(t, "catalog-keys", key, next)
	e.pushSigned(t, "1.0.0", "catalogs/signed:v1", key)

	const name = "signed"
	e.createCatalog(t, name, e.reg.Ref("catalogs/signed:v1"), "catalog-keys")
	pollUntil(t, 30*time.Second, "v1 is served", func() (bool, string) {
		c := getCatalog(t, name)
		return meta.IsStatusConditionTrue(c.Status.Conditions, catalogdv1alpha1.TypeServing) && c.Status.ResolvedSource != nil, fmt.Sprintf("%+v", c.Status.Conditions)
	})
	good := getCatalog(t, name).Status
	fp, _ := signature.Fingerprint(&key.PublicKey)
	if v := good.ResolvedSource.Image.Verified; v == nil || v.KeyFingerprint != fp || v.Provider != rukpakv1alpha1.VerificationProviderCosign {
		t.Fatalf("resolvedSource.image.verified = %+v, want Cosign with key %s", v, fp)
	}
	if !strings.Contains(e.served(t, name), "foo.v1.0.0") {
		t.Fatal("v1 is not served")
	}

	// The tag moves to an unsigned image.
	e.pushSigned(t, "2.0.0", "catalogs/signed:v1", nil)
	unsigned := e.resolve(t, "catalogs/signed:v1")
	c := waitUnpacked(t, name, catalogdv1alpha1.ReasonUnsigned, unsigned.DigestStr())
	u := meta.FindStatusCondition(c.Status.Conditions, catalogdv1alpha1.TypeUnpacked)
	for _, want := range []string{e.reg.Ref("catalogs/signed:v1"), `Secret "catalog-keys"`, "2 key(s)"} {
		if !strings.Contains(u.Message, want) {
			t.Errorf("Unpacked message %q does not name %q", u.Message, want)
		}
	}
	e.assertStillServingV1(t, name, good)

	// Then to an image signed by a key the policy does not hold: refused, and not retried more
	// than once per poll (pollInterval 1s).
	e.pushSigned(t, "3.0.0", "catalogs/signed:v1", stranger)
	wrong := e.resolve(t, "catalogs/signed:v1")
	waitUnpacked(t, name, catalogdv1alpha1.ReasonSignatureInvalid, wrong.DigestStr())
	before, start := e.unpacks.Load(), time.Now()
	pollUntil(t, 10*time.Second, "3 seconds pass", func() (bool, string) {
		return time.Since(start) >= 3*time.Second, ""
	})
	n := e.unpacks.Load() - before
	t.Logf("%d unpacks in 3 s while the signature is invalid", n)
	if n > 6 {
		t.Errorf("%d unpacks in 3 s while the signature is invalid: a hot loop (want about one per 1 s poll)", n)
	}
	e.assertStillServingV1(t, name, good)

	// Signed with the second key of the Secret: accepted.
	signed := e.resolve(t, "catalogs/signed:v1")
	if _, err := signature.Sign(t.Context(), signed, next); err != nil {
		t.Fatal(err)
	}
	c = waitUnpacked(t, name, catalogdv1alpha1.ReasonUnpackSucceeded, "")
	fpNext, _ := signature.Fingerprint(&next.PublicKey)
	if v := c.Status.ResolvedSource.Image.Verified; v == nil || v.KeyFingerprint != fpNext {
		t.Errorf("after signing with the second key: verified = %+v, want key %s", v, fpNext)
	}
	if !strings.Contains(e.served(t, name), "foo.v3.0.0") {
		t.Error("the signed v3 is not served")
	}
}

// The cluster-wide default (--require-image-signatures=cluster-keys): a Catalog without verify is
// refused while its image is unsigned and served once it is signed by a key of the default Secret,
// and one whose own verify trusts another key is refused until the default's key signs too; a
// ConfigMaps Catalog is refused with Unsigned naming the flag.
func TestCatalogClusterWideSignatureDefault(t *testing.T) {
	e := startSignatureEnv(t, func(c *source.Config) { c.RequireSignaturesSecret = "cluster-keys" })
	clusterKey, ownKey := newECKey(t), newECKey(t)
	keysSecret(t, "cluster-keys", clusterKey)
	keysSecret(t, "own-keys", ownKey)

	e.pushSigned(t, "1.0.0", "catalogs/default:v1", nil)
	e.createCatalog(t, "default-unsigned", e.reg.Ref("catalogs/default:v1"), "")
	unsigned := e.resolve(t, "catalogs/default:v1")
	waitUnpacked(t, "default-unsigned", catalogdv1alpha1.ReasonUnsigned, "--require-image-signatures=cluster-keys")
	if _, err := signature.Sign(t.Context(), unsigned, clusterKey); err != nil {
		t.Fatal(err)
	}
	c := waitUnpacked(t, "default-unsigned", catalogdv1alpha1.ReasonUnpackSucceeded, "")
	fp, _ := signature.Fingerprint(&clusterKey.PublicKey)
	if v := c.Status.ResolvedSource.Image.Verified; v == nil || v.KeyFingerprint != fp {
		t.Errorf("verified = %+v, want the default Secret's key %s", v, fp)
	}
	if !strings.Contains(e.served(t, "default-unsigned"), "foo.v1.0.0") {
		t.Error("the signed v1 is not served")
	}

	e.pushSigned(t, "2.0.0", "catalogs/default:own", ownKey)
	e.createCatalog(t, "default-own", e.reg.Ref("catalogs/default:own"), "own-keys")
	waitUnpacked(t, "default-own", catalogdv1alpha1.ReasonSignatureInvalid, "--require-image-signatures=cluster-keys")
	if _, err := signature.Sign(t.Context(), e.resolve(t, "catalogs/default:own"), clusterKey); err != nil {
		t.Fatal(err)
	}
	waitUnpacked(t, "default-own", catalogdv1alpha1.ReasonUnpackSucceeded, "")

	createSignatureCatalog(t, "default-configmaps", rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeConfigMaps,
		ConfigMaps: []rukpakv1alpha1.ConfigMapSource{{ConfigMap: rukpakv1alpha1.ConfigMapReference{Name: "catalog"}}}})
	waitUnpacked(t, "default-configmaps", catalogdv1alpha1.ReasonUnsigned, "ConfigMaps sources cannot be verified")
}

// assertStillServingV1: the last verified content is served and the status still names it.
func (e *signatureEnv) assertStillServingV1(t *testing.T, name string, good catalogdv1alpha1.CatalogStatus) {
	t.Helper()
	c := getCatalog(t, name)
	if c.Status.ContentHash != good.ContentHash || c.Status.ResolvedSource.Image.Ref != good.ResolvedSource.Image.Ref {
		t.Errorf("status moved off the verified content: hash %s → %s, ref %s → %s", good.ContentHash, c.Status.ContentHash,
			good.ResolvedSource.Image.Ref, c.Status.ResolvedSource.Image.Ref)
	}
	if !meta.IsStatusConditionTrue(c.Status.Conditions, catalogdv1alpha1.TypeServing) {
		t.Errorf("Serving is not True: %+v", c.Status.Conditions)
	}
	if body := e.served(t, name); !strings.Contains(body, "foo.v1.0.0") || strings.Contains(body, "foo.v2.0.0") || strings.Contains(body, "foo.v3.0.0") {
		t.Error("the content served is not the verified v1 any more")
	}
}

func newECKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
