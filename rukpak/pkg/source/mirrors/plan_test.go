package mirrors

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func mustParse(t *testing.T, data string) *Config {
	t.Helper()
	cfg, err := Parse([]byte(data), "test.conf")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func digestImage(repo string) Image { return Image{Repository: repo, Digest: testDigest} }
func tagImage(repo, tag string) Image {
	return Image{Repository: repo, Tag: tag}
}

// endpoints renders a plan as "[mirror ]ref[ insecure]" lines.
func endpoints(p Plan) []string {
	var out []string
	for _, ep := range p.Endpoints {
		s := ep.Ref
		if ep.Mirror {
			s = "mirror " + s
		}
		if ep.Insecure {
			s += " insecure"
		}
		out = append(out, s)
	}
	return out
}

func TestPlan(t *testing.T) {
	cfg := mustParse(t, `
[[registry]]
prefix = "example.com"
[[registry.mirror]]
location = "host-mirror.local"

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
location = "quay.io/blocked"
blocked = true
mirror-by-digest-only = true
[[registry.mirror]]
location = "localhost:5001/quay"

[[registry]]
prefix = "*.example.org"
[[registry.mirror]]
location = "wild.local/org"

[[registry]]
prefix = "*.sub.example.org"
blocked = true

[[registry]]
prefix = "exact.example.org"

[[registry]]
prefix = "docker.io/library/busybox"
[[registry.mirror]]
location = "hub-mirror.local/library/busybox"
`)
	d := "@" + testDigest
	for _, tc := range []struct {
		name string
		img  Image
		want []string
	}{
		{"no entry: the reference itself", digestImage("ghcr.io/org/x"), []string{"ghcr.io/org/x" + d}},
		{"a prefix is a path boundary, not a string prefix", digestImage("example.com/foobar"),
			[]string{"mirror host-mirror.local/foobar" + d, "example.com/foobar" + d}},
		{"longest prefix wins; digest: all and digest-only mirrors, then the remapped source",
			digestImage("example.com/foo/img"),
			[]string{"mirror mirror-0.local/mirror-for-foo/img" + d, "mirror mirror-1.local:5000/mirrors/foo/img" + d + " insecure", "internal.example.net/bar/img" + d + " insecure"}},
		{"tag: all and tag-only mirrors", tagImage("example.com/foo/img", "v1"),
			[]string{"mirror mirror-0.local/mirror-for-foo/img:v1", "mirror mirror-2.local/foo/img:v1", "internal.example.net/bar/img:v1 insecure"}},
		{"the prefix itself is a repository", tagImage("example.com/foo", "v1"),
			[]string{"mirror mirror-0.local/mirror-for-foo:v1", "mirror mirror-2.local/foo:v1", "internal.example.net/bar:v1 insecure"}},
		{"blocked source, digest: the mirror only", digestImage("quay.io/blocked/x"), []string{"mirror localhost:5001/quay/x" + d}},
		{"blocked source, tag: nothing (mirror-by-digest-only)", tagImage("quay.io/blocked/x", "v1"), nil},
		{"another quay.io repository is not blocked", tagImage("quay.io/open/x", "v1"), []string{"quay.io/open/x:v1"}},
		{"wildcard", tagImage("a.example.org/x/y", "v1"), []string{"mirror wild.local/org/x/y:v1", "a.example.org/x/y:v1"}},
		{"deeper wildcard wins", tagImage("b.sub.example.org/x", "v1"), nil},
		{"an exact prefix beats a wildcard", tagImage("exact.example.org/x", "v1"), []string{"exact.example.org/x:v1"}},
		{"a wildcard does not match the domain itself", tagImage("example.org/x", "v1"), []string{"example.org/x:v1"}},
		{"a wildcard does not match a host with a port", tagImage("a.example.org:5000/x", "v1"), []string{"a.example.org:5000/x:v1"}},
		{"docker.io library", tagImage("docker.io/library/busybox", "latest"),
			[]string{"mirror hub-mirror.local/library/busybox:latest", "docker.io/library/busybox:latest"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := cfg.Plan(tc.img)
			if got := endpoints(p); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Plan(%s):\n got %q\nwant %q", tc.img, got, tc.want)
			}
		})
	}
}

func TestPlanDetails(t *testing.T) {
	cfg := mustParse(t, `
[[registry]]
location = "src.local"
blocked = true
[[registry.mirror]]
location = "digests.local/src"
pull-from-mirror = "digest-only"
`)
	p := cfg.Plan(tagImage("src.local/x", "v1"))
	if len(p.Endpoints) != 0 || !p.Blocked() || p.Matched.BlockedBy != "test.conf" {
		t.Fatalf("plan %+v: want no endpoint, blocked by test.conf", p)
	}
	if want := []string{"digests.local/src (digest-only, from test.conf)"}; !reflect.DeepEqual(p.Unused, want) {
		t.Errorf("Unused = %q, want %q", p.Unused, want)
	}
	if got := cfg.Plan(digestImage("src.local/x")); !got.Mirrored() || len(got.Unused) != 0 || got.Endpoints[0].Origin != "test.conf" {
		t.Errorf("digest plan %+v: want the mirror, from test.conf", got)
	}
	var none *Config
	if p := none.Plan(tagImage("src.local/x", "v1")); p.Mirrored() || p.Blocked() || len(p.Endpoints) != 1 {
		t.Errorf("nil Config: %+v, want the reference itself", p)
	}
	if p := (&Config{}).Plan(digestImage("src.local/x")); p.Mirrored() || !strings.HasSuffix(p.Endpoints[0].Ref, testDigest) {
		t.Errorf("empty Config: %+v, want the reference itself", p)
	}
}

// BenchmarkPlan: the cost added to every image pull by a configuration of 100 entries.
func BenchmarkPlan(b *testing.B) {
	var conf strings.Builder
	for i := range 100 {
		fmt.Fprintf(&conf, "[[registry]]\nlocation = \"registry-%d.example.com/org\"\nblocked = true\n[[registry.mirror]]\nlocation = \"mirror.local/r%d\"\n", i, i)
	}
	cfg, err := Parse([]byte(conf.String()), "bench.conf")
	if err != nil {
		b.Fatal(err)
	}
	img := digestImage("registry-99.example.com/org/catalog")
	b.ReportAllocs()
	for b.Loop() {
		if p := cfg.Plan(img); len(p.Endpoints) != 1 {
			b.Fatal(p)
		}
	}
}
