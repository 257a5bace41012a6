package pki

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func mustCA(t *testing.T) (*CA, []byte, []byte) {
	t.Helper()
	certPEM, keyPEM, err := GenerateCA("test-ca", t0, 90*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := ParseCA(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return ca, certPEM, keyPEM
}

func TestGenerateCA(t *testing.T) {
	ca, certPEM, keyPEM := mustCA(t)
	if _, ok := ca.Key.(ed25519.PrivateKey); !ok {
		t.Errorf("CA key is %T, want Ed25519", ca.Key)
	}
	if !ca.Cert.IsCA || ca.Cert.Subject.CommonName != "test-ca" || !ca.Cert.NotBefore.Equal(t0) || !ca.Cert.NotAfter.Equal(t0.Add(90*24*time.Hour)) {
		t.Errorf("CA %v %v–%v", ca.Cert.Subject, ca.Cert.NotBefore, ca.Cert.NotAfter)
	}
	if ca.Cert.KeyUsage != x509.KeyUsageCertSign|x509.KeyUsageDigitalSignature {
		t.Errorf("key usage %v", ca.Cert.KeyUsage)
	}
	if b, _ := pem.Decode(certPEM); b.Type != "CERTIFICATE" {
		t.Errorf("certificate block %q", b.Type)
	}
	if b, _ := pem.Decode(keyPEM); b.Type != "PRIVATE KEY" || !bytes.Equal(b.Bytes, ca.KeyDER()) {
		t.Errorf("key block %q (PKCS#8 expected), KeyDER the stored bytes", b.Type)
	}
	if !bytes.Equal(ca.CertPEM, certPEM) {
		t.Error("CertPEM must be the bytes given to ParseCA")
	}
}

func TestIssue(t *testing.T) {
	ca, _, _ := mustCA(t)
	req := ServingRequest([]string{"svc.ns.svc", "svc.ns.svc.cluster.local"}, t0, t0.Add(time.Hour))
	leaf, err := Issue(req, &ca.KeyPair)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := leaf.Key.(*ecdsa.PrivateKey); !ok || leaf.Cert.PublicKeyAlgorithm != x509.ECDSA {
		t.Errorf("default key %T, want P-256 ECDSA", leaf.Key)
	}
	if leaf.Cert.Subject.CommonName != "svc.ns.svc" || leaf.Cert.IsCA || leaf.Cert.SerialNumber.Sign() <= 0 {
		t.Errorf("leaf %v CA %v serial %v", leaf.Cert.Subject, leaf.Cert.IsCA, leaf.Cert.SerialNumber)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	if _, err := leaf.Cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "svc.ns.svc.cluster.local", CurrentTime: t0.Add(time.Minute)}); err != nil {
		t.Errorf("leaf does not verify against its CA: %v", err)
	}
	// Self-signed, with a caller's key and IP addresses, as a TLS server certificate.
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	self, err := Issue(Request{Subject: pkix.Name{CommonName: "local"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore: t0, NotAfter: t0.Add(time.Hour), Key: rsaKey}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := self.Cert.CheckSignatureFrom(self.Cert); err == nil {
		t.Error("a non-CA self-signed certificate cannot sign (basicConstraints)")
	}
	if tc := self.TLSCertificate(); !bytes.Equal(tc.Certificate[0], self.Cert.Raw) || tc.PrivateKey != rsaKey {
		t.Error("TLSCertificate does not carry the pair")
	}
}

func TestCAAndClientRequests(t *testing.T) {
	// A root CA from CARequest (P-256, as Issue defaults) signs a client certificate from ClientRequest.
	root, err := Issue(CARequest("root", t0, t0.Add(24*time.Hour)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := root.Cert; !c.IsCA || !c.BasicConstraintsValid || c.KeyUsage != x509.KeyUsageCertSign|x509.KeyUsageDigitalSignature ||
		c.Subject.CommonName != "root" || !c.NotAfter.Equal(t0.Add(24*time.Hour)) || c.CheckSignatureFrom(c) != nil {
		t.Errorf("root CA: CA %v, key usage %v, %v until %v", c.IsCA, c.KeyUsage, c.Subject, c.NotAfter)
	}
	// An intermediate under it signs too.
	sub, err := Issue(CARequest("sub", t0, t0.Add(time.Hour)), root)
	if err != nil {
		t.Fatal(err)
	}
	client, err := Issue(ClientRequest(pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}}, t0, t0.Add(time.Hour)), sub)
	if err != nil {
		t.Fatal(err)
	}
	c := client.Cert
	if c.IsCA || c.Subject.CommonName != "admin" || len(c.Subject.Organization) != 1 || c.Subject.Organization[0] != "system:masters" ||
		c.KeyUsage != x509.KeyUsageDigitalSignature|x509.KeyUsageKeyEncipherment || len(c.DNSNames)+len(c.IPAddresses) != 0 {
		t.Errorf("client certificate: CA %v, %v, key usage %v, SANs %v %v", c.IsCA, c.Subject, c.KeyUsage, c.DNSNames, c.IPAddresses)
	}
	roots, inter := x509.NewCertPool(), x509.NewCertPool()
	roots.AddCert(root.Cert)
	inter.AddCert(sub.Cert)
	opts := x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: t0.Add(time.Minute), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if _, err := c.Verify(opts); err != nil {
		t.Errorf("client certificate does not verify for client auth: %v", err)
	}
	opts.KeyUsages = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	if _, err := c.Verify(opts); err == nil {
		t.Error("a client certificate must not verify for server auth")
	}
	// A server certificate with IP addresses (ServingRequest plus IPs, another common name).
	req := ServingRequest([]string{"localhost"}, t0, t0.Add(time.Hour))
	req.Subject, req.IPAddresses = pkix.Name{CommonName: "kube-apiserver"}, []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(127, 96, 0, 1)}
	server, err := Issue(req, root)
	if err != nil {
		t.Fatal(err)
	}
	opts = x509.VerifyOptions{Roots: roots, CurrentTime: t0.Add(time.Minute), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, host := range []string{"localhost", "127.0.0.1", "127.96.0.1"} {
		opts.DNSName = host
		if _, err := server.Cert.Verify(opts); err != nil {
			t.Errorf("server certificate for %s: %v", host, err)
		}
	}
	opts.KeyUsages = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if _, err := server.Cert.Verify(opts); err == nil {
		t.Error("a server certificate must not verify for client auth")
	}
}

func TestParseCAKeyForms(t *testing.T) {
	for name, key := range map[string]func() (crypto.Signer, []byte){
		"PKCS#1 RSA (the chart's genCA)": func() (crypto.Signer, []byte) {
			k, _ := rsa.GenerateKey(rand.Reader, 2048)
			b, _ := EncodeRSAKey(k)
			return k, b
		},
		"SEC 1 EC": func() (crypto.Signer, []byte) {
			k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			b, _ := EncodeECKey(k)
			return k, b
		},
		"PKCS#8 EC": func() (crypto.Signer, []byte) {
			k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			b, _ := EncodePKCS8Key(k)
			return k, b
		},
	} {
		t.Run(name, func(t *testing.T) {
			k, keyPEM := key()
			pair, err := Issue(Request{Subject: pkix.Name{CommonName: "ca"}, NotBefore: t0, NotAfter: t0.Add(time.Hour), IsCA: true,
				KeyUsage: x509.KeyUsageCertSign, Key: k}, nil)
			if err != nil {
				t.Fatal(err)
			}
			// A bundle whose first block is not a certificate: the first certificate is the CA.
			certPEM := append(pem.EncodeToMemory(&pem.Block{Type: "COMMENT", Bytes: []byte("x")}), EncodeCert(pair.Cert)...)
			ca, err := ParseCA(certPEM, keyPEM)
			if err != nil {
				t.Fatal(err)
			}
			if !ca.Cert.Equal(pair.Cert) || !bytes.Equal(ca.CertPEM, certPEM) {
				t.Error("ParseCA returned another certificate, or not the bytes it was given")
			}
			if _, err := Issue(ServingRequest([]string{"x"}, t0, t0.Add(time.Minute)), &ca.KeyPair); err != nil {
				t.Errorf("signing with the parsed CA: %v", err)
			}
		})
	}
}

func TestParseCAErrors(t *testing.T) {
	_, certPEM, keyPEM := mustCA(t)
	_, otherCert, _ := mustCA(t)
	leaf, err := Issue(ServingRequest([]string{"x"}, t0, t0.Add(time.Hour)), nil)
	if err != nil {
		t.Fatal(err)
	}
	leafKey, _ := EncodePKCS8Key(leaf.Key)
	for name, tc := range map[string]struct {
		cert, key []byte
		want      string
	}{
		"no cert":       {nil, keyPEM, "CA certificate: no PEM CERTIFICATE block"},
		"key as cert":   {keyPEM, keyPEM, "CA certificate: no PEM CERTIFICATE block"},
		"garbage cert":  {pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("junk")}), keyPEM, "CA certificate: x509: "},
		"not a CA":      {EncodeCert(leaf.Cert), leafKey, "CA certificate: not a CA (basicConstraints CA:TRUE missing)"},
		"no key":        {certPEM, nil, "CA key: no PEM block"},
		"bad key":       {certPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("junk")}), "CA key: "},
		"another's key": {otherCert, keyPEM, "CA key: does not match the CA certificate"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseCA(tc.cert, tc.key); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err %v, want one starting with %q", err, tc.want)
			}
		})
	}
}

