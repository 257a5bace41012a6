package source

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// fileServer serves fixed files with an ETag and honours If-None-Match; it counts full downloads.
type fileServer struct {
	mu        sync.Mutex
	files     map[string][]byte
	etags     map[string]string
	downloads int
	notMod    int
	status    int
}

func (s *fileServer) set(path string, body []byte, etag string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[path], s.etags[path] = body, etag
}

func (s *fileServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status != 0 {
		w.WriteHeader(s.status)
		return
	}
	body, ok := s.files[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	etag := s.etags[r.URL.Path]
	if etag != "" {
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			s.notMod++
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	s.downloads++
	_, _ = w.Write(body)
}

func newFileServer(t *testing.T, tlsServer bool) (*fileServer, *httptest.Server) {
	fs := &fileServer{files: map[string][]byte{}, etags: map[string]string{}}
	var srv *httptest.Server
	if tlsServer {
		srv = httptest.NewTLSServer(fs)
	} else {
		srv = httptest.NewServer(fs)
	}
	t.Cleanup(srv.Close)
	return fs, srv
}

func httpSrc(url string) rukpakv1alpha1.Source {
	return rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeHTTP, HTTP: &rukpakv1alpha1.HTTPSource{URL: url}}
}

// An archive is extracted; asked again with its ETag the server answers 304 and nothing is
// downloaded; a new ETag brings new content.
func TestHTTPArchiveWithETag(t *testing.T) {
	fs, srv := newFileServer(t, false)
	fs.set("/catalog.tar.gz", gzipBytes(t, tarBytes(t, file("configs/catalog.json", "v1"))), `"v1"`)
	u := newTestUnpacker(t, nil)
	src := httpSrc(srv.URL + "/catalog.tar.gz")

	first, err := u.Unpack(ctx(t), "catalog/h", src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	wantTree(t, first.Dir, "configs/", "configs/catalog.json=v1")
	if r := first.ResolvedSource.HTTP; r.URL != srv.URL+"/catalog.tar.gz" || r.ETag != `"v1"` {
		t.Errorf("resolved %+v", r)
	}

	again, err := u.Unpack(ctx(t), "catalog/h", src, Options{Previous: &first.ResolvedSource})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Unchanged || again.Dir != first.Dir || fs.downloads != 1 || fs.notMod != 1 {
		t.Errorf("second unpack: Unchanged=%v sameDir=%v downloads=%d notModified=%d; want true, true, 1, 1",
			again.Unchanged, again.Dir == first.Dir, fs.downloads, fs.notMod)
	}

	fs.set("/catalog.tar.gz", gzipBytes(t, tarBytes(t, file("configs/catalog.json", "v2"))), `"v2"`)
	third, err := u.Unpack(ctx(t), "catalog/h", src, Options{Previous: &again.ResolvedSource})
	if err != nil {
		t.Fatal(err)
	}
	if third.Unchanged || third.ResolvedSource.HTTP.ETag != `"v2"` {
		t.Errorf("after a change: Unchanged=%v etag=%s", third.Unchanged, third.ResolvedSource.HTTP.ETag)
	}
	wantTree(t, third.Dir, "configs/", "configs/catalog.json=v2")
	if _, err := os.Stat(first.Dir); !os.IsNotExist(err) {
		t.Errorf("the previous content %s was not removed (%v)", first.Dir, err)
	}
}

func TestHTTPSingleFile(t *testing.T) {
	fs, srv := newFileServer(t, false)
	fs.set("/fbc/catalog.json", []byte(`{"schema":"olm.package","name":"demo"}`), "")
	res, err := newTestUnpacker(t, nil).Unpack(ctx(t), "catalog/f", httpSrc(srv.URL+"/fbc/catalog.json"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	wantTree(t, res.Dir, `catalog.json={"schema":"olm.package","name":"demo"}`)
}

func TestHTTPErrors(t *testing.T) {
	fs, srv := newFileServer(t, false)
	fs.set("/traversal.tgz", gzipBytes(t, tarBytes(t, file("../../etc/cron.d/evil", "x"))), "")
	fs.set("/escape.tar", tarBytes(t, symlink("link", "/etc/shadow")), "")
	bomb := make([]byte, 4<<20)
	fs.set("/bomb.tar.gz", gzipBytes(t, tarBytes(t, file("zeros", string(bomb)))), "")
	fs.set("/big.json", bomb, "")
	u := newTestUnpacker(t, nil, func(c *Config) { c.Limits.MaxBytes = 1 << 20 })

	for _, tc := range []struct {
		name, path string
		kind       Kind
		retryable  bool
		message    []string
	}{
		{"not found", "/missing.tar.gz", KindNotFound, true, []string{`URL "` + srv.URL + `/missing.tar.gz" not found (HTTP 404 Not Found) (check spec.source.http.url)`}},
		{"path traversal", "/traversal.tgz", KindInvalidContent, false, []string{`entry "../../etc/cron.d/evil" contains a '..' element`}},
		{"absolute symlink", "/escape.tar", KindInvalidContent, false, []string{`symlink "link" points to the absolute path "/etc/shadow"`}},
		{"decompression bomb", "/bomb.tar.gz", KindTooLarge, false, []string{"larger than 1.0 MiB"}},
		{"file too large", "/big.json", KindTooLarge, false, []string{"larger than 1.0 MiB"}},
		{"no file name", "/", KindInvalidSource, false, []string{"does not end in a file name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := u.Unpack(ctx(t), "catalog/e", httpSrc(srv.URL+tc.path), Options{})
			if e := wantError(t, err, tc.kind, tc.message...); e.Retryable != tc.retryable {
				t.Errorf("retryable=%v, want %v", e.Retryable, tc.retryable)
			}
			assertCacheEmpty(t, u)
		})
	}

	fs.mu.Lock()
	fs.status = http.StatusInternalServerError
	fs.mu.Unlock()
	_, err := u.Unpack(ctx(t), "catalog/e", httpSrc(srv.URL+"/big.json"), Options{})
	if e := wantError(t, err, KindUnreachable, "the server answered HTTP 500 Internal Server Error; will retry"); !e.Retryable {
		t.Error("a server error is retryable")
	}

	_, err = u.Unpack(ctx(t), "catalog/e", httpSrc("ftp://example.com/x.tgz"), Options{})
	wantError(t, err, KindInvalidSource, "is not an absolute http:// or https:// URL")
}

func TestHTTPTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	u := newTestUnpacker(t, nil, func(c *Config) { c.Timeout = 200 * time.Millisecond })
	_, err := u.Unpack(ctx(t), "catalog/slow", httpSrc(srv.URL+"/catalog.json"), Options{})
	wantError(t, err, KindUnreachable, "timed out after 200ms")
}

// A server with a certificate from a private CA: refused by default, accepted with the CA from
// caSecret, or with insecureSkipTLSVerify.
func TestHTTPSCustomCA(t *testing.T) {
	fs, srv := newFileServer(t, true)
	fs.set("/catalog.json", []byte("{}"), "")
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	c := fakeClient(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "server-ca", Namespace: testNamespace}, Data: map[string][]byte{"ca.crt": caPEM}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "no-ca", Namespace: testNamespace}, Data: map[string][]byte{"tls.crt": caPEM}},
	)
	u := newTestUnpacker(t, c)
	opts := Options{Namespace: testNamespace}

	_, err := u.Unpack(ctx(t), "catalog/tls", httpSrc(srv.URL+"/catalog.json"), opts)
	wantError(t, err, KindUnreachable, "TLS certificate is not trusted", "set spec.source.http.caSecret")

	src := httpSrc(srv.URL + "/catalog.json")
	src.HTTP.CASecret = "no-ca"
	_, err = u.Unpack(ctx(t), "catalog/tls", src, opts)
	wantError(t, err, KindInvalidSource, `Secret "no-ca" (spec.source.http.caSecret) has no ca.crt key`)

	src.HTTP.CASecret = "server-ca"
	res, err := u.Unpack(ctx(t), "catalog/tls", src, opts)
	if err != nil {
		t.Fatal(err)
	}
	wantTree(t, res.Dir, "catalog.json={}")

	insecure := httpSrc(srv.URL + "/catalog.json")
	insecure.HTTP.InsecureSkipTLSVerify = true
	if _, err := u.Unpack(ctx(t), "catalog/insecure", insecure, opts); err != nil {
		t.Fatal(err)
	}
}

