package source

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

// endlessRefsServer advertises references without end over the smart HTTP protocol, counting the
// bytes it managed to send.
func endlessRefsServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/repo.git/info/refs" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		pkt := func(s string) []byte { return []byte(fmt.Sprintf("%04x%s", len(s)+4, s)) }
		write := func(b []byte) bool {
			n, err := w.Write(b)
			sent.Add(int64(n))
			return err == nil
		}
		write(append(pkt("# service=git-upload-pack\n"), "0000"...))
		write(pkt(fmt.Sprintf("%040x HEAD\x00multi_ack side-band-64k ofs-delta shallow\n", 1)))
		for i := 0; r.Context().Err() == nil; i++ {
			if !write(pkt(fmt.Sprintf("%040x refs/heads/branch-%d\n", i+2, i))) {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &sent
}

// A server that advertises references without end: the read stops at Limits.MaxAdvertisedRefs,
// the unpack fails with KindTooLarge (not retried) naming the limit, and nothing is kept.
func TestGitAdvertisedRefsLimit(t *testing.T) {
	const limit = 1 << 20
	srv, sent := endlessRefsServer(t)
	url := srv.URL + "/repo.git"
	u := newTestUnpacker(t, nil, func(c *Config) { c.Limits.MaxAdvertisedRefs = limit })
	_, err := u.Unpack(ctx(t), "catalog/refs", gitSrc(url, rukpakv1alpha1.GitRef{Branch: "main"}, ""), Options{})
	e := wantError(t, err, KindTooLarge, `repository "`+url+`": the server advertised more than 1.0 MiB of references`,
		"use a repository with fewer references (check spec.source.git.repository)")
	if e.Retryable {
		t.Error("an advertisement too large to read is not retryable")
	}
	assertCacheEmpty(t, u)
	// The server may have handed some more bytes to the connection's buffers before the client closed it.
	if got := sent.Load(); got > 8*limit {
		t.Errorf("the server sent %d bytes: the read did not stop near the %d-byte limit", got, limit)
	}
	t.Logf("limit %d bytes; the server sent %d bytes before the client closed the connection", limit, sent.Load())
}

// The limit reads an advertisement up to its last byte: exactly at the budget is accepted, one byte
// more is not.
func TestRefsBodyBudget(t *testing.T) {
	for _, tc := range []struct {
		size, max int
		exceeded  bool
	}{{10, 10, false}, {11, 10, true}, {0, 10, false}, {5000, 4096, true}} {
		b := &refsBudget{max: int64(tc.max)}
		body := &refsBody{ReadCloser: nopCloser{&repeatReader{left: tc.size}}, left: b.max, budget: b}
		buf := make([]byte, 7)
		total, err := 0, error(nil)
		for err == nil {
			var n int
			n, err = body.Read(buf)
			total += n
		}
		if b.exceeded.Load() != tc.exceeded || (err == errRefsTooLarge) != tc.exceeded || total > tc.max {
			t.Errorf("%d bytes, budget %d: read %d, exceeded %v, err %v", tc.size, tc.max, total, b.exceeded.Load(), err)
		}
	}
}

// repeatReader reads left bytes of 'a'.
type repeatReader struct{ left int }

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), r.left)
	for i := range n {
		p[i] = 'a'
	}
	r.left -= n
	return n, nil
}

type nopCloser struct{ io.Reader }

func (nopCloser) Close() error { return nil }
