package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/olmv1/olmv1/catalogd/internal/serve"
	"github.com/olmv1/olmv1/platform/boot/boottest"
)

// rotateSecretVolume writes a new key pair for cn the way kubelet updates the Secret volume the chart
// mounts at /etc/olmv1/tls.
func rotateSecretVolume(t *testing.T, dir, cn string) {
	t.Helper()
	check(t, boottest.RotateServingCert(dir, cn))
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func servedCN(t *testing.T, addr string) string {
	t.Helper()
	cn, err := boottest.ServedCN(addr)
	check(t, err)
	return cn
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
	if err := srv.CertReady(nil); err != nil {
		t.Fatalf("readiness with a good certificate: %v", err)
	}
	// A rotation that writes a broken key: not ready, with the reason; the last good one is served.
	check(t, os.WriteFile(filepath.Join(dir, "tls.key"), []byte("broken"), 0o600))
	if err := srv.CertReady(nil); err == nil || !strings.Contains(err.Error(), "cannot be loaded (still serving the previous one)") {
		t.Fatalf("readiness with a broken key: %v", err)
	}
	if got := servedCN(t, addr.String()); got != "second" {
		t.Fatalf("after a broken rotation serving %q, want the previous certificate", got)
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
