package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	gitcache "github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	gitclient "github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/plumbing/transport/server"
	"github.com/go-git/go-git/v5/storage/filesystem"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

const gitRepoField = "spec.source.git.repository"

var installFileTransportOnce sync.Once

// installFileTransport makes go-git serve file:// repositories in-process instead of running the
// git-upload-pack binary, which controller images do not have, and read the reference
// advertisements of http(s) servers with a limit (refsLimitTransport).
func installFileTransport() {
	installFileTransportOnce.Do(func() {
		gitclient.InstallProtocol("file", server.NewClient(fileLoader{}))
		limited := githttp.NewClient(&http.Client{Transport: refsLimitTransport{base: http.DefaultTransport}})
		gitclient.InstallProtocol("http", limited)
		gitclient.InstallProtocol("https", limited)
	})
}

// fileLoader opens the repository at a file:// endpoint's path: bare, or with a .git directory.
type fileLoader struct{}

func (fileLoader) Load(ep *transport.Endpoint) (storer.Storer, error) {
	p := ep.Path
	if fi, err := os.Stat(filepath.Join(p, ".git")); err == nil && fi.IsDir() {
		p = filepath.Join(p, ".git")
	}
	if _, err := os.Stat(filepath.Join(p, "HEAD")); err != nil {
		return nil, transport.ErrRepositoryNotFound
	}
	return filesystem.NewStorage(osfs.New(p), gitcache.NewObjectLRUDefault()), nil
}

// gitSource is one Git source being unpacked.
type gitSource struct {
	spec rukpakv1alpha1.GitSource
	what string
	ep   *transport.Endpoint
	auth transport.AuthMethod
	// maxPack bounds the bytes of the packfile one fetch may receive (Limits.MaxBytes).
	maxPack int64
	// maxRefs bounds the reference advertisement of an http(s) server (Limits.MaxAdvertisedRefs).
	maxRefs int64
}

// unpackGit resolves the branch, tag or commit to a commit id, fetches it (shallow when the server
// allows) into a throw-away bare repository and writes the directory's files from the commit's tree.
func (u *DiskUnpacker) unpackGit(ctx context.Context, key string, spec rukpakv1alpha1.GitSource, opts Options) (*Result, error) {
	g := &gitSource{spec: spec, what: fmt.Sprintf("repository %q", spec.Repository), maxPack: u.cfg.Limits.MaxBytes, maxRefs: u.cfg.Limits.MaxAdvertisedRefs}
	ctx = withRefsBudget(ctx, g.maxRefs, u.cfg.Transport)
	var err error
	if g.ep, err = transport.NewEndpoint(spec.Repository); err != nil {
		return nil, newError(KindInvalidSource, err, "%s is not a valid git URL: %v (check %s)", g.what, err, gitRepoField)
	}
	dir, err := cleanEntryName(strings.TrimSuffix(spec.Directory, "/"))
	if err != nil {
		return nil, newError(KindInvalidSource, err, "spec.source.git.directory %q must be a relative path without '..' elements", spec.Directory)
	}
	refs := 0
	for _, r := range []string{spec.Ref.Branch, spec.Ref.Tag, spec.Ref.Commit} {
		if r != "" {
			refs++
		}
	}
	if refs != 1 {
		return nil, newError(KindInvalidSource, nil, "spec.source.git.ref must set exactly one of branch, tag or commit")
	}
	if spec.Ref.Commit != "" && !plumbing.IsHash(spec.Ref.Commit) {
		return nil, newError(KindInvalidSource, nil, "spec.source.git.ref.commit %q is not a full 40-character commit id", spec.Ref.Commit)
	}
	fingerprint := "git\x00" + spec.Repository + "\x00" + dir

	// A commit never changes: content already unpacked for it needs no network at all.
	if spec.Ref.Commit != "" {
		resolved := g.resolved(spec.Ref.Commit)
		if res := u.reuse(key, fingerprint, resolved, opts); res != nil {
			return res, nil
		}
	}
	if g.auth, err = u.gitAuth(ctx, spec, g.ep, opts, u.cache.abs(tmpDir)); err != nil {
		return nil, err
	}
	adv, err := g.advertisedRefs(ctx)
	if err != nil {
		return nil, err
	}
	refName, commit, peeled, err := g.resolveRef(adv)
	if err != nil {
		return nil, err
	}
	if peeled {
		if res := u.reuse(key, fingerprint, g.resolved(commit.String()), opts); res != nil {
			return res, nil
		}
	}

	work, err := u.cache.stage()
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	repo, err := g.fetch(ctx, adv, refName, commit, filepath.Join(work, "repo.git"))
	if err != nil {
		return nil, err
	}
	if !peeled {
		// The server did not say which commit the tag points to; the tag object does.
		if commit, err = peelTag(repo, commit); err != nil {
			return nil, newError(KindInvalidContent, err, "%s: tag %q: %v", g.what, g.spec.Ref.Tag, err)
		}
		if res := u.reuse(key, fingerprint, g.resolved(commit.String()), opts); res != nil {
			return res, nil
		}
	}
	resolved := g.resolved(commit.String())
	staged := filepath.Join(work, "content")
	if err := u.writeGitTree(ctx, g, repo, commit, dir, staged); err != nil {
		return nil, err
	}
	out, err := u.cache.commitContent(key, staged, resolved, fingerprint)
	if err != nil {
		return nil, err
	}
	return &Result{Dir: out, ResolvedSource: resolved}, nil
}

