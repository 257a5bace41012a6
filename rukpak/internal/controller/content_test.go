package controller

import (
	"strings"
	"testing"
	"testing/fstest"
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
