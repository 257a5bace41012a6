package mirrors

import (
	"reflect"
	"strings"
	"testing"
)

const origin = "/etc/olmv1/registries.conf"

func TestParse(t *testing.T) {
	data := `
unqualified-search-registries = ["quay.io"]
short-name-mode = "enforcing"

[aliases]
"busybox" = "docker.io/library/busybox"

[[registry]]
prefix = "example.com/foo"
location = "internal.example.net/bar"
insecure = true

[[registry.mirror]]
location = "mirror-0.local/mirror-for-foo"

[[registry.mirror]]
location = "mirror-1.local:5000/mirrors/foo"
insecure = true
pull-from-mirror = "digest-only"

[[registry.mirror]]
location = "mirror-2.local/foo"
pull-from-mirror = "tag-only"

[[registry]]
location = "quay.io"
blocked = true
mirror-by-digest-only = true

[[registry.mirror]]
location = "localhost:5001/quay"

[[registry]]
prefix = "*.example.org"
blocked = true
`
	cfg, err := Parse([]byte(data), origin)
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{Registries: []Registry{
		{Prefix: "example.com/foo", Location: "internal.example.net/bar", Insecure: true, Origin: origin, Mirrors: []Mirror{
			{Location: "mirror-0.local/mirror-for-foo", PullFrom: PullFromAll, Origin: origin},
			{Location: "mirror-1.local:5000/mirrors/foo", Insecure: true, PullFrom: PullFromDigestOnly, Origin: origin},
			{Location: "mirror-2.local/foo", PullFrom: PullFromTagOnly, Origin: origin},
		}},
		{Prefix: "quay.io", Location: "quay.io", Blocked: true, BlockedBy: origin, Origin: origin, Mirrors: []Mirror{
			{Location: "localhost:5001/quay", PullFrom: PullFromDigestOnly, Origin: origin},
		}},
		{Prefix: "*.example.org", Blocked: true, BlockedBy: origin, Origin: origin},
	}}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("Parse:\n got %+v\nwant %+v", cfg, want)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, data string
		want       []string
	}{
		{"not TOML", `[[registry]`, []string{origin, "not valid TOML"}},
		{"version 1", "[registries.search]\nregistries = ['quay.io']", []string{"version 1 syntax", "[[registry]]"}},
		{"misspelt key", "[[registry]]\nlocation = \"quay.io\"\nmirror-by-digest = true", []string{"unknown keys registry.mirror-by-digest"}},
		{"misspelt mirror key", "[[registry]]\nlocation = \"quay.io\"\n[[registry.mirror]]\nlocation = \"m.local\"\npull-from = \"all\"", []string{"registry.mirror.pull-from"}},
		{"no prefix or location", "[[registry]]\ninsecure = true", []string{"#1", "neither prefix nor location"}},
		{"scheme", "[[registry]]\nlocation = \"https://quay.io\"", []string{"without a scheme"}},
		{"short name", "[[registry]]\nprefix = \"busybox\"", []string{"must start with a registry host", `"busybox"`}},
		{"tag in prefix", "[[registry]]\nprefix = \"quay.io/org/repo:v1\"", []string{"a tag or digest is not supported"}},
		{"trailing slash", "[[registry]]\nprefix = \"quay.io/org/\"", []string{"host[:port][/path]"}},
		{"wildcard with path", "[[registry]]\nprefix = \"*.example.com/foo\"", []string{"*.domain alone"}},
		{"wildcard inside", "[[registry]]\nprefix = \"registry.*.com\"", []string{"first label"}},
		{"wildcard remapped", "[[registry]]\nprefix = \"*.example.com\"\nlocation = \"other.example.net\"", []string{"cannot be remapped"}},
		{"duplicate prefix", "[[registry]]\nlocation = \"quay.io\"\n[[registry]]\nprefix = \"quay.io\"\nblocked = true", []string{"#1 and #2 both have prefix \"quay.io\""}},
		{"bad pull-from", "[[registry]]\nlocation = \"quay.io\"\n[[registry.mirror]]\nlocation = \"m.local\"\npull-from-mirror = \"digests\"", []string{`pull-from-mirror "digests"`, "all, digest-only, tag-only"}},
		{"pull-from with digest-only registry", "[[registry]]\nlocation = \"quay.io\"\nmirror-by-digest-only = true\n[[registry.mirror]]\nlocation = \"m.local\"\npull-from-mirror = \"tag-only\"", []string{"cannot be set when the registry sets mirror-by-digest-only"}},
		{"bad mirror location", "[[registry]]\nlocation = \"quay.io\"\n[[registry.mirror]]\nlocation = \"\"", []string{"[[registry.mirror]] #1", "must not be empty"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.data), origin)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