func (g *gitSource) resolved(commit string) rukpakv1alpha1.ResolvedSource {
	return rukpakv1alpha1.ResolvedSource{
		Type: rukpakv1alpha1.SourceTypeGit,
		Git:  &rukpakv1alpha1.ResolvedGitSource{Repository: g.spec.Repository, Commit: commit},
	}
}

// advertisedRefs asks the server for its references and capabilities (git ls-remote).
func (g *gitSource) advertisedRefs(ctx context.Context) (*packp.AdvRefs, error) {
	t, err := gitclient.NewClient(g.ep)
	if err != nil {
		return nil, newError(KindInvalidSource, err, "%s: %v (check %s)", g.what, err, gitRepoField)
	}
	sess, err := t.NewUploadPackSession(g.ep, g.auth)
	if err != nil {
		return nil, g.classify(ctx, err)
	}
	defer sess.Close()
	adv, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return nil, g.classify(ctx, err)
	}
	return adv, nil
}

// resolveRef returns the reference to fetch ("" when the commit is not the tip of any) and the
// object it designates; peeled is false when that may be a tag object rather than a commit (a
// server that does not advertise peeled tags).
func (g *gitSource) resolveRef(adv *packp.AdvRefs) (ref plumbing.ReferenceName, h plumbing.Hash, peeled bool, err error) {
	spec := g.spec.Ref
	switch {
	case spec.Branch != "":
		name := plumbing.NewBranchReferenceName(spec.Branch)
		if h, ok := adv.References[name.String()]; ok {
			return name, h, true, nil
		}
		return "", plumbing.ZeroHash, false, newError(KindNotFound, nil, "branch %q not found in %s (check spec.source.git.ref.branch)", spec.Branch, g.what)
	case spec.Tag != "":
		name := plumbing.NewTagReferenceName(spec.Tag)
		if h, ok := adv.Peeled[name.String()]; ok {
			return name, h, true, nil
		}
		if h, ok := adv.References[name.String()]; ok {
			return name, h, false, nil
		}
		return "", plumbing.ZeroHash, false, newError(KindNotFound, nil, "tag %q not found in %s (check spec.source.git.ref.tag)", spec.Tag, g.what)
	}
	commit := plumbing.NewHash(spec.Commit)
	for n, h := range adv.References {
		if p, ok := adv.Peeled[n]; ok {
			h = p
		}
		if h == commit && (strings.HasPrefix(n, "refs/heads/") || strings.HasPrefix(n, "refs/tags/")) {
			return plumbing.ReferenceName(n), commit, true, nil
		}
	}
	return "", commit, true, nil
}