func TestParseKeyPair(t *testing.T) {
	ca, _, _ := mustCA(t)
	leaf, err := Issue(ServingRequest([]string{"x"}, t0, t0.Add(time.Hour)), &ca.KeyPair)
	if err != nil {
		t.Fatal(err)
	}
	for _, enc := range []func(crypto.Signer) ([]byte, error){EncodePKCS8Key, EncodeECKey} {
		keyPEM, err := enc(leaf.Key)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseKeyPair(EncodeCert(leaf.Cert), keyPEM)
		if err != nil || !got.Cert.Equal(leaf.Cert) {
			t.Fatalf("ParseKeyPair: %v", err)
		}
	}
	other, _ := Issue(ServingRequest([]string{"x"}, t0, t0.Add(time.Hour)), nil)
	otherKey, _ := EncodePKCS8Key(other.Key)
	if _, err := ParseKeyPair(EncodeCert(leaf.Cert), otherKey); err == nil || !strings.HasPrefix(err.Error(), "invalid key pair: ") {
		t.Errorf("mismatched pair: %v", err)
	}
	if _, err := EncodeECKey(ca.Key); err == nil {
		t.Error("EncodeECKey must refuse an Ed25519 key")
	}
}

func TestEncodeRSAAndPublicKeys(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := EncodeRSAKey(k)
	if err != nil {
		t.Fatal(err)
	}
	if b, rest := pem.Decode(keyPEM); b == nil || b.Type != "RSA PRIVATE KEY" || len(rest) != 0 {
		t.Fatalf("RSA key: want one PEM RSA PRIVATE KEY block")
	} else if got, err := x509.ParsePKCS1PrivateKey(b.Bytes); err != nil || !got.Equal(k) {
		t.Errorf("RSA key does not read back as PKCS#1: %v", err)
	}
	if got, _, err := parseKey(keyPEM); err != nil || !k.Equal(got) {
		t.Errorf("parseKey does not read what EncodeRSAKey writes: %v", err)
	}
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if _, err := EncodeRSAKey(ec); err == nil {
		t.Error("EncodeRSAKey must refuse an ECDSA key")
	}
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	for name, signer := range map[string]crypto.Signer{"RSA": k, "ECDSA": ec, "Ed25519": ed} {
		pubPEM, err := EncodePublicKey(signer.Public())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, rest := pem.Decode(pubPEM)
		if b == nil || b.Type != "PUBLIC KEY" || len(rest) != 0 {
			t.Fatalf("%s: want one PEM PUBLIC KEY block", name)
		}
		pub, err := x509.ParsePKIXPublicKey(b.Bytes)
		if err != nil || !signer.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(pub) {
			t.Errorf("%s public key does not read back as PKIX: %v", name, err)
		}
	}
	if _, err := EncodePublicKey("not a key"); err == nil {
		t.Error("EncodePublicKey must refuse what is not a public key")
	}
}

