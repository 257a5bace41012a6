package operators

import (
	"context"
	"strconv"
	"strings"
	"testing"
)

// TestHostileNamesAreShownEscaped: an Operator whose packageName, channel or version holds
// characters that do not show (zero-width space, right-to-left override, NUL, other controls, a
// look-alike letter) gets a message naming the value escaped (Go's %q), never the raw characters.
// The CRD rejects these values at create time (see operator-controller's API validation tests);
// this is the resolver's own guard, for anything that reaches it another way.
func TestHostileNamesAreShownEscaped(t *testing.T) {
	idx := testIndex(t)
	for _, tc := range []struct {
		name string
		req  Request
		want string
	}{
		{name: "zero-width space in packageName", req: Request{Name: "op", Package: "a\u200b"},
			want: `Operator "op" requires package "a\u200b", but no catalog has package "a\u200b"`},
		{name: "right-to-left override in packageName", req: Request{Name: "op", Package: "\u202ea"},
			want: `no catalog has package "\u202ea"`},
		{name: "NUL in packageName", req: Request{Name: "op", Package: "a\x00"},
			want: `no catalog has package "a\x00"`},
		// A look-alike letter shows, so %q leaves it as is (the CRD accepts only [a-z0-9.-]).
		{name: "Cyrillic look-alike in packageName", req: Request{Name: "op", Package: "\u0430"},
			want: "no catalog has package \"\u0430\""},
		{name: "zero-width space in channel", req: Request{Name: "op", Package: "a", Channel: "stable\u200b"},
			want: `package "a" has no channel "stable\u200b" (channels: fast, stable)`},
		{name: "NUL in version", req: Request{Name: "op", Package: "a", VersionRange: "1.0.0\x00"},
			want: `spec.version "1.0.0\x00" is not a valid semver range`},
		{name: "right-to-left override in version", req: Request{Name: "op", Package: "a", VersionRange: "\u202e1.0.0"},
			want: `spec.version "\u202e1.0.0" is not a valid semver range`},
		{name: "overlong version", req: Request{Name: "op", Package: "a", VersionRange: strings.Repeat("1", 5000)},
			want: `is not a valid semver range: constraint string is too long (max 512 bytes)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Resolve(context.Background(), idx, []Request{tc.req})["op"]
			if o.Bundle != nil {
				t.Fatalf("resolved to %s", o.Bundle.Name)
			}
			t.Logf("%.300s", o.Message)
			if !strings.Contains(o.Message, tc.want) {
				t.Errorf("message\n%s\ndoes not contain\n%s", o.Message, tc.want)
			}
			for _, r := range o.Message {
				if !strconv.IsPrint(r) {
					t.Fatalf("message holds %U, which does not show: %q", r, o.Message)
				}
			}
		})
	}
}
