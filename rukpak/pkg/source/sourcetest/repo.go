package sourcetest

import (
	"testing"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/memfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
)

// Repo is an in-memory git repository with a worktree, built by a test. Its first branch is main.
type Repo struct {
	*git.Repository
	t  testing.TB
	fs billy.Filesystem
	wt *git.Worktree
	n  int
}

var signature = object.Signature{Name: "sourcetest", Email: "sourcetest@example.com", When: time.Unix(1700000000, 0).UTC()}

// NewRepo returns an empty repository whose HEAD is main.
func NewRepo(t testing.TB) *Repo {
	t.Helper()
	fs := memfs.New()
	repo, err := git.Init(memory.NewStorage(), fs)
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, plumbing.NewBranchReferenceName("main"))); err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	return &Repo{Repository: repo, t: t, fs: fs, wt: wt}
}

// WriteFile writes a file of the worktree.
func (r *Repo) WriteFile(name, content string) *Repo {
	r.t.Helper()
	if err := r.fs.MkdirAll(dirOf(name), 0o755); err != nil {
		r.t.Fatal(err)
	}
	f, err := r.fs.Create(name)
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := f.Write([]byte(content)); err != nil {
		r.t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		r.t.Fatal(err)
	}
	return r
}

// Symlink creates a symlink of the worktree.
func (r *Repo) Symlink(name, target string) *Repo {
	r.t.Helper()
	if err := r.fs.MkdirAll(dirOf(name), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := r.fs.Symlink(target, name); err != nil {
		r.t.Fatal(err)
	}
	return r
}

// Remove deletes a file of the worktree.
func (r *Repo) Remove(name string) *Repo {
	r.t.Helper()
	if err := r.fs.Remove(name); err != nil {
		r.t.Fatal(err)
	}
	return r
}

// Commit stages every change and commits it on the current branch.
func (r *Repo) Commit(msg string) plumbing.Hash {
	r.t.Helper()
	if err := r.wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		r.t.Fatal(err)
	}
	r.n++
	sig := signature
	sig.When = sig.When.Add(time.Duration(r.n) * time.Minute)
	h, err := r.wt.Commit(msg, &git.CommitOptions{Author: &sig, Committer: &sig, AllowEmptyCommits: true})
	if err != nil {
		r.t.Fatal(err)
	}
	return h
}

// Branch creates branch name at HEAD and checks it out.
func (r *Repo) Branch(name string) *Repo {
	r.t.Helper()
	if err := r.wt.Checkout(&git.CheckoutOptions{Branch: plumbing.NewBranchReferenceName(name), Create: true, Keep: true}); err != nil {
		r.t.Fatal(err)
	}
	return r
}

// Checkout checks out an existing branch.
func (r *Repo) Checkout(name string) *Repo {
	r.t.Helper()
	if err := r.wt.Checkout(&git.CheckoutOptions{Branch: plumbing.NewBranchReferenceName(name)}); err != nil {
		r.t.Fatal(err)
	}
	return r
}

// Tag tags HEAD; an annotated tag gets a tag object.
func (r *Repo) Tag(name string, annotated bool) *Repo {
	r.t.Helper()
	head, err := r.Head()
	if err != nil {
		r.t.Fatal(err)
	}
	var opts *git.CreateTagOptions
	if annotated {
		opts = &git.CreateTagOptions{Tagger: &signature, Message: "release " + name}
	}
	if _, err := r.CreateTag(name, head.Hash(), opts); err != nil {
		r.t.Fatal(err)
	}
	return r
}

func dirOf(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '/' {
			return name[:i]
		}
	}
	return "."
}
