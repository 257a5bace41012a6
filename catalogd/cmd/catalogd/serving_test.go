package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/olmv1/olmv1/catalogd/internal/metadataapi"
	"github.com/olmv1/olmv1/catalogd/internal/serve"
	"github.com/olmv1/olmv1/catalogd/internal/storage"
	"github.com/olmv1/olmv1/platform/boot"
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

// The content endpoint and the CatalogMetadata API serve the one --tls-cert-dir certificate (a Secret
// volume) and both serve a rotated certificate without a restart; a broken rotation makes the shared
// certificate not ready while the last good one is still served by both.
func TestServersShareTheRotatedCertificate(t *testing.T) {
	dir := t.TempDir()
	rotateSecretVolume(t, dir, "first")
	crt, key := boot.CertDirFiles(dir)
	cert, err := boot.NewServingCert(boot.ServingCertOptions{What: "catalogd", Flag: "--tls-cert-dir", CertFile: crt, KeyFile: key, ReloadInterval: 100 * time.Millisecond})
	check(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var running sync.WaitGroup
	start := func(r interface{ Start(context.Context) error }) {
		running.Add(1)
		go func() {
			defer running.Done()
			if err := r.Start(ctx); err != nil {
				t.Errorf("%T: %v", r, err)
			}
		}()
	}
	start(cert) // boot's manager does this in catalogd

	content := &serve.Server{Addr: "127.0.0.1:0", Cert: cert, Handler: http.NotFoundHandler(), Log: logr.Discard()}
	contentAddr, err := content.Listen()
	check(t, err)
	start(content)
	store, err := storage.New(t.TempDir())
	check(t, err)
	hub, err := metadataapi.NewHub(metadataapi.StoreReader{Store: store})
	check(t, err)
	metadata, err := metadataapi.NewServer(metadataapi.ServerOptions{BindAddress: "127.0.0.1:0", Cert: cert, Log: logr.Discard()}, hub)
	check(t, err)
	start(metadata)
	addrs := map[string]string{"content": contentAddr.String(), "metadata": metadata.Addr().String()}

	var got string
	served := func(addr, want string) func(context.Context) (bool, error) {
		return func(context.Context) (bool, error) {
			got = servedCN(t, addr)
			return got == want, nil
		}
	}
	for name, addr := range addrs {
		if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, served(addr, "first")); err != nil {
			t.Fatalf("%s: serving %q, want first: %v", name, got, err)
		}
	}
	rotateSecretVolume(t, dir, "second")
	for name, addr := range addrs {
		if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, served(addr, "second")); err != nil {
			t.Fatalf("%s: after rotation still serving %q: %v", name, got, err)
		}
	}
	check(t, cert.Ready(nil))
	// A rotation that writes a broken key: not ready, with the reason; the last good one is served.
	check(t, os.WriteFile(filepath.Join(dir, "tls.key"), []byte("broken"), 0o600))
	if err := cert.Ready(nil); err == nil || !strings.Contains(err.Error(), "cannot be loaded (still serving the previous one)") {
		t.Fatalf("readiness with a broken key: %v", err)
	}
	for name, addr := range addrs {
		if got := servedCN(t, addr); got != "second" {
			t.Fatalf("%s: after a broken rotation serving %q, want the previous certificate", name, got)
		}
	}
	cancel()
	running.Wait()
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
