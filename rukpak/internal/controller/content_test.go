package controller

import (
	"strings"
	"testing"
	"testing/fstest"

	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

func TestContentHash(t *testing.T) {
	a := fstest.MapFS{"manifests/a.yaml": {Data: []byte("a")}, "manifests/b.yaml": {Data: []byte("b")}}
	same := fstest.MapFS{"manifests/b.yaml": {Data: []byte("b")}, "manifests/a.yaml": {Data: []byte("a")}}
	renamed := fstest.MapFS{"manifests/a.yaml": {Data: []byte("a")}, "manifests/c.yaml": {Data: []byte("b")}}
	// Moving bytes between files must change the hash.
	shifted := fstest.MapFS{"manifests/a.yaml": {Data: []byte("ab")}, "manifests/b.yaml": {Data: []byte("")}}
	h := func(f fstest.MapFS) string {
		s, err := ContentHash(f)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if !strings.HasPrefix(h(a), "sha256:") || len(h(a)) != len("sha256:")+64 {
		t.Fatalf("hash %q is not sha256:<hex>", h(a))
	}
	if h(a) != h(same) {
		t.Error("the same content hashed differently")
	}
	if h(a) == h(renamed) || h(a) == h(shifted) {
		t.Error("different content hashed the same")
	}
}

// The identity of a revision: the content hash, plus the image digest or git commit it came from;
// a ConfigMap or HTTP source adds nothing (a new resourceVersion or ETag with the same content is
// the same revision).
func TestRevisionIdentity(t *testing.T) {
	img := func(ref string) *rukpakv1alpha1.ResolvedSource {
		return &rukpakv1alpha1.ResolvedSource{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ResolvedImageSource{Ref: ref, Requested: "r/x:tag"}}
	}
	a, b := revisionIdentity("sha256:c", img("r/x@sha256:1")), revisionIdentity("sha256:c", img("r/x@sha256:2"))
	if a == b || a != "sha256:c image r/x@sha256:1" {
		t.Errorf("images: %q and %q", a, b)
	}
	git := &rukpakv1alpha1.ResolvedSource{Type: rukpakv1alpha1.SourceTypeGit, Git: &rukpakv1alpha1.ResolvedGitSource{Repository: "https://g/r", Commit: "abc"}}
	if got := revisionIdentity("sha256:c", git); got != "sha256:c git https://g/r@abc" {
		t.Errorf("git: %q", got)
	}
	cm := &rukpakv1alpha1.ResolvedSource{Type: rukpakv1alpha1.SourceTypeConfigMaps, ConfigMaps: []rukpakv1alpha1.ResolvedConfigMapSource{{Name: "m", ResourceVersion: "7"}}}
	if got := revisionIdentity("sha256:c", cm); got != "sha256:c" {
		t.Errorf("configmaps: %q", got)
	}
}