// peelTag returns the commit h designates: h itself, or the commit an annotated tag points to.
func peelTag(repo *git.Repository, h plumbing.Hash) (plumbing.Hash, error) {
	for range 10 {
		tag, err := repo.TagObject(h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			return h, nil // not a tag object: a commit (checked when reading it)
		}
		if err != nil {
			return h, err
		}
		h = tag.Target
	}
	return h, errors.New("too many nested tags")
}

// fetch fetches commit into a new bare repository at dir: only refName, shallow, when the server
// supports it; the commit alone when the server lets clients ask for any reachable commit; every
// branch and tag otherwise. The packfile received is bounded by maxPack: past it the fetch stops
// with KindTooLarge. dir's parent directory holds the spooled packfile.
func (g *gitSource) fetch(ctx context.Context, adv *packp.AdvRefs, refName plumbing.ReferenceName, commit plumbing.Hash, dir string) (*git.Repository, error) {
	st := &packLimitStorage{
		Storage:  filesystem.NewStorage(osfs.New(dir), gitcache.NewObjectLRUDefault()),
		max:      g.maxPack,
		spoolDir: filepath.Dir(dir),
	}
	repo, err := git.Init(st, nil)
	if err != nil {
		return nil, newError(KindInternal, err, "%s: creating a local repository: %v", g.what, err)
	}
	remote, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{g.spec.Repository}})
	if err != nil {
		return nil, newError(KindInternal, err, "%s: %v", g.what, err)
	}
	fo := &git.FetchOptions{Auth: g.auth, Tags: git.NoTags}
	shallow := adv.Capabilities.Supports(capability.Shallow)
	if shallow {
		fo.Depth = 1
	}
	// asked says what was requested, for the message of a fetch stopped at the limit.
	var asked string
	switch {
	case refName != "":
		fo.RefSpecs = []config.RefSpec{config.RefSpec(fmt.Sprintf("+%s:%s", refName, refName))}
		asked = fmt.Sprintf("the whole history of %s, as the server does not support shallow fetches", refName)
	case adv.Capabilities.Supports(capability.AllowReachableSHA1InWant) || adv.Capabilities.Supports(capability.AllowTipSHA1InWant):
		fo.RefSpecs = []config.RefSpec{config.RefSpec(fmt.Sprintf("%s:refs/olmv1/commit", commit))}
		asked = fmt.Sprintf("commit %s with its whole history, as the server does not support shallow fetches", commit)
	default:
		shallow, fo.Depth = false, 0
		fo.RefSpecs = []config.RefSpec{"+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*"}
		asked = fmt.Sprintf("the history of every branch and tag, as commit %s is not the tip of any and the server does not let clients ask for it alone", commit)
	}
	if shallow {
		target := "commit " + commit.String()
		if refName != "" {
			target = refName.String()
		}
		asked = fmt.Sprintf("only the newest commit of %s (a shallow fetch)", target)
	}
	if err := remote.FetchContext(ctx, fo); err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		if st.exceeded {
			return nil, newError(KindTooLarge, errPackTooLarge,
				"%s: the fetch was stopped after receiving more than %s of git objects, the limit for one unpack (it asked for %s); keep the content in a smaller repository (check %s)",
				g.what, formatBytes(g.maxPack), asked, gitRepoField)
		}
		return nil, g.classify(ctx, err)
	}
	return repo, nil
}