// redirector answers every request with a redirect to to(path) and counts the requests.
type redirector struct {
	mu       sync.Mutex
	requests int
	to       func(path string) string
}

func (r *redirector) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.requests++
	r.mu.Unlock()
	http.Redirect(w, req, r.to(req.URL.Path), http.StatusFound)
}

func (r *redirector) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

func newRedirector(t *testing.T, tlsServer bool, to func(path string) string) (*redirector, *httptest.Server) {
	r := &redirector{to: to}
	srv := httptest.NewUnstartedServer(r)
	if tlsServer {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return r, srv
}

// Redirects: followed on the same scheme, host and port, at most 5 in a row; to another host only
// when spec.source.http.allowRedirectsToOtherHosts is set; from https to http never.
func TestHTTPRedirects(t *testing.T) {
	fs, target := newFileServer(t, false)
	fs.set("/catalog.json", []byte(`{"from":"target"}`), "")
	u := newTestUnpacker(t, nil)

	t.Run("same host is followed", func(t *testing.T) {
		// /hop/5 -> /hop/4 -> ... -> /hop/1 -> /catalog.json on the same server: 5 redirects, the most
		// that are followed.
		mux := http.NewServeMux()
		mux.HandleFunc("/hop/", func(w http.ResponseWriter, r *http.Request) {
			n := strings.TrimPrefix(r.URL.Path, "/hop/")
			next := "/catalog.json"
			if n != "1" {
				next = fmt.Sprintf("/hop/%d", n[0]-'0'-1)
			}
			http.Redirect(w, r, next, http.StatusMovedPermanently)
		})
		mux.Handle("/catalog.json", fs)
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		res, err := u.Unpack(ctx(t), "catalog/same", httpSrc(srv.URL+"/hop/5/catalog.json"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		wantTree(t, res.Dir, `catalog.json={"from":"target"}`)
		if got := res.ResolvedSource.HTTP.URL; got != srv.URL+"/catalog.json" {
			t.Errorf("resolved URL %s, want the URL after the redirects %s", got, srv.URL+"/catalog.json")
		}
	})

	// The origin redirects every path to the same path on target, another port of 127.0.0.1.
	_, origin := newRedirector(t, false, func(p string) string { return target.URL + p })

	t.Run("other host is refused", func(t *testing.T) {
		u := newTestUnpacker(t, nil)
		fs.mu.Lock()
		before := fs.downloads
		fs.mu.Unlock()
		_, err := u.Unpack(ctx(t), "catalog/other", httpSrc(origin.URL+"/catalog.json"), Options{})
		e := wantError(t, err, KindInvalidSource,
			fmt.Sprintf(`URL "%[1]s/catalog.json": "%[1]s/catalog.json" redirected to "%[2]s/catalog.json", on another host (scheme, host or port differ); redirects to other hosts are not followed unless allowed: set spec.source.http.allowRedirectsToOtherHosts to true to follow it`,
				origin.URL, target.URL))
		if e.Retryable {
			t.Error("a redirect the spec does not allow is not retryable")
		}
		fs.mu.Lock()
		after := fs.downloads
		fs.mu.Unlock()
		if after != before {
			t.Error("the other host was asked for the file")
		}
		assertCacheEmpty(t, u)
	})

	t.Run("other host is followed when allowed", func(t *testing.T) {
		src := httpSrc(origin.URL + "/catalog.json")
		src.HTTP.AllowRedirectsToOtherHosts = true
		res, err := u.Unpack(ctx(t), "catalog/other", src, Options{})
		if err != nil {
			t.Fatal(err)
		}
		wantTree(t, res.Dir, `catalog.json={"from":"target"}`)
		if got := res.ResolvedSource.HTTP.URL; got != target.URL+"/catalog.json" {
			t.Errorf("resolved URL %s, want %s", got, target.URL+"/catalog.json")
		}
	})

	t.Run("a redirect loop is bounded", func(t *testing.T) {
		loop, srv := newRedirector(t, false, func(p string) string { return p })
		src := httpSrc(srv.URL + "/loop.json")
		src.HTTP.AllowRedirectsToOtherHosts = true // the bound holds whatever the policy on hosts
		_, err := u.Unpack(ctx(t), "catalog/loop", src, Options{})
		e := wantError(t, err, KindUnreachable, fmt.Sprintf(`URL "%[1]s/loop.json": the server redirected more than 5 times in a row (the last redirect, from "%[1]s/loop.json", was to "%[1]s/loop.json"): a redirect loop; will retry with backoff (check spec.source.http.url)`, srv.URL))
		if !e.Retryable {
			t.Error("a redirect loop is the server's to fix: want retryable")
		}
		if n := loop.count(); n != 6 {
			t.Errorf("the server got %d requests, want 6 (the first and 5 redirects)", n)
		}
	})

	t.Run("https to http is refused", func(t *testing.T) {
		_, tlsOrigin := newRedirector(t, true, func(p string) string { return target.URL + p })
		for _, allow := range []bool{false, true} {
			src := httpSrc(tlsOrigin.URL + "/catalog.json")
			src.HTTP.InsecureSkipTLSVerify = true
			src.HTTP.AllowRedirectsToOtherHosts = allow
			_, err := u.Unpack(ctx(t), "catalog/downgrade", src, Options{})
			wantError(t, err, KindInvalidSource, fmt.Sprintf(`"%s/catalog.json" redirected to "%s/catalog.json", from https to plain http; such redirects are never followed (if plain http is acceptable, set spec.source.http.url to the http:// URL)`,
				tlsOrigin.URL, target.URL))
		}
	})

	t.Run("http to https on the same host name says to use https", func(t *testing.T) {
		_, tlsTarget := newFileServer(t, true)
		_, plain := newRedirector(t, false, func(p string) string { return tlsTarget.URL + p })
		_, err := u.Unpack(ctx(t), "catalog/upgrade", httpSrc(plain.URL+"/catalog.json"), Options{})
		wantError(t, err, KindInvalidSource, "on another host", "set spec.source.http.url to the https:// URL, or set spec.source.http.allowRedirectsToOtherHosts to true to follow it")
	})

	t.Run("query strings are not shown", func(t *testing.T) {
		_, signed := newRedirector(t, false, func(p string) string { return target.URL + p + "?X-Signature=s3cret" })
		_, err := u.Unpack(ctx(t), "catalog/signed", httpSrc(signed.URL+"/catalog.json"), Options{})
		e := wantError(t, err, KindInvalidSource, fmt.Sprintf(`redirected to "%s/catalog.json?..."`, target.URL))
		if strings.Contains(e.Message, "s3cret") {
			t.Errorf("the message shows the redirect's query: %s", e.Message)
		}
	})
}

// A busy server (429 or 503): retryable, with the server's Retry-After when it sent one.
func TestHTTPServerBusy(t *testing.T) {
	var mu sync.Mutex
	status, retryAfter := 0, ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	u := newTestUnpacker(t, nil)
	for _, tc := range []struct {
		status     int
		retryAfter string
		message    string
		want       time.Duration
	}{
		{http.StatusTooManyRequests, "", "the server answered HTTP 429 Too Many Requests; will retry with backoff", 0},
		{http.StatusTooManyRequests, "12", "the server answered HTTP 429 Too Many Requests; will retry in 12s, as the server asked (Retry-After)", 12 * time.Second},
		{http.StatusServiceUnavailable, "60", "the server answered HTTP 503 Service Unavailable; will retry in 1m0s, as the server asked (Retry-After)", time.Minute},
		{http.StatusBadGateway, "60", "the server answered HTTP 502 Bad Gateway; will retry with backoff", 0}, // Retry-After is for 429 and 503
	} {
		mu.Lock()
		status, retryAfter = tc.status, tc.retryAfter
		mu.Unlock()
		_, err := u.Unpack(ctx(t), "catalog/busy", httpSrc(srv.URL+"/catalog.json"), Options{})
		e := wantError(t, err, KindUnreachable, `URL "`+srv.URL+`/catalog.json": `+tc.message)
		if !e.Retryable || e.RetryAfter != tc.want {
			t.Errorf("%d %q: retryable=%v RetryAfter=%s, want true and %s", tc.status, tc.retryAfter, e.Retryable, e.RetryAfter, tc.want)
		}
	}
}
