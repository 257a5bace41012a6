package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/olmv1/olmv1/catalogd/internal/serve"
)

// rotateSecretVolume writes a key pair for cn the way kubelet updates a Secret volume (the layout the
// chart mounts at /etc/olmv1/tls): files in a timestamped directory, ..data pointing at it, tls.crt and
// tls.key symlinks through ..data; a rotation renames ..data atomically and removes the old directory.
func rotateSecretVolume(t *testing.T, dir, cn string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	check(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	check(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	check(t, err)
	ts := filepath.Join(dir, "..ts-"+cn)
	check(t, os.MkdirAll(ts, 0o755))
	check(t, os.WriteFile(filepath.Join(ts, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644))
	check(t, os.WriteFile(filepath.Join(ts, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	old, _ := os.Readlink(filepath.Join(dir, "..data"))
	check(t, os.Symlink(filepath.Base(ts), filepath.Join(dir, "..data_tmp")))
	check(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
	for _, f := range []string{"tls.crt", "tls.key"} {
		if _, err := os.Lstat(filepath.Join(dir, f)); os.IsNotExist(err) {
			check(t, os.Symlink(filepath.Join("..data", f), filepath.Join(dir, f)))
		}
	}
	if old != "" {
		check(t, os.RemoveAll(filepath.Join(dir, old)))
	}
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func servedCN(t *testing.T, addr string) string {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reading the served certificate
	check(t, err)
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
}

// The content endpoint is started with the chart's flags (--tls-cert-file/--tls-key-file in a Secret
// volume) and serves a rotated certificate without a restart.
func TestContentEndpointReloadsRotatedCertificate(t *testing.T) {
	dir := t.TempDir()
	rotateSecretVolume(t, dir, "first")
	srv := &serve.Server{
		Addr:     "127.0.0.1:0",
		CertFile: filepath.Join(dir, "tls.crt"),
		KeyFile:  filepath.Join(dir, "tls.key"),
		Handler:  http.NotFoundHandler(),
		Log:      logr.Discard(),
	}
	addr, err := srv.Listen()
	check(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()

	var got string
	served := func(want string) func(context.Context) (bool, error) {
		return func(context.Context) (bool, error) {
			got = servedCN(t, addr.String())
			return got == want, nil
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, served("first")); err != nil {
		t.Fatalf("serving %q, want first: %v", got, err)
	}
	rotateSecretVolume(t, dir, "second")
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, served("second")); err != nil {
		t.Fatalf("after rotation still serving %q: %v", got, err)
	}
	cancel()
	check(t, <-done)
}

func TestMetadataListenAddress(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{":7444", "0.0.0.0:7444"},
		{"127.0.0.1:7444", "127.0.0.1:7444"},
		{"[::1]:7444", "[::1]:7444"},
		{"localhost:7444", ""},
		{"7444", ""},
		{":http", ""},
	} {
		got, port, err := metadataListenAddress(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("%q: want an error, got %q", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want || port != 7444 {
			t.Errorf("%q: got %q %d %v, want %q", tc.in, got, port, err, tc.want)
		}
	}
}
