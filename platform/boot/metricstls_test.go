package boot

import (
	"context"
	"crypto/tls"
	"flag"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// parseFlags parses args as a component's command line.
func parseFlags(t *testing.T, args ...string) Options {
	t.Helper()
	var o Options
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o.BindFlags(fs, "test", 8443, 8081)
	must(t, fs.Parse(args))
	return o
}

// TestMetricsServerUsesTheTLSProfile starts controller-runtime's metrics server with the options
// boot gives it under --tls-profile=Modern: a TLS 1.2 client is refused, and a TLS 1.3 client gets
// its metrics (through the TokenReview/SubjectAccessReview filter) over the post-quantum hybrid.
func TestMetricsServerUsesTheTLSProfile(t *testing.T) {
	o := parseFlags(t, "--metrics-bind-address=127.0.0.1:0", "--tls-profile=Modern")
	opts, _, err := o.metricsOptions()
	must(t, err)
	var tokenReviews atomic.Int32
	cfg := &rest.Config{Host: fakeReviewServer(t, &tokenReviews).URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}}
	httpClient, err := rest.HTTPClientFor(cfg)
	must(t, err)
	srv, err := metricsserver.NewServer(opts, cfg, httpClient)
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	bound, ok := srv.(interface{ GetBindAddr() string })
	if !ok {
		t.Fatalf("the metrics server %T does not report its address", srv)
	}
	var addr string
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		addr = bound.GetBindAddr()
		return addr != "", nil
	}); err != nil {
		t.Fatalf("the metrics server did not listen: %v", err)
	}

	if err := handshake(addr, &tls.Config{MaxVersion: tls.VersionTLS12}); err == nil || !strings.Contains(err.Error(), "protocol version not supported") {
		t.Errorf("a TLS 1.2 client: want the handshake refused, got %v", err)
	}

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, //nolint:gosec // the generated self-signed certificate
		VerifyConnection: func(cs tls.ConnectionState) error {
			if cs.Version != tls.VersionTLS13 || cs.CurveID != tls.X25519MLKEM768 {
				t.Errorf("negotiated %s with %s, want TLS 1.3 with X25519MLKEM768", tls.VersionName(cs.Version), cs.CurveID)
			}
			return nil
		},
	}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
	must(t, err)
	req.Header.Set("Authorization", "Bearer good")
	resp, err := client.Do(req)
	must(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "# TYPE") {
		t.Errorf("GET /metrics over TLS 1.3: %d %.200s", resp.StatusCode, body)
	}
}

// handshake completes a TLS handshake with addr and hangs up.
func handshake(addr string, cfg *tls.Config) error {
	cfg.InsecureSkipVerify = true //nolint:gosec // only the handshake's parameters matter
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return err
	}
	return c.Close()
}

// TestMetricsOptionsRefuseABadProfile: a bad --tls-* combination fails the manager's creation too.
func TestMetricsOptionsRefuseABadProfile(t *testing.T) {
	o := parseFlags(t, "--metrics-bind-address=127.0.0.1:0", "--tls-profile=Custom", "--tls-cipher-suites=TLS_FOO")
	if _, _, err := o.metricsOptions(); err == nil || !strings.Contains(err.Error(), "--tls-cipher-suites: unknown or not implemented by Go: TLS_FOO") {
		t.Errorf("want the unknown suite named, got %v", err)
	}
}
