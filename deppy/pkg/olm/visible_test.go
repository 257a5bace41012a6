package olm

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/olmv1/olmv1/deppy/pkg/resolve"
)

// TestMessagesShowInvisibleCharacters: names that come from a request (an Operator's spec) or from
// a catalog and hold characters that do not show (zero-width space, right-to-left override, NUL,
// other controls) appear escaped in explanations, so that "kube\u200bgreen" cannot pass for
// "kubegreen" and a right-to-left override cannot reorder the sentence.
func TestMessagesShowInvisibleCharacters(t *testing.T) {
	cat := catalog("main", 0).
		bundle("app", "1.0.0", needsGVK("example.com", "v1", "Wid\u200bget")).
		bundle("red", "1.0.0", olmConstraint(`{"failureMessage":"needs \u202egreen\u202c","package":{"packageName":"green","versionRange":">=1.0.0"}}`)).
		bundle("zw", "1.0.0", in("beta\u200b"))
	tests := []struct {
		name string
		req  Requirement
		want []string
	}{
		{name: "a package name with a zero-width space", req: Requirement{Package: "kube\u200bgreen"},
			want: []string{`the request requires package "kube\u200bgreen", but no catalog has package "kube\u200bgreen" (catalogs: "main")`}},
		{name: "a package name with a right-to-left override", req: Requirement{Package: "\u202eneerg-ebuk"},
			want: []string{`no catalog has package "\u202eneerg-ebuk"`}},
		{name: "an Operator name with NUL", req: Requirement{Name: "op\x00", Package: "nope"},
			want: []string{`Operator "op\x00" requires package "nope"`}},
		{name: "a channel with a right-to-left override", req: Requirement{Package: "app", Channel: "stable\u202e"},
			want: []string{`package "app" has no channel "stable\u202e" (channels: stable)`}},
		{name: "a catalog channel with a zero-width space", req: Requirement{Package: "zw", Channel: "beta"},
			want: []string{`package "zw" has no channel "beta" (channels: "beta\u200b")`}},
		{name: "a catalog API kind with a zero-width space", req: Requirement{Package: "app"},
			want: []string{`package "app" 1.0.0 requires the API example.com/v1 "Wid\u200bget", but no bundle in the catalogs provides it`}},
		{name: "a catalog failure message with a right-to-left override", req: Requirement{Package: "red"},
			want: []string{`(olm.constraint: "needs \u202egreen\u202c")`}},
		{name: "a version range with a control character", req: Requirement{Package: "app", VersionRange: "1.0.0\x7f"},
			want: []string{`invalid version range "1.0.0\x7f"`}},
	}
	idx := index(t, cat)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Resolve(t.Context(), idx, Problem{Requirements: []Requirement{tt.req}})
			if err == nil {
				t.Fatal("resolved; want an explanation")
			}
			msg := err.Error()
			var ns *resolve.NotSatisfiableError
			if errors.As(err, &ns) {
				msg = ns.Details()
			}
			t.Log(msg)
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("message\n%s\ndoes not contain\n%s", msg, w)
				}
			}
			for _, r := range msg {
				if r != '\n' && !strconv.IsPrint(r) {
					t.Fatalf("message holds %U, which does not show:\n%q", r, msg)
				}
			}
		})
	}
}
