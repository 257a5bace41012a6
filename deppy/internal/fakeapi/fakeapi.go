// Package fakeapi is a stand-in for the list endpoints of a Kubernetes API server that `deppy
// resolve --kubeconfig` reads, for tests: it serves lists of the objects it holds (by group,
// version and resource) over HTTP on 127.0.0.1, with label selectors, CatalogMetadata's spec.catalog
// field selector, and limit/continue pagination. It is not an API server: nothing else is served.
package fakeapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Server serves lists of the objects added to it.
type Server struct {
	URL string

	mu       sync.Mutex
	objects  map[schema.GroupVersionResource][]map[string]any
	kinds    map[schema.GroupVersionResource]string
	requests []string
}

// New starts a server on 127.0.0.1 that stops when the test ends.
func New(t testing.TB) *Server {
	s := &Server{objects: map[schema.GroupVersionResource][]map[string]any{}, kinds: map[schema.GroupVersionResource]string{}}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Add adds objects of kind (e.g. "Operator") served as resource gvr, in the order given.
func (s *Server) Add(gvr schema.GroupVersionResource, kind string, objs ...map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kinds[gvr] = kind
	for _, o := range objs {
		o["apiVersion"] = gvr.GroupVersion().String()
		o["kind"] = kind
		s.objects[gvr] = append(s.objects[gvr], o)
	}
}

// Requests returns the path and query of every request served so far.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

// Kubeconfig writes a kubeconfig file in dir whose current context, "fake", names the server, and
// whose context "elsewhere" names a server that does not exist; it returns the file's path.
func (s *Server) Kubeconfig(t testing.TB, dir string) string {
	t.Helper()
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster: {server: %q}
- name: elsewhere
  cluster: {server: "http://127.0.0.1:1"}
users:
- name: tester
  user: {token: test}
contexts:
- name: fake
  context: {cluster: fake, user: tester}
- name: elsewhere
  context: {cluster: elsewhere, user: tester}
current-context: fake
`, s.URL)
	p := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r.URL.RequestURI())
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if r.Method != http.MethodGet || len(parts) != 4 || parts[0] != "apis" {
		status(w, http.StatusNotFound, "NotFound", "the server could not find the requested resource")
		return
	}
	gvr := schema.GroupVersionResource{Group: parts[1], Version: parts[2], Resource: parts[3]}
	kind, ok := s.kinds[gvr]
	if !ok {
		status(w, http.StatusNotFound, "NotFound", "the server could not find the requested resource")
		return
	}
	q := r.URL.Query()
	ls, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		status(w, http.StatusBadRequest, "BadRequest", err.Error())
		return
	}
	fs, err := fields.ParseSelector(q.Get("fieldSelector"))
	if err != nil {
		status(w, http.StatusBadRequest, "BadRequest", err.Error())
		return
	}
	var match []map[string]any
	for _, o := range s.objects[gvr] {
		meta, _ := o["metadata"].(map[string]any)
		lbls := labels.Set{}
		if l, ok := meta["labels"].(map[string]any); ok {
			for k, v := range l {
				lbls[k] = fmt.Sprint(v)
			}
		}
		spec, _ := o["spec"].(map[string]any)
		flds := fields.Set{"metadata.name": fmt.Sprint(meta["name"])}
		if c, ok := spec["catalog"].(string); ok {
			flds["spec.catalog"] = c
		}
		if ls.Matches(lbls) && fs.Matches(flds) {
			match = append(match, o)
		}
	}
	start, _ := strconv.Atoi(q.Get("continue"))
	start = min(start, len(match))
	end, next := len(match), ""
	if limit, _ := strconv.Atoi(q.Get("limit")); limit > 0 && start+limit < end {
		end = start + limit
		next = strconv.Itoa(end)
	}
	list := map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": kind + "List",
		"metadata": map[string]any{"continue": next, "resourceVersion": "1"},
		"items":    append([]map[string]any{}, match[start:end]...),
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(list)
}

func status(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"apiVersion": "v1", "kind": "Status", "status": "Failure", "code": code, "reason": reason, "message": msg,
	})
}

// CatalogMetadata returns the CatalogMetadata objects catalogd serves for a catalog whose content
// is fbc, one JSON blob per line.
func CatalogMetadata(t testing.TB, catalog, fbc string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for i, line := range strings.Split(strings.TrimSpace(fbc), "\n") {
		var content map[string]any
		if err := json.Unmarshal([]byte(line), &content); err != nil {
			t.Fatalf("blob %d of catalog %q: %v", i, catalog, err)
		}
		str := func(k string) string { s, _ := content[k].(string); return s }
		out = append(out, map[string]any{
			"metadata": map[string]any{"name": fmt.Sprintf("%s-%d", catalog, i), "labels": map[string]any{"catalog": catalog, "schema": str("schema")}},
			"spec":     map[string]any{"catalog": catalog, "schema": str("schema"), "package": str("package"), "name": str("name"), "content": content},
		})
	}
	return out
}
