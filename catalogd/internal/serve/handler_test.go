package serve

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/olmv1/olmv1/catalogd/internal/fbc"
	"github.com/olmv1/olmv1/catalogd/internal/storage"
)

const testCatalog = `schema: olm.package
name: foo
defaultChannel: stable
---
schema: olm.channel
package: foo
name: stable
entries:
- name: foo.v0.1.0
---
schema: olm.bundle
package: foo
name: foo.v0.1.0
image: example.com/foo:v0.1.0
properties:
- type: olm.package
  value: {packageName: foo, version: 0.1.0}
---
schema: olm.package
name: bar
defaultChannel: stable
---
schema: olm.channel
package: bar
name: stable
entries:
- name: bar.v1.0.0
---
schema: olm.bundle
package: bar
name: bar.v1.0.0
image: example.com/bar:v1.0.0
properties:
- type: olm.package
  value: {packageName: bar, version: 1.0.0}
`

func newTestServer(t *testing.T) (*httptest.Server, *fbc.Catalog) {
	t.Helper()
	cat, err := fbc.Load(t.Context(), fstest.MapFS{"c.yaml": &fstest.MapFile{Data: []byte(testCatalog)}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := storage.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put("cat", cat); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&Handler{Store: s})
	t.Cleanup(srv.Close)
	return srv, cat
}

func do(t *testing.T, method, url string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	tr := &http.Transport{DisableCompression: true}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestAllJSON(t *testing.T) {
	srv, cat := newTestServer(t)
	var want bytes.Buffer
	_, _ = cat.WriteTo(&want)
	url := srv.URL + "/catalogs/cat/all.json"

	resp, body := do(t, http.MethodGet, url, nil)
	if resp.StatusCode != 200 || body != want.String() {
		t.Fatalf("GET: %d %q", resp.StatusCode, body)
	}
	etag := resp.Header.Get("ETag")
	if etag != `"`+cat.Hash+`"` || resp.Header.Get("Last-Modified") == "" || resp.Header.Get("Content-Type") != ContentType {
		t.Errorf("headers %v", resp.Header)
	}

	resp, body = do(t, http.MethodHead, url, nil)
	if resp.StatusCode != 200 || body != "" || resp.ContentLength != int64(want.Len()) {
		t.Errorf("HEAD: %d len %d body %q", resp.StatusCode, resp.ContentLength, body)
	}

	resp, _ = do(t, http.MethodGet, url, map[string]string{"If-None-Match": etag})
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: %d", resp.StatusCode)
	}
	resp, _ = do(t, http.MethodGet, url, map[string]string{"If-None-Match": `"sha256:other"`})
	if resp.StatusCode != 200 {
		t.Errorf("other etag: %d", resp.StatusCode)
	}
	resp, _ = do(t, http.MethodGet, url, map[string]string{"If-Modified-Since": resp.Header.Get("Last-Modified")})
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-Modified-Since: %d", resp.StatusCode)
	}

	resp, body = do(t, http.MethodGet, url, map[string]string{"Accept-Encoding": "gzip"})
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("gzip: %d %v", resp.StatusCode, resp.Header)
	}
	zr, err := gzip.NewReader(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	unzipped, _ := io.ReadAll(zr)
	if string(unzipped) != want.String() {
		t.Errorf("gunzipped body differs: %q", unzipped)
	}

	for _, p := range []string{"/catalogs/nope/all.json", "/catalogs/cat/other", "/x"} {
		if resp, _ := do(t, http.MethodGet, srv.URL+p, nil); resp.StatusCode != 404 {
			t.Errorf("%s: %d", p, resp.StatusCode)
		}
	}
	if resp, _ := do(t, http.MethodPost, url, nil); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", resp.StatusCode)
	}
}

func TestMetas(t *testing.T) {
	srv, _ := newTestServer(t)
	base := srv.URL + "/catalogs/cat/api/v1/metas"
	cases := map[string]struct {
		query string
		lines int
		has   string
	}{
		"package":          {"?package=foo", 3, `"name":"foo"`},
		"schema":           {"?schema=olm.bundle", 2, `"name":"bar.v1.0.0"`},
		"schema+package":   {"?schema=olm.bundle&package=bar", 1, `"name":"bar.v1.0.0"`},
		"name":             {"?name=foo.v0.1.0", 1, `"name":"foo.v0.1.0"`},
		"none matches":     {"?schema=olm.bundle&package=nope", 0, ""},
		"no filter is all": {"", 6, `"schema":"olm.package"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resp, body := do(t, http.MethodGet, base+tc.query, nil)
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if n := strings.Count(body, "\n"); n != tc.lines || !strings.Contains(body, tc.has) {
				t.Errorf("%d lines, want %d:\n%s", n, tc.lines, body)
			}
		})
	}
}
