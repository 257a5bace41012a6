package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	catalogdv1alpha1 "github.com/olmv1/olmv1/catalogd/api/v1alpha1"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/source/sourcetest"
)

// catalogServer serves one catalog file over HTTP on 127.0.0.1 with an ETag, answering 304 to a
// matching If-None-Match, and counts full (200) and conditional (304) answers.
type catalogServer struct {
	mu          sync.Mutex
	body        string
	full, notMo int
}

func (s *catalogServer) set(body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.body = body
}

func (s *catalogServer) counts() (full, notModified int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.full, s.notMo
}

func (s *catalogServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sum := sha256.Sum256([]byte(s.body))
	etag := `"` + hex.EncodeToString(sum[:8]) + `"`
	w.Header().Set("ETag", etag)
	if r.Header.Get("If-None-Match") == etag {
		s.notMo++
		w.WriteHeader(http.StatusNotModified)
		return
	}
	s.full++
	_, _ = w.Write([]byte(s.body))
}

// fooJSON is fooCatalog as one JSON stream (a single catalog.json).
func fooJSON(version string) string {
	return fmt.Sprintf(`{"schema":"olm.package","name":"foo","defaultChannel":"stable"}
{"schema":"olm.channel","package":"foo","name":"stable","entries":[{"name":"foo.v%[1]s"}]}
{"schema":"olm.bundle","package":"foo","name":"foo.v%[1]s","image":"example.com/foo:v%[1]s","properties":[{"type":"olm.package","value":{"packageName":"foo","version":"%[1]s"}}]}
`, version)
}

func createCatalog(t *testing.T, name string, src rukpakv1alpha1.Source) {
	t.Helper()
	cat := &catalogdv1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: catalogdv1alpha1.CatalogSpec{Source: src}}
	if err := env.client.Create(t.Context(), cat); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.client.Delete(t.Context(), cat) })
}

// eventually polls cond every 100 ms for up to 30 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func getCatalog(t *testing.T, name string) *catalogdv1alpha1.Catalog {
	t.Helper()
	cat := &catalogdv1alpha1.Catalog{}
	if err := env.client.Get(t.Context(), client.ObjectKey{Name: name}, cat); err != nil {
		t.Fatal(err)
	}
	return cat
}

// TestPollingHTTPSource: an HTTP source with pollInterval is re-checked with If-None-Match; an
// unchanged ETag (304) unpacks nothing, a new one is unpacked and served.
func TestPollingHTTPSource(t *testing.T) {
	const name = "polling-http"
	srv := &catalogServer{body: fooJSON("1.0.0")}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	createCatalog(t, name, rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeHTTP, HTTP: &rukpakv1alpha1.HTTPSource{
		URL: hs.URL + "/catalog.json", PollInterval: &metav1.Duration{Duration: time.Second}}})
	cat := waitFor(t, name, servingOK(1))
	hash1, last1 := cat.Status.ContentHash, cat.Status.LastUnpacked

	eventually(t, "three polls answered 304", func() bool { _, nm := srv.counts(); return nm >= 3 })
	if full, _ := srv.counts(); full != 1 {
		t.Errorf("the unchanged URL was downloaded %d times, want 1", full)
	}
	if cat = getCatalog(t, name); !cat.Status.LastUnpacked.Equal(last1) || cat.Status.ContentHash != hash1 {
		t.Errorf("status moved without new content:\n%s", statusString(cat))
	}

	srv.set(fooJSON("1.1.0"))
	eventually(t, "the new content is served", func() bool { return getCatalog(t, name).Status.ContentHash != hash1 })
	cat = waitFor(t, name, servingOK(1))
	if cat.Status.Counts == nil || cat.Status.Counts.Bundles != 1 || cat.Status.ResolvedSource.HTTP == nil || cat.Status.ResolvedSource.HTTP.ETag == "" {
		t.Errorf("status after the change:\n%s\nresolved %+v", statusString(cat), cat.Status.ResolvedSource)
	}
	if full, _ := srv.counts(); full != 2 {
		t.Errorf("downloads after one change: %d, want 2", full)
	}
}

// TestPollingGitBranch: a Git source following a branch picks up a new commit; polls of an
// unchanged branch leave the status alone.
func TestPollingGitBranch(t *testing.T) {
	const name = "polling-git"
	repo := sourcetest.NewRepo(t)
	for f, c := range fooCatalog("1.0.0") {
		repo.WriteFile("catalog/"+f, c)
	}
	repo.WriteFile("README.md", "not part of the catalog directory\n")
	first := repo.Commit("foo 1.0.0")
	gs := sourcetest.NewGitServer(t)
	url := gs.Add("catalog", repo)
	createCatalog(t, name, rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeGit, Git: &rukpakv1alpha1.GitSource{
		Repository: url, Ref: rukpakv1alpha1.GitRef{Branch: "main"}, Directory: "catalog",
		PollInterval: &metav1.Duration{Duration: time.Second}}})
	cat := waitFor(t, name, servingOK(1))
	if cat.Status.ResolvedSource.Git == nil || cat.Status.ResolvedSource.Git.Commit != first.String() {
		t.Fatalf("resolvedSource %+v, want commit %s", cat.Status.ResolvedSource, first)
	}
	hash1, last1 := cat.Status.ContentHash, cat.Status.LastUnpacked

	before := gs.Requests()
	eventually(t, "the branch is polled three more times", func() bool { return gs.Requests() >= before+3 })
	if cat = getCatalog(t, name); !cat.Status.LastUnpacked.Equal(last1) || cat.Status.ContentHash != hash1 {
		t.Errorf("status moved without a new commit:\n%s", statusString(cat))
	}

	for f, c := range fooCatalog("1.1.0") {
		repo.WriteFile("catalog/"+f, c)
	}
	second := repo.Commit("foo 1.1.0")
	eventually(t, "the new commit is served", func() bool {
		rs := getCatalog(t, name).Status.ResolvedSource
		return rs != nil && rs.Git != nil && rs.Git.Commit == second.String()
	})
	cat = waitFor(t, name, servingOK(1))
	if cat.Status.ContentHash == hash1 {
		t.Errorf("new commit with new content, same hash:\n%s", statusString(cat))
	}
}
