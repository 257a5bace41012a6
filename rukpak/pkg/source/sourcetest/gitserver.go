package sourcetest

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/server"
)

// GitServer serves git repositories over the smart HTTP protocol (clone and fetch only) on
// 127.0.0.1, with go-git's in-process upload-pack.
//
// go-git's upload-pack cannot cut history, so when a client asks for a shallow fetch the server
// records the depth (see Depths) and sends the full history, which a shallow client accepts.
type GitServer struct {
	// URL is the server's base URL, e.g. http://127.0.0.1:41234.
	URL string

	server     *httptest.Server
	user       string
	password   string
	noShallow  bool
	sha1InWant bool

	mu        sync.Mutex
	repos     map[string]storer.Storer
	depths    []int
	requests  int
	inFlight  int
	packBytes int64
}

// GitServerOption configures NewGitServer.
type GitServerOption func(*GitServer)

// WithGitBasicAuth makes the server answer 401 to requests without these credentials.
func WithGitBasicAuth(user, password string) GitServerOption {
	return func(s *GitServer) { s.user, s.password = user, password }
}

// WithoutShallow makes the server not advertise the shallow capability, like servers that cannot
// cut history.
func WithoutShallow() GitServerOption { return func(s *GitServer) { s.noShallow = true } }

// WithSHA1InWant makes the server advertise allow-reachable-sha1-in-want, so that clients may
// fetch a commit that no branch or tag points to.
func WithSHA1InWant() GitServerOption { return func(s *GitServer) { s.sha1InWant = true } }

// NewGitServer starts a git server that stops when the test ends.
func NewGitServer(t testing.TB, opts ...GitServerOption) *GitServer {
	t.Helper()
	s := &GitServer{repos: map[string]storer.Storer{}}
	for _, o := range opts {
		o(s)
	}
	s.server = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.server.URL
	t.Cleanup(s.server.Close)
	return s
}

// Add serves repo at /<name>.git and returns its URL.
func (s *GitServer) Add(name string, repo *Repo) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repos["/"+name+".git"] = repo.Storer
	return s.URL + "/" + name + ".git"
}

// Depths returns the depth of every shallow fetch request so far.
func (s *GitServer) Depths() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.depths...)
}

type storerLoader struct{ st storer.Storer }

func (l storerLoader) Load(*transport.Endpoint) (storer.Storer, error) { return l.st, nil }

// PackBytes returns the bytes of upload-pack responses (packfiles) the server has handed to the
// network so far: an upper bound of what clients received.
func (s *GitServer) PackBytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.packBytes
}

// InFlight returns the number of requests being served now.
func (s *GitServer) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight
}

// countingWriter counts the bytes written through it into *n, under mu.
type countingWriter struct {
	w  io.Writer
	mu *sync.Mutex
	n  *int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.mu.Lock()
	*c.n += int64(n)
	c.mu.Unlock()
	return n, err
}

// Requests returns the number of requests served so far.
func (s *GitServer) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

func (s *GitServer) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	s.inFlight++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		s.mu.Unlock()
	}()
	if s.user != "" {
		u, p, ok := r.BasicAuth()
		if !ok || u != s.user || p != s.password {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
	}
	var repoPath string
	var advertise bool
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/info/refs"):
		if r.URL.Query().Get("service") != transport.UploadPackServiceName {
			http.Error(w, "only git-upload-pack is served", http.StatusForbidden)
			return
		}
		repoPath, advertise = strings.TrimSuffix(r.URL.Path, "/info/refs"), true
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/"+transport.UploadPackServiceName):
		repoPath = strings.TrimSuffix(r.URL.Path, "/"+transport.UploadPackServiceName)
	default:
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	st, ok := s.repos[repoPath]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	ep, err := transport.NewEndpoint(s.URL + repoPath)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	sess, err := server.NewServer(storerLoader{st}).NewUploadPackSession(ep, nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer sess.Close()
	if advertise {
		s.advertise(w, r, sess)
		return
	}
	s.uploadPack(w, r, sess)
}

func (s *GitServer) advertise(w http.ResponseWriter, r *http.Request, sess transport.UploadPackSession) {
	ar, err := sess.AdvertisedReferencesContext(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if !s.noShallow {
		_ = ar.Capabilities.Set(capability.Shallow)
	}
	if s.sha1InWant {
		_ = ar.Capabilities.Set(capability.AllowReachableSHA1InWant)
	}
	ar.Prefix = [][]byte{[]byte("# service=git-upload-pack"), pktline.Flush}
	w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
	w.Header().Set("Cache-Control", "no-cache")
	_ = ar.Encode(w)
}

func (s *GitServer) uploadPack(w http.ResponseWriter, r *http.Request, sess transport.UploadPackSession) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := packp.NewUploadPackRequest()
	rest := bytes.NewReader(body)
	if err := req.Decode(rest); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	// What follows the request is "have" lines and "done".
	sc := pktline.NewScanner(rest)
	for sc.Scan() {
		line := strings.TrimSpace(string(sc.Bytes()))
		if h, ok := strings.CutPrefix(line, "have "); ok {
			req.Haves = append(req.Haves, plumbing.NewHash(h))
		}
	}
	depth := req.Depth
	if d, ok := depth.(packp.DepthCommits); ok && d != 0 {
		s.mu.Lock()
		s.depths = append(s.depths, int(d))
		s.mu.Unlock()
	}
	// go-git's upload-pack refuses shallow requests: answer with the whole history.
	req.Depth = packp.DepthCommits(0)
	req.Capabilities.Delete(capability.Shallow)
	resp, err := sess.UploadPack(r.Context(), req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer resp.Close() // also stops the pack encoder when the client went away
	req.Depth = depth
	w.Header().Set("Content-Type", "application/x-git-upload-pack-result")
	_ = packp.NewUploadPackResponseWithPackfile(req, resp).Encode(countingWriter{w: w, mu: &s.mu, n: &s.packBytes})
}