func TestTrustBundle(t *testing.T) {
	a, _, _ := mustCA(t)
	b, _, _ := mustCA(t)
	bundle := EncodeCerts([]*x509.Certificate{a.Cert, b.Cert})
	if !bytes.Equal(bundle, append(EncodeCert(a.Cert), EncodeCert(b.Cert)...)) {
		t.Error("EncodeCerts is not the concatenation of EncodeCert")
	}
	noise := append(append([]byte("text before\n"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("junk")})...), bundle...)
	got := ParseCerts(noise)
	if len(got) != 2 || !got[0].Equal(a.Cert) || !got[1].Equal(b.Cert) {
		t.Errorf("ParseCerts kept %d certificates in order, want the 2 that parse", len(got))
	}
}

func TestRenewal(t *testing.T) {
	ca, _, _ := mustCA(t)
	nb := ca.Cert.NotBefore
	validity := ca.Cert.NotAfter.Sub(nb)
	if want := ca.Cert.NotAfter.Add(-validity / 3); !RenewAt(ca.Cert).Equal(want) {
		t.Errorf("RenewAt %v, want %v (a third of the validity left)", RenewAt(ca.Cert), want)
	}
	for at, want := range map[time.Duration]bool{-time.Hour: true, 0: false, validity / 2: false, validity*2/3 - time.Second: false, validity * 2 / 3: true, validity * 3 / 4: true, validity + time.Hour: true} {
		if got := NeedsRenewal(ca.Cert, nb.Add(at)); got != want {
			t.Errorf("NeedsRenewal(notBefore%+v) = %v, want %v", at, got, want)
		}
	}
	for name, tc := range map[string]struct {
		due  time.Time
		want time.Time
	}{
		"unknown":  {time.Time{}, t0.Add(time.Hour)},
		"past":     {t0.Add(-time.Hour), t0},
		"soon":     {t0.Add(time.Minute), t0.Add(time.Minute)},
		"far away": {t0.Add(48 * time.Hour), t0.Add(time.Hour)},
	} {
		if got := NextCheck(t0, tc.due, time.Hour); !got.Equal(tc.want) {
			t.Errorf("%s: NextCheck %v, want %v", name, got, tc.want)
		}
	}
}

