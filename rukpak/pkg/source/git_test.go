package source

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
	"github.com/olmv1/olmv1/rukpak/pkg/source/sourcetest"
)

func gitSrc(repo string, ref rukpakv1alpha1.GitRef, dir string) rukpakv1alpha1.Source {
	return rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeGit, Git: &rukpakv1alpha1.GitSource{Repository: repo, Ref: ref, Directory: dir}}
}

// demoRepo: main has two commits (v1 tagged annotated, then v2 tagged lightweight); branch dev
// adds a third.
type demoRepo struct {
	*sourcetest.Repo
	c1, c2, c3 string
}

func newDemoRepo(t *testing.T) demoRepo {
	r := sourcetest.NewRepo(t)
	r.WriteFile("README.md", "demo").WriteFile("catalog/catalog.json", "v1")
	c1 := r.Commit("v1")
	r.Tag("v1", true)
	r.WriteFile("catalog/catalog.json", "v2").WriteFile("catalog/extra/notes.txt", "notes")
	c2 := r.Commit("v2")
	r.Tag("v2", false)
	r.Branch("dev").WriteFile("catalog/catalog.json", "v3")
	c3 := r.Commit("v3")
	r.Checkout("main")
	return demoRepo{Repo: r, c1: c1.String(), c2: c2.String(), c3: c3.String()}
}

func TestGitRefs(t *testing.T) {
	repo := newDemoRepo(t)
	srv := sourcetest.NewGitServer(t)
	url := srv.Add("demo", repo.Repo)
	u := newTestUnpacker(t, nil)

	for _, tc := range []struct {
		name   string
		ref    rukpakv1alpha1.GitRef
		commit string
		tree   []string
	}{
		{"branch", rukpakv1alpha1.GitRef{Branch: "main"}, repo.c2, []string{"catalog.json=v2", "extra/", "extra/notes.txt=notes"}},
		{"other branch", rukpakv1alpha1.GitRef{Branch: "dev"}, repo.c3, []string{"catalog.json=v3", "extra/", "extra/notes.txt=notes"}},
		{"annotated tag", rukpakv1alpha1.GitRef{Tag: "v1"}, repo.c1, []string{"catalog.json=v1"}},
		{"lightweight tag", rukpakv1alpha1.GitRef{Tag: "v2"}, repo.c2, []string{"catalog.json=v2", "extra/", "extra/notes.txt=notes"}},
		{"commit at a tip", rukpakv1alpha1.GitRef{Commit: repo.c3}, repo.c3, []string{"catalog.json=v3", "extra/", "extra/notes.txt=notes"}},
		{"commit in history", rukpakv1alpha1.GitRef{Commit: repo.c1}, repo.c1, []string{"catalog.json=v1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := u.Unpack(ctx(t), "catalog/git-"+tc.name, gitSrc(url, tc.ref, "catalog"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := res.ResolvedSource.Git; got.Commit != tc.commit || got.Repository != url {
				t.Errorf("resolved %+v, want commit %s of %s", got, tc.commit, url)
			}
			wantTree(t, res.Dir, tc.tree...)
		})
	}
	for _, d := range srv.Depths() {
		if d != 1 {
			t.Errorf("a fetch asked for depth %d, want 1 (shallow)", d)
		}
	}
	if len(srv.Depths()) < 5 {
		t.Errorf("%d shallow fetches, want at least 5 (every ref but the commit in history)", len(srv.Depths()))
	}
}

