package imagebuild_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"

	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

// countingTransport sends every request to one address, whatever host the request names, and
// counts them.
type countingTransport struct {
	requests atomic.Int64
	base     *http.Transport
}

func redirectingTransport(addr string) *countingTransport {
	return &countingTransport{base: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}}
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.requests.Add(1)
	return c.base.RoundTrip(r)
}

func TestPushOptions(t *testing.T) {
	host := startRegistry(t)
	img, err := imagebuild.PlainBundleImage(plainFixture)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// registry.test is not a loopback name, so without WithInsecure the push goes over HTTPS.
	rt := redirectingTransport(host)
	_, err = imagebuild.Push(ctx, img, "registry.test/bundles/plain:v1", imagebuild.WithTransport(rt),
		imagebuild.WithKeychain(authn.NewMultiKeychain()))
	assertErrorContains(t, err, "push registry.test/bundles/plain:v1", "pass WithInsecure()")

	d, err := imagebuild.Push(ctx, img, "registry.test/bundles/plain:v1", imagebuild.WithTransport(rt),
		imagebuild.WithKeychain(authn.NewMultiKeychain()), imagebuild.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	want := "registry.test/bundles/plain@" + digestOf(t, img).String()
	if d.String() != want {
		t.Errorf("Push returned %q, want %q", d, want)
	}
	if rt.requests.Load() == 0 {
		t.Error("the custom transport was not used")
	}

	// A reference without a tag is pushed as latest.
	d, err = imagebuild.Push(ctx, img, host+"/bundles/untagged")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(d.String(), host+"/bundles/untagged@sha256:") {
		t.Errorf("Push returned %q", d)
	}
}

func TestPushErrors(t *testing.T) {
	img, err := imagebuild.PlainBundleImage(plainFixture)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	_, err = imagebuild.Push(ctx, img, "Not A Reference")
	assertErrorContains(t, err, `image reference "Not A Reference"`, "expected e.g.")

	closed := httptest.NewServer(http.NotFoundHandler())
	addr := strings.TrimPrefix(closed.URL, "http://")
	closed.Close()
	_, err = imagebuild.Push(ctx, img, addr+"/bundles/plain:v1")
	assertErrorContains(t, err, "push "+addr+"/bundles/plain:v1", "is the registry running")
}
