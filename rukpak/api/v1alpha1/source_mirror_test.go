package v1alpha1

import "testing"

// A mirror shows in the name of the content (condition messages); the ref stays the original.
func TestResolvedSourceStringNamesTheMirror(t *testing.T) {
	rs := &ResolvedSource{Type: SourceTypeImage, Image: &ResolvedImageSource{
		Ref: "quay.io/org/x@sha256:abc", Requested: "quay.io/org/x:v1", Mirror: "mirror.example.com/org/x@sha256:abc"}}
	if got, want := rs.String(), "image quay.io/org/x@sha256:abc (pulled from mirror mirror.example.com/org/x@sha256:abc)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