// Unchanged: the same branch head is not fetched again; a new commit is.
func TestGitUnchangedAndNewCommit(t *testing.T) {
	repo := newDemoRepo(t)
	srv := sourcetest.NewGitServer(t)
	src := gitSrc(srv.Add("demo", repo.Repo), rukpakv1alpha1.GitRef{Branch: "main"}, "")
	u := newTestUnpacker(t, nil)

	first, err := u.Unpack(ctx(t), "bd/git", src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fetches := len(srv.Depths())
	again, err := u.Unpack(ctx(t), "bd/git", src, Options{Previous: &first.ResolvedSource})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Unchanged || again.Dir != first.Dir || len(srv.Depths()) != fetches {
		t.Errorf("same head: Unchanged=%v sameDir=%v fetches %d -> %d", again.Unchanged, again.Dir == first.Dir, fetches, len(srv.Depths()))
	}

	repo.WriteFile("catalog/catalog.json", "v4")
	c4 := repo.Commit("v4")
	next, err := u.Unpack(ctx(t), "bd/git", src, Options{Previous: &again.ResolvedSource})
	if err != nil {
		t.Fatal(err)
	}
	if next.Unchanged || next.ResolvedSource.Git.Commit != c4.String() {
		t.Errorf("new commit: Unchanged=%v commit=%s, want false and %s", next.Unchanged, next.ResolvedSource.Git.Commit, c4)
	}
	wantTree(t, next.Dir, "README.md=demo", "catalog/", "catalog/catalog.json=v4", "catalog/extra/", "catalog/extra/notes.txt=notes")

	// A pinned commit already unpacked needs no server at all.
	pinned := gitSrc(src.Git.Repository, rukpakv1alpha1.GitRef{Commit: c4.String()}, "")
	p1, err := u.Unpack(ctx(t), "bd/pinned", pinned, Options{})
	if err != nil {
		t.Fatal(err)
	}
	requests := srv.Requests()
	p2, err := u.Unpack(ctx(t), "bd/pinned", pinned, Options{Previous: &p1.ResolvedSource})
	if err != nil {
		t.Fatal(err)
	}
	if !p2.Unchanged || srv.Requests() != requests {
		t.Errorf("pinned commit again: Unchanged=%v, server requests %d -> %d (want none)", p2.Unchanged, requests, srv.Requests())
	}
}

// Servers that do not support shallow fetches, or fetching a commit by id.
func TestGitServerCapabilities(t *testing.T) {
	repo := newDemoRepo(t)
	for _, tc := range []struct {
		name      string
		opts      []sourcetest.GitServerOption
		wantDepth bool
	}{
		{"no shallow", []sourcetest.GitServerOption{sourcetest.WithoutShallow()}, false},
		{"sha1 in want", []sourcetest.GitServerOption{sourcetest.WithSHA1InWant()}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := sourcetest.NewGitServer(t, tc.opts...)
			url := srv.Add("demo", repo.Repo)
			res, err := newTestUnpacker(t, nil).Unpack(ctx(t), "c/x", gitSrc(url, rukpakv1alpha1.GitRef{Commit: repo.c1}, "catalog"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			wantTree(t, res.Dir, "catalog.json=v1")
			if got := len(srv.Depths()) > 0; got != tc.wantDepth {
				t.Errorf("shallow fetch requested: %v, want %v", got, tc.wantDepth)
			}
		})
	}
}

func TestGitErrors(t *testing.T) {
	repo := newDemoRepo(t)
	repo.Symlink("escape/link", "../../../etc/passwd")
	repo.Branch("hostile").Commit("hostile")
	srv := sourcetest.NewGitServer(t)
	url := srv.Add("demo", repo.Repo)
	u := newTestUnpacker(t, nil)

	for _, tc := range []struct {
		name string
		src  rukpakv1alpha1.Source
		kind Kind
		msg  string
	}{
		{"missing branch", gitSrc(url, rukpakv1alpha1.GitRef{Branch: "nope"}, ""), KindNotFound, `branch "nope" not found in repository "` + url + `" (check spec.source.git.ref.branch)`},
		{"missing tag", gitSrc(url, rukpakv1alpha1.GitRef{Tag: "v9"}, ""), KindNotFound, `tag "v9" not found in repository`},
		{"missing commit", gitSrc(url, rukpakv1alpha1.GitRef{Commit: "0123456789012345678901234567890123456789"}, ""), KindNotFound, "commit 0123456789012345678901234567890123456789 not found"},
		{"missing directory", gitSrc(url, rukpakv1alpha1.GitRef{Branch: "main"}, "nope"), KindNotFound, `directory "nope" not found at commit ` + repo.c2},
		{"missing repository", gitSrc(srv.URL+"/other.git", rukpakv1alpha1.GitRef{Branch: "main"}, ""), KindNotFound, "not found (check spec.source.git.repository)"},
		{"escaping symlink", gitSrc(url, rukpakv1alpha1.GitRef{Branch: "hostile"}, ""), KindInvalidContent, `symlink "escape/link" points to "../../../etc/passwd", outside of the content directory`},
		{"bad directory", gitSrc(url, rukpakv1alpha1.GitRef{Branch: "main"}, "../x"), KindInvalidSource, "spec.source.git.directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := u.Unpack(ctx(t), "c/err", tc.src, Options{})
			wantError(t, err, tc.kind, tc.msg)
			assertCacheEmpty(t, u)
		})
	}
}

func TestGitBasicAuthFromSecret(t *testing.T) {
	repo := newDemoRepo(t)
	srv := sourcetest.NewGitServer(t, sourcetest.WithGitBasicAuth("reader", "t0ken"))
	url := srv.Add("private", repo.Repo)
	c := fakeClient(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "git-creds", Namespace: testNamespace},
			Data: map[string][]byte{"username": []byte("reader"), "password": []byte("t0ken")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "git-wrong", Namespace: testNamespace},
			Data: map[string][]byte{"username": []byte("reader"), "password": []byte("nope")}},
	)
	u := newTestUnpacker(t, c)
	opts := Options{Namespace: testNamespace}
	src := gitSrc(url, rukpakv1alpha1.GitRef{Tag: "v1"}, "catalog")

	_, err := u.Unpack(ctx(t), "c/p", src, opts)
	wantError(t, err, KindUnauthorized, "refused access", "set spec.source.git.authSecret")

	src.Git.AuthSecret = "git-wrong"
	_, err = u.Unpack(ctx(t), "c/p", src, opts)
	wantError(t, err, KindUnauthorized, `check the credentials in Secret "git-wrong"`)

	src.Git.AuthSecret = "git-creds"
	res, err := u.Unpack(ctx(t), "c/p", src, opts)
	if err != nil {
		t.Fatal(err)
	}
	wantTree(t, res.Dir, "catalog.json=v1")
}