// stepClock ends each sleep at once, moving its time to the end of the sleep.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

// neverClock never ends a sleep: only a trigger or the context does.
type neverClock struct{ stepClock }

func (*neverClock) After(time.Duration) <-chan time.Time { return nil }

func TestLoopRunsEachPassWhenDue(t *testing.T) {
	clock := &stepClock{now: t0}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var passes []time.Time
	Loop{Clock: clock}.Run(ctx, time.Time{}, func(context.Context) time.Time {
		passes = append(passes, clock.Now())
		if len(passes) == 3 {
			cancel()
		}
		return clock.Now().Add(time.Duration(len(passes)) * time.Minute)
	})
	// Once ctx is done a sleep that ended too may still be followed by a pass (select picks either).
	if len(passes) < 3 || !passes[0].Equal(t0) || !passes[1].Equal(t0.Add(time.Minute)) || !passes[2].Equal(t0.Add(3*time.Minute)) {
		t.Errorf("passes at %v: want at once, then when each pass said", passes)
	}
}

func TestLoopWakesOnTrigger(t *testing.T) {
	clock := &neverClock{stepClock{now: t0}}
	triggers := make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var passes, triggered int
	done := make(chan struct{})
	go func() {
		defer close(done)
		Loop{Clock: clock, Triggers: triggers, OnTrigger: func() { triggered++ }}.Run(ctx, t0.Add(time.Hour), func(context.Context) time.Time {
			passes++
			return t0.Add(time.Hour)
		})
	}()
	triggers <- struct{}{} // the loop sleeps until the first due time: the trigger wakes it
	triggers <- struct{}{} // received only once the first pass returned
	cancel()
	<-done
	if passes != 2 || triggered != 2 {
		t.Errorf("passes %d, triggers seen %d; want a pass per trigger", passes, triggered)
	}
}

// A replaced CA is kept trusted up to, not including, its NotAfter.
func TestKeepReplacedCA(t *testing.T) {
	notAfter := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	c := &x509.Certificate{NotBefore: notAfter.Add(-24 * time.Hour), NotAfter: notAfter}
	for _, tc := range []struct {
		now  time.Time
		want bool
	}{
		{notAfter.Add(-time.Second), true},
		{notAfter, false},
		{notAfter.Add(time.Second), false},
	} {
		if got := KeepReplacedCA(c, tc.now); got != tc.want {
			t.Errorf("KeepReplacedCA at %s (NotAfter %s) = %v, want %v", tc.now, notAfter, got, tc.want)
		}
	}
}