// writeGitTree writes directory dir of commit's tree into staged.
func (u *DiskUnpacker) writeGitTree(ctx context.Context, g *gitSource, repo *git.Repository, commit plumbing.Hash, dir, staged string) error {
	c, err := openContentDir(staged, u.cfg.Limits, g.what)
	if err != nil {
		return err
	}
	defer c.close()
	co, err := repo.CommitObject(commit)
	if err != nil {
		return newError(KindNotFound, err, "commit %s not found in %s (check spec.source.git.ref.commit)", commit, g.what)
	}
	tree, err := co.Tree()
	if err != nil {
		return newError(KindInvalidContent, err, "%s: reading the tree of commit %s: %v", g.what, commit, err)
	}
	if dir != "" {
		if tree, err = tree.Tree(dir); err != nil {
			return newError(KindNotFound, err, "directory %q not found at commit %s of %s (check spec.source.git.directory)", dir, commit, g.what)
		}
	}
	w := object.NewTreeWalker(tree, true, nil)
	defer w.Close()
	for {
		if err := ctx.Err(); err != nil {
			return g.classify(ctx, err)
		}
		name, entry, err := w.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return newError(KindInvalidContent, err, "%s: walking commit %s: %v", g.what, commit, err)
		}
		rel, err := cleanEntryName(name)
		if err != nil || rel == "" || rel == ".git" || strings.HasPrefix(rel, ".git/") {
			if err == nil {
				continue // git metadata is not content
			}
			return c.invalid("%v", err)
		}
		if err := writeGitEntry(repo, c, rel, entry); err != nil {
			return err
		}
	}
	return c.finish()
}

func writeGitEntry(repo *git.Repository, c *contentDir, rel string, entry object.TreeEntry) error {
	switch entry.Mode {
	case filemode.Dir:
		return c.mkdir(rel)
	case filemode.Submodule:
		return nil // submodules are other repositories; their content is not fetched
	}
	blob, err := repo.BlobObject(entry.Hash)
	if err != nil {
		return newError(KindInvalidContent, err, "%s: reading %q: %v", c.what, rel, err)
	}
	if blob.Size > c.limits.MaxBytes {
		return c.tooLarge()
	}
	r, err := blob.Reader()
	if err != nil {
		return newError(KindInvalidContent, err, "%s: reading %q: %v", c.what, rel, err)
	}
	defer r.Close()
	if entry.Mode == filemode.Symlink {
		target, err := io.ReadAll(io.LimitReader(r, 4096))
		if err != nil {
			return newError(KindInvalidContent, err, "%s: reading %q: %v", c.what, rel, err)
		}
		return c.symlink(rel, string(target))
	}
	mode := os.FileMode(0o644)
	if entry.Mode == filemode.Executable {
		mode = 0o755
	}
	return c.writeFile(rel, r, mode)
}

// classify turns a go-git error into an Error that says what to check.
func (g *gitSource) classify(ctx context.Context, err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if refsExceeded(ctx) {
		return newError(KindTooLarge, err, "%s: the server advertised more than %s of references (branches, tags and the others git ls-remote lists), the limit; use a repository with fewer references (check %s)",
			g.what, formatBytes(g.maxRefs), gitRepoField)
	}
	if ctx.Err() != nil {
		return timeoutError(ctx, err, timeoutOf(ctx), g.what, gitRepoField)
	}
	switch {
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return newError(KindNotFound, err, "%s not found (check %s)", g.what, gitRepoField)
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return newError(KindNotFound, err, "%s is empty: it has no commits (check %s)", g.what, gitRepoField)
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		hint := "set spec.source.git.authSecret to a Secret with username and password (or ssh-privatekey)"
		if g.spec.AuthSecret != "" {
			hint = fmt.Sprintf("check the credentials in Secret %q, named by spec.source.git.authSecret", g.spec.AuthSecret)
		}
		why := "authentication required"
		if errors.Is(err, transport.ErrAuthorizationFailed) {
			why = "authorization failed"
		}
		return newError(KindUnauthorized, err, "%s refused access (%s): %s", g.what, why, hint)
	case isTLSError(err):
		return newError(KindUnreachable, err, "%s: the server's TLS certificate is not trusted: %v", g.what, err)
	case strings.Contains(err.Error(), "knownhosts:"):
		return newError(KindUnauthorized, err, "%s: the server's ssh host key is not the one in known_hosts of Secret %q (spec.source.git.authSecret): %v", g.what, g.spec.AuthSecret, err)
	case strings.Contains(err.Error(), "unable to authenticate"):
		return newError(KindUnauthorized, err, "%s refused the ssh key in Secret %q (spec.source.git.authSecret): %v", g.what, g.spec.AuthSecret, err)
	}
	return newError(KindUnreachable, err, "fetching %s: %v", g.what, err)
}
