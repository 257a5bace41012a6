package source

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/source/sourcetest"
)

// tls13Only is what a TLS profile with TLS 1.3 as its minimum applies (boot.TLSProfile.Apply).
func tls13Only(c *tls.Config) { c.MinVersion = tls.VersionTLS13 }

// tls12Server serves h over HTTPS with TLS 1.2 at most.
func tls12Server(t *testing.T, h http.Handler) *httptest.Server {
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{MaxVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// Config.ClientTLS governs HTTP sources: with TLS 1.3 as the minimum, a TLS 1.2 server is refused
// in the handshake; the caller's Transport is left as it was.
func TestClientTLSAppliesToHTTPSources(t *testing.T) {
	fs := &fileServer{files: map[string][]byte{}, etags: map[string]string{}}
	fs.set("/catalog.json", []byte("{}"), "")
	srv := tls12Server(t, fs)
	src := httpSrc(srv.URL + "/catalog.json")
	src.HTTP.InsecureSkipTLSVerify = true

	if _, err := newTestUnpacker(t, nil).Unpack(ctx(t), "catalog/tls12", src, Options{}); err != nil {
		t.Fatalf("without a profile a TLS 1.2 server is fine: %v", err)
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	u := newTestUnpacker(t, nil, func(c *Config) { c.Transport, c.ClientTLS = base, tls13Only })
	_, err := u.Unpack(ctx(t), "catalog/tls12", src, Options{})
	wantError(t, err, KindUnreachable, "protocol version not supported")
	// (Cloning an http.Transport gives it its HTTP/2 TLS defaults; the profile must not be there.)
	if base.TLSClientConfig != nil && base.TLSClientConfig.MinVersion != 0 {
		t.Errorf("New changed the caller's Transport: minimum version %s", tls.VersionName(base.TLSClientConfig.MinVersion))
	}
}

// Git over https uses Config.Transport (its roots here) and so Config.ClientTLS.
func TestClientTLSAppliesToGitOverHTTPS(t *testing.T) {
	repo := newDemoRepo(t)
	gs := sourcetest.NewGitServer(t)
	gs.Add("demo", repo.Repo)
	target, err := url.Parse(gs.URL)
	if err != nil {
		t.Fatal(err)
	}
	srv := tls12Server(t, httputil.NewSingleHostReverseProxy(target))
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	trusting := func() *http.Transport {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{RootCAs: roots}
		return tr
	}
	src := gitSrc(srv.URL+"/demo.git", rukpakv1alpha1.GitRef{Branch: "main"}, "catalog")

	u := newTestUnpacker(t, nil, func(c *Config) { c.Transport = trusting() })
	if _, err := u.Unpack(ctx(t), "catalog/git", src, Options{}); err != nil {
		t.Fatalf("git over https with the Transport's roots: %v", err)
	}
	u = newTestUnpacker(t, nil, func(c *Config) { c.Transport, c.ClientTLS = trusting(), tls13Only })
	_, err = u.Unpack(ctx(t), "catalog/git", src, Options{})
	wantError(t, err, KindUnreachable, "protocol version not supported")
}

// Image pulls: a registry behind a TLS 1.2 endpoint is pulled from without a profile and refused
// with TLS 1.3 as the minimum.
func TestClientTLSAppliesToImagePulls(t *testing.T) {
	reg := sourcetest.NewRegistry(t)
	reg.Push(t, catalogImage(t, "catalog"), "catalogs/demo:v1")
	target, err := url.Parse("http://" + reg.Host)
	if err != nil {
		t.Fatal(err)
	}
	srv := tls12Server(t, httputil.NewSingleHostReverseProxy(target))
	src := imageSrc(strings.TrimPrefix(srv.URL, "https://") + "/catalogs/demo:v1")
	src.Image.InsecureSkipTLSVerify = true

	if _, err := newTestUnpacker(t, nil).Unpack(ctx(t), "catalog/demo", src, catalogOpts); err != nil {
		t.Fatalf("without a profile the TLS 1.2 registry is fine: %v", err)
	}
	u := newTestUnpacker(t, nil, func(c *Config) { c.ClientTLS = tls13Only })
	_, err = u.Unpack(ctx(t), "catalog/demo", src, catalogOpts)
	wantError(t, err, KindUnreachable, "protocol version not supported")
}
