package metadataapi

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/olmv1/olmv1/platform/boot/boottest"
)

// The deprecated --metadata-cert-dir: without a pair, a certificate is generated in memory for
// localhost, 127.0.0.1 and the extra names, signed by the CA that CABundle returns, and nothing is
// written to the directory; a mounted pair is served, in either file layout; half a pair is refused.
func TestCertFromDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not-yet")
	c, err := certFromDir(dir, []string{"catalogd-metadata.olmv1-system.svc"})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !c.Generated() || !roots.AppendCertsFromPEM(c.CABundle()) {
		t.Fatalf("an absent directory: want a generated certificate and its CA, got %s", c)
	}
	served, err := c.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(served.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"localhost", "127.0.0.1", "catalogd-metadata.olmv1-system.svc"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: host, Roots: roots}); err != nil {
			t.Errorf("%s: %v", host, err)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the generated certificate was written to %s: %v", dir, err)
	}

	for _, layout := range certDirPairs {
		dir := t.TempDir()
		crt, key, err := boottest.SelfSignedServing(layout[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := boottest.WriteSecretVolume(dir, map[string][]byte{layout[0]: crt, layout[1]: key}); err != nil {
			t.Fatal(err)
		}
		c, err := certFromDir(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		served, err := c.GetCertificate(&tls.ClientHelloInfo{})
		if err != nil || c.Generated() || served.Leaf.Subject.CommonName != layout[0] || string(c.CABundle()) != string(crt) {
			t.Errorf("%s: served %v (%v), generated %v", layout[0], served, err, c.Generated())
		}
	}

	half := t.TempDir()
	if err := os.WriteFile(filepath.Join(half, "apiserver.crt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := certFromDir(half, nil); err == nil || !strings.Contains(err.Error(), "--metadata-cert-dir: "+half+" holds only one of apiserver.crt and apiserver.key") {
		t.Errorf("half a pair: %v", err)
	}
}