// ssh with a private key and known_hosts from a Secret.
func TestGitSSHKeyFromSecret(t *testing.T) {
	repo := newDemoRepo(t)
	srv := sourcetest.NewSSHServer(t)
	url := srv.Add("demo", repo.Repo)
	other := sourcetest.NewSSHServer(t) // another host key, another client key
	secret := func(name string, data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace}, Type: corev1.SecretTypeSSHAuth, Data: data}
	}
	c := fakeClient(
		secret("ssh-good", map[string][]byte{"ssh-privatekey": srv.ClientKeyPEM, "known_hosts": srv.KnownHosts}),
		secret("ssh-no-known-hosts", map[string][]byte{"ssh-privatekey": srv.ClientKeyPEM}),
		secret("ssh-wrong-host", map[string][]byte{"ssh-privatekey": srv.ClientKeyPEM, "known_hosts": []byte(strings.Replace(string(other.KnownHosts), other.Addr, srv.Addr, 1))}),
		secret("ssh-wrong-key", map[string][]byte{"ssh-privatekey": other.ClientKeyPEM, "known_hosts": srv.KnownHosts}),
	)
	u := newTestUnpacker(t, c)
	opts := Options{Namespace: testNamespace}
	src := func(secret string) rukpakv1alpha1.Source {
		s := gitSrc(url, rukpakv1alpha1.GitRef{Tag: "v1"}, "catalog")
		s.Git.AuthSecret = secret
		return s
	}
	res, err := u.Unpack(ctx(t), "c/ssh", src("ssh-good"), opts)
	if err != nil {
		t.Fatal(err)
	}
	wantTree(t, res.Dir, "catalog.json=v1")
	if res.ResolvedSource.Git.Commit != repo.c1 {
		t.Errorf("commit %s, want %s", res.ResolvedSource.Git.Commit, repo.c1)
	}

	_, err = u.Unpack(ctx(t), "c/ssh2", src("ssh-no-known-hosts"), opts)
	wantError(t, err, KindInvalidSource, `Secret "ssh-no-known-hosts" (spec.source.git.authSecret) has no known_hosts key`, "ssh-keyscan")
	_, err = u.Unpack(ctx(t), "c/ssh2", src("ssh-wrong-host"), opts)
	wantError(t, err, KindUnauthorized, `ssh host key is not the one in known_hosts of Secret "ssh-wrong-host"`)
	_, err = u.Unpack(ctx(t), "c/ssh2", src("ssh-wrong-key"), opts)
	wantError(t, err, KindUnauthorized, `refused the ssh key in Secret "ssh-wrong-key"`)
}

// file:// repositories are served in-process (no git binary).
var sourcetestSig = object.Signature{Name: "test", Email: "test@example.com"}

