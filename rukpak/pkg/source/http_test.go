package source

import (
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
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
