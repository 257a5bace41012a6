// Package sourcetest runs the servers the source package fetches from, on 127.0.0.1, for tests: an
// OCI registry (go-containerregistry's in-memory registry, optionally requiring basic auth, with
// hooks to corrupt a blob, hang, answer every request with an error status, or stop) and a git smart-HTTP server backed by go-git (optionally
// requiring basic auth). Repositories are built in Go with NewRepo.
package sourcetest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

// Registry is an in-memory OCI registry served over plain HTTP on 127.0.0.1.
type Registry struct {
	// Host is the registry's host:port, e.g. 127.0.0.1:41234.
	Host string

	server   *httptest.Server
	user     string
	password string

	mu         sync.Mutex
	requests   []string
	times      []time.Time
	tampered   map[string][]byte
	hang       bool
	failStatus int
	retryAfter string
	release    chan struct{}
}

// RegistryOption configures NewRegistry.
type RegistryOption func(*Registry)

// WithBasicAuth makes the registry answer 401 to requests without these credentials.
func WithBasicAuth(user, password string) RegistryOption {
	return func(r *Registry) { r.user, r.password = user, password }
}

// NewRegistry starts a registry that stops when the test ends.
func NewRegistry(t testing.TB, opts ...RegistryOption) *Registry {
	t.Helper()
	r := &Registry{tampered: map[string][]byte{}, release: make(chan struct{})}
	for _, o := range opts {
		o(r)
	}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.serve(inner, w, req)
	}))
	r.Host = strings.TrimPrefix(r.server.URL, "http://")
	t.Cleanup(func() {
		close(r.release)
		r.server.Close()
	})
	return r
}

func (r *Registry) serve(inner http.Handler, w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.requests = append(r.requests, req.Method+" "+req.URL.Path)
	r.times = append(r.times, time.Now())
	hang := r.hang
	body, tampered := r.tampered[req.URL.Path]
	failStatus, retryAfter := r.failStatus, r.retryAfter
	r.mu.Unlock()
	if failStatus != 0 {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		code := "UNAVAILABLE"
		if failStatus == http.StatusTooManyRequests {
			code = "TOOMANYREQUESTS"
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(failStatus)
		_, _ = fmt.Fprintf(w, `{"errors":[{"code":%q,"message":"sourcetest: %s"}]}`, code, http.StatusText(failStatus))
		return
	}
	if hang {
		select {
		case <-req.Context().Done():
		case <-r.release:
		}
		return
	}
	if r.user != "" {
		u, p, ok := req.BasicAuth()
		if !ok || u != r.user || p != r.password {
			w.Header().Set("WWW-Authenticate", `Basic realm="sourcetest"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
			return
		}
	}
	if tampered && req.Method == http.MethodGet {
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		_, _ = w.Write(body)
		return
	}
	inner.ServeHTTP(w, req)
}

// Ref returns the reference of repository:tag (or repository@digest) in this registry.
func (r *Registry) Ref(repoAndTag string) string { return r.Host + "/" + repoAndTag }

// Push pushes img as repoAndTag (e.g. "catalogs/demo:v1") and returns its digest reference.
func (r *Registry) Push(t testing.TB, img v1.Image, repoAndTag string) name.Digest {
	t.Helper()
	opts := []imagebuild.PushOption{imagebuild.WithInsecure()}
	if r.user != "" {
		opts = append(opts, imagebuild.WithKeychain(staticKeychain{authn.FromConfig(authn.AuthConfig{Username: r.user, Password: r.password})}))
	} else {
		opts = append(opts, imagebuild.WithKeychain(staticKeychain{authn.Anonymous}))
	}
	d, err := imagebuild.Push(context.Background(), img, r.Ref(repoAndTag), opts...)
	if err != nil {
		t.Fatalf("pushing %s: %v", repoAndTag, err)
	}
	return d
}

// DockerConfigJSON returns the .dockerconfigjson content of a pull secret for this registry.
func (r *Registry) DockerConfigJSON(user, password string) []byte {
	data, _ := json.Marshal(map[string]any{
		"auths": map[string]any{
			r.Host: map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + password))},
		},
	})
	return data
}

// TamperBlob makes the registry serve body instead of the blob with this digest.
func (r *Registry) TamperBlob(repo string, digest v1.Hash, body []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tampered[fmt.Sprintf("/v2/%s/blobs/%s", repo, digest)] = body
}

// TamperManifest makes the registry serve body for the manifest named by tagOrDigest.
func (r *Registry) TamperManifest(repo, tagOrDigest string, body []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tampered[fmt.Sprintf("/v2/%s/manifests/%s", repo, tagOrDigest)] = body
}

// Hang makes every request wait, without answering, until its client gives up.
func (r *Registry) Hang(hang bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hang = hang
}

// Fail makes the registry answer every request with status (and an OCI error body), with a
// Retry-After header when retryAfter is not empty; status 0 serves normally again.
func (r *Registry) Fail(status int, retryAfter string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failStatus, r.retryAfter = status, retryAfter
}

// Stop closes the registry's listener: connections to Host are refused from then on.
func (r *Registry) Stop() {
	r.server.Close()
}

// RequestTimes returns when each request so far arrived, in the order of Requests.
func (r *Registry) RequestTimes() []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.times...)
}

// Requests returns "METHOD /path" of every request so far.
func (r *Registry) Requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.requests...)
}

// CountRequests counts the requests whose "METHOD /path" contains s.
func (r *Registry) CountRequests(s string) int {
	n := 0
	for _, req := range r.Requests() {
		if strings.Contains(req, s) {
			n++
		}
	}
	return n
}

// ResetRequests forgets the requests so far.
func (r *Registry) ResetRequests() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests, r.times = nil, nil
}

type staticKeychain struct{ auth authn.Authenticator }

func (k staticKeychain) Resolve(authn.Resource) (authn.Authenticator, error) { return k.auth, nil }