func TestGitFileURL(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "repo")
	r, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "manifests"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifests", "cm.yaml"), []byte("kind: ConfigMap"), 0o644); err != nil {
		t.Fatal(err)
	}
	wt, _ := r.Worktree()
	if _, err := wt.Add("manifests/cm.yaml"); err != nil {
		t.Fatal(err)
	}
	h, err := wt.Commit("init", &git.CommitOptions{Author: &sourcetestSig})
	if err != nil {
		t.Fatal(err)
	}
	head, _ := r.Head()
	res, err := newTestUnpacker(t, nil).Unpack(ctx(t), "bd/file", gitSrc("file://"+dir, rukpakv1alpha1.GitRef{Branch: head.Name().Short()}, ""), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.ResolvedSource.Git.Commit != h.String() {
		t.Errorf("commit %s, want %s", res.ResolvedSource.Git.Commit, h)
	}
	wantTree(t, res.Dir, "manifests/", "manifests/cm.yaml=kind: ConfigMap")
}

// A repository whose packfile is far larger than Limits.MaxBytes: the fetch stops once the limit
// has been received (not after the whole pack), fails with KindTooLarge and leaves nothing behind.
func TestGitFetchSizeLimit(t *testing.T) {
	const (
		limit    = 1 << 20  // 1 MiB
		blobSize = 32 << 20 // 32 MiB of incompressible bytes: the pack is about as large
	)
	blob := make([]byte, blobSize)
	rng := rand.NewChaCha8([32]byte{1})
	_, _ = rng.Read(blob)
	repo := sourcetest.NewRepo(t)
	repo.WriteFile("catalog/catalog.json", "{}").WriteFile("catalog/big.bin", string(blob))
	commit := repo.Commit("big")

	for _, tc := range []struct {
		name  string
		opts  []sourcetest.GitServerOption
		asked string
	}{
		{"shallow", nil, "it asked for only the newest commit of refs/heads/main (a shallow fetch)"},
		{"no shallow", []sourcetest.GitServerOption{sourcetest.WithoutShallow()}, "it asked for the whole history of refs/heads/main, as the server does not support shallow fetches"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := sourcetest.NewGitServer(t, tc.opts...)
			url := srv.Add("big", repo)
			u := newTestUnpacker(t, nil, func(c *Config) { c.Limits.MaxBytes = limit })
			start := time.Now()
			_, err := u.Unpack(ctx(t), "catalog/big", gitSrc(url, rukpakv1alpha1.GitRef{Branch: "main"}, "catalog"), Options{})
			took := time.Since(start)
			e := wantError(t, err, KindTooLarge, `repository "`+url+`": the fetch was stopped after receiving more than 1.0 MiB of git objects, the limit for one unpack`,
				tc.asked, "keep the content in a smaller repository (check spec.source.git.repository)")
			if e.Retryable {
				t.Error("a repository too large to unpack is not retryable")
			}
			assertCacheEmpty(t, u)
			// Wait for the server to finish the request: it stops only when the client closed the
			// connection (a client that merely stopped reading would keep it blocked).
			deadline := time.Now().Add(10 * time.Second)
			for srv.InFlight() > 0 {
				if time.Now().After(deadline) {
					t.Fatalf("the server is still sending 10s after the unpack failed (%d bytes so far): the client did not close the fetch", srv.PackBytes())
				}
				time.Sleep(10 * time.Millisecond) // polling the server's state, not waiting for an event
			}
			sent := srv.PackBytes()
			t.Logf("limit %d bytes, pack about %d bytes: the server handed %d bytes to the network before the client stopped (%s)", limit, blobSize, sent, took)
			// What the server got rid of is what the client read plus what the loopback socket
			// buffers hold; it must be a fraction of the pack, not all of it.
			if sent > blobSize/4 {
				t.Errorf("the server sent %d bytes of a %d-byte pack: the fetch did not stop near the %d-byte limit", sent, blobSize, limit)
			}
		})
	}

	// The same repository within the limit is fetched whole: the limit is what stopped it.
	srv := sourcetest.NewGitServer(t)
	u := newTestUnpacker(t, nil, func(c *Config) { c.Limits.MaxBytes = 2 * blobSize })
	res, err := u.Unpack(ctx(t), "catalog/big", gitSrc(srv.Add("big", repo), rukpakv1alpha1.GitRef{Branch: "main"}, ""), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.ResolvedSource.Git.Commit != commit.String() {
		t.Errorf("commit %s, want %s", res.ResolvedSource.Git.Commit, commit)
	}
	if sent := srv.PackBytes(); sent < blobSize {
		t.Errorf("a whole fetch sent %d bytes, want at least the %d bytes of the blob", sent, blobSize)
	} else {
		t.Logf("the whole pack is %d bytes", sent)
	}
}
