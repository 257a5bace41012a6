package cli

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

	"github.com/olmv1/olmv1/rukpak/pkg/signature"
)

// writeKeyPair writes an ECDSA P-256 key pair as PEM files (PKCS#8 private key, PKIX public key)
// and returns their paths.
func writeKeyPair(t *testing.T, name string) (private, public string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	private, public = filepath.Join(dir, name+".key"), filepath.Join(dir, name+".pub")
	if err := os.WriteFile(private, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(public, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
		t.Fatal(err)
	}
	return private, public
}

// bundle push --sign-key signs the pushed digest; bundle verify accepts it with the public key (or
// with it among others), and refuses it with another key (SignatureInvalid) or an unsigned image
// (Unsigned); catalog push --sign-key signs too.
func TestPushSignAndVerify(t *testing.T) {
	reg := startRegistry(t)
	priv, pub := writeKeyPair(t, "signing")
	_, otherPub := writeKeyPair(t, "other")

	ref := reg + "/bundles/example-operator:0.1.0"
	out := mustRun(t, "bundle", "push", filepath.Join(exampleBundles, "0.1.0"), ref, "--insecure", "--sign-key", priv)
	if !strings.Contains(out, "signed sha256:") || !strings.Contains(out, "signature "+reg+"/bundles/example-operator@sha256:") {
		t.Fatalf("bundle push --sign-key output:\n%s", out)
	}
	out = mustRun(t, "bundle", "verify", ref, "--key", pub, "--insecure")
	if !strings.Contains(out, "is signed by key sha256:") {
		t.Fatalf("bundle verify output:\n%s", out)
	}
	mustRun(t, "bundle", "verify", ref, "--key", otherPub, "--key", pub)
	if _, _, err := run(t, "bundle", "verify", ref, "--key", otherPub); err == nil || !strings.Contains(err.Error(), signature.ReasonSignatureInvalid) {
		t.Errorf("verify with another key: %v, want SignatureInvalid", err)
	}

	unsigned := reg + "/bundles/example-operator:0.2.0"
	mustRun(t, "bundle", "push", filepath.Join(exampleBundles, "0.2.0"), unsigned, "--insecure")
	if _, _, err := run(t, "bundle", "verify", unsigned, "--key", pub); err == nil || !strings.Contains(err.Error(), signature.ReasonUnsigned) {
		t.Errorf("verify an unsigned image: %v, want Unsigned", err)
	}

	catalog := t.TempDir()
	mustRun(t, "catalog", "add-bundle", catalog, ref, "--insecure")
	cref := reg + "/catalogs/example:latest"
	out = mustRun(t, "catalog", "push", catalog, cref, "--insecure", "--sign-key", priv, "-o", "json")
	if !strings.Contains(out, `"signature"`) {
		t.Fatalf("catalog push -o json has no signature:\n%s", out)
	}
	mustRun(t, "bundle", "verify", cref, "--key", pub)
}

// An encrypted cosign key is refused before anything is pushed, saying so.
func TestPushSignKeyEncryptedRefused(t *testing.T) {
	reg := startRegistry(t)
	key := filepath.Join(t.TempDir(), "cosign.key")
	if err := os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED SIGSTORE PRIVATE KEY", Bytes: []byte("{}")}), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := run(t, "bundle", "push", filepath.Join(exampleBundles, "0.1.0"), reg+"/bundles/x:1", "--sign-key", key)
	if err == nil || !strings.Contains(err.Error(), "encrypted key, which is not supported") {
		t.Fatalf("got %v", err)
	}
	_, pub := writeKeyPair(t, "any")
	if _, _, err := run(t, "bundle", "verify", reg+"/bundles/x:1", "--key", pub); err == nil || !strings.Contains(err.Error(), "resolving") {
		t.Fatalf("the image was pushed although its signing key was refused: verify says %v", err)
	}
}
