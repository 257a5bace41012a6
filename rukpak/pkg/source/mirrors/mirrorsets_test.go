package mirrors

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// mirrorSetObject builds an ImageDigestMirrorSet or ImageTagMirrorSet as the API server serves it.
func mirrorSetObject(kind, name string, entries ...map[string]any) *unstructured.Unstructured {
	field := "imageDigestMirrors"
	if kind == KindImageTagMirrorSet {
		field = "imageTagMirrors"
	}
	items := make([]any, 0, len(entries))
	for _, e := range entries {
		items = append(items, e)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{field: items}}}
	u.SetAPIVersion(ConfigGroupVersion.String())
	u.SetKind(kind)
	u.SetName(name)
	return u
}

func mirrorEntry(source string, policy string, mirrors ...string) map[string]any {
	ms := make([]any, 0, len(mirrors))
	for _, m := range mirrors {
		ms = append(ms, m)
	}
	e := map[string]any{"source": source, "mirrors": ms}
	if policy != "" {
		e["mirrorSourcePolicy"] = policy
	}
	return e
}

func TestMirrorSetFromUnstructured(t *testing.T) {
	got, err := MirrorSetFromUnstructured(mirrorSetObject(KindImageDigestMirrorSet, "a",
		mirrorEntry("quay.io/org", NeverContactSource, "m1.local/org", "m2.local/org"),
		mirrorEntry("*.example.com", "AllowContactingSource", "m3.local")))
	if err != nil {
		t.Fatal(err)
	}
	want := MirrorSet{Kind: KindImageDigestMirrorSet, Name: "a", Entries: []MirrorSetEntry{
		{Source: "quay.io/org", Mirrors: []string{"m1.local/org", "m2.local/org"}, NeverContactSource: true},
		{Source: "*.example.com", Mirrors: []string{"m3.local"}},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if _, err := MirrorSetFromUnstructured(mirrorSetObject(KindImageTagMirrorSet, "b", mirrorEntry("quay.io", "Sometimes"))); err == nil ||
		!strings.Contains(err.Error(), `ImageTagMirrorSet "b": spec.imageTagMirrors[0].mirrorSourcePolicy "Sometimes"`) {
		t.Errorf("bad policy: error %v", err)
	}
}

// IDMS mirrors serve digests only, ITMS mirrors tags only; the file's mirrors come first; a
// NeverContactSource blocks the source; a new source inherits insecure and blocked from the file.
func TestMerge(t *testing.T) {
	file := mustParse(t, `
[[registry]]
location = "quay.io/org"
[[registry.mirror]]
location = "file-mirror.local/org"

[[registry]]
location = "insecure-mirror.local"
insecure = true

[[registry]]
location = "registry.internal:5000"
insecure = true
`)
	sets := []MirrorSet{
		{Kind: KindImageTagMirrorSet, Name: "tags", Entries: []MirrorSetEntry{{Source: "quay.io/org", Mirrors: []string{"tag-mirror.local/org"}}}},
		{Kind: KindImageDigestMirrorSet, Name: "z", Entries: []MirrorSetEntry{{Source: "quay.io/org", Mirrors: []string{"z-mirror.local/org"}, NeverContactSource: true}}},
		{Kind: KindImageDigestMirrorSet, Name: "a", Entries: []MirrorSetEntry{
			{Source: "quay.io/org", Mirrors: []string{"a-mirror.local/org", "insecure-mirror.local/org", "file-mirror.local/org"}},
			{Source: "registry.internal:5000/team", Mirrors: []string{"team-mirror.local/team"}},
		}},
	}
	merged, err := Merge(file, sets)
	if err != nil {
		t.Fatal(err)
	}
	d := "@" + testDigest
	if got, want := endpoints(merged.Plan(digestImage("quay.io/org/x"))), []string{
		"mirror file-mirror.local/org/x" + d, "mirror a-mirror.local/org/x" + d, "mirror insecure-mirror.local/org/x" + d + " insecure", "mirror z-mirror.local/org/x" + d,
	}; !reflect.DeepEqual(got, want) {
		t.Errorf("digest:\n got %q\nwant %q", got, want)
	}
	if got, want := endpoints(merged.Plan(tagImage("quay.io/org/x", "v1"))), []string{"mirror file-mirror.local/org/x:v1", "mirror tag-mirror.local/org/x:v1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("tag:\n got %q\nwant %q", got, want)
	}
	p := merged.Plan(tagImage("quay.io/org/x", "v1"))
	if !p.Blocked() || p.Matched.BlockedBy != `ImageDigestMirrorSet "z" (mirrorSourcePolicy NeverContactSource)` {
		t.Errorf("blocked by %q", p.Matched.BlockedBy)
	}
	if got, want := endpoints(merged.Plan(digestImage("registry.internal:5000/team/x"))), []string{"mirror team-mirror.local/team/x" + d, "registry.internal:5000/team/x" + d + " insecure"}; !reflect.DeepEqual(got, want) {
		t.Errorf("inherited insecure:\n got %q\nwant %q", got, want)
	}
	if len(file.Registries[0].Mirrors) != 1 {
		t.Errorf("Merge modified the file's configuration: %+v", file.Registries[0])
	}

	if _, err := Merge(nil, []MirrorSet{{Kind: KindImageDigestMirrorSet, Name: "bad", Entries: []MirrorSetEntry{{Source: "quay.io", Mirrors: []string{"https://m.local"}}}}}); err == nil ||
		!strings.Contains(err.Error(), `ImageDigestMirrorSet "bad": spec.imageDigestMirrors[0].mirrors[0] "https://m.local"`) {
		t.Errorf("bad mirror: error %v", err)
	}
}
