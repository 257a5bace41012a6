package metadataapi

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
)

func TestStateVersion(t *testing.T) {
	a := stateVersion(map[string]string{"alpha": "sha256:1", "beta": "sha256:2"})
	if !isVersion(a) {
		t.Fatalf("%q is not a resourceVersion", a)
	}
	for i := 0; i < 20; i++ { // map order must not matter
		if b := stateVersion(map[string]string{"beta": "sha256:2", "alpha": "sha256:1"}); b != a {
			t.Fatalf("same content, %q then %q", a, b)
		}
	}
	for _, other := range []map[string]string{
		{"alpha": "sha256:1"},
		{"alpha": "sha256:1", "beta": "sha256:3"},
		{"alpha": "sha256:2", "beta": "sha256:1"},
		{"alpha\x00beta": "sha256:1"},
		nil,
	} {
		if stateVersion(other) == a {
			t.Errorf("%v has the version of other content", other)
		}
	}
}

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		rv   string
		want versionKind
		bad  bool
	}{
		{rv: "", want: versionAny},
		{rv: "0", want: versionAny},
		{rv: "0123456789abcdef", want: versionDigest},
		{rv: "1234567890123456", want: versionDigest},
		{rv: "7", want: versionLegacy},
		{rv: "18446744073709551615", want: versionLegacy},
		{rv: "0123456789ABCDEF", bad: true},
		{rv: "0123456789abcde", bad: true},
		{rv: "-1", bad: true},
		{rv: "yesterday", bad: true},
		{rv: "123456789012345678901", bad: true},
	} {
		kind, err := parseVersion(tc.rv)
		if tc.bad {
			if !apierrors.IsBadRequest(err) {
				t.Errorf("%q: %v, want 400 Bad Request", tc.rv, err)
			}
			continue
		}
		if err != nil || kind != tc.want {
			t.Errorf("%q: %v %v, want %v", tc.rv, kind, err, tc.want)
		}
	}
}

func TestContinueTokens(t *testing.T) {
	tok := continueToken{Version: continueVersion, RV: "0123456789abcdef", Catalog: "alpha", Offset: 3, Rest: "fedcba9876543210",
		Selector: selectorDigest(labels.Everything(), fields.Everything())}
	got, err := decodeContinue(tok.encode())
	if err != nil || *got != tok {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, tc := range []struct {
		name, token string
		gone        bool
		want        string
	}{
		{name: "not base64url", token: "a+b/", want: "not unpadded base64url"},
		{name: "padded", token: b64("{}") + "=", want: "not unpadded base64url"},
		{name: "not JSON", token: b64("alpha:3"), want: "not a catalogd token"},
		{name: "other format", token: b64(`{"v":2,"rv":"0123456789abcdef"}`), want: "format 2"},
		{name: "bad versions", token: b64(`{"v":1,"rv":"7","c":"a","o":1,"r":"0123456789abcdef","s":"0123456789abcdef"}`), want: "not catalogd resourceVersions"},
		{name: "no position", token: b64(`{"v":1,"rv":"0123456789abcdef","c":"","o":1,"r":"0123456789abcdef","s":"0123456789abcdef"}`), want: "names no position"},
		{name: "negative offset", token: b64(`{"v":1,"rv":"0123456789abcdef","c":"a","o":-1,"r":"0123456789abcdef","s":"0123456789abcdef"}`), want: "names no position"},
		{name: "an older catalogd's", token: b64(`{"c":"alpha","o":2,"v":7}`), gone: true, want: "older catalogd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeContinue(tc.token)
			ok := apierrors.IsBadRequest(err)
			if tc.gone {
				ok = apierrors.IsResourceExpired(err)
			}
			if !ok || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %s saying %q", err, map[bool]string{false: "400", true: "410"}[tc.gone], tc.want)
			}
		})
	}
}

func TestSelectorDigest(t *testing.T) {
	l := labels.SelectorFromSet(labels.Set{"catalog": "a"})
	f := fields.OneTermEqualSelector("spec.schema", "olm.bundle")
	if selectorDigest(l, f) != selectorDigest(labels.SelectorFromSet(labels.Set{"catalog": "a"}), fields.OneTermEqualSelector("spec.schema", "olm.bundle")) {
		t.Error("the same selectors differ")
	}
	if selectorDigest(l, f) == selectorDigest(l, fields.Everything()) || selectorDigest(l, fields.Everything()) == selectorDigest(labels.Everything(), fields.Everything()) {
		t.Error("other selectors have the same digest")
	}
}

// states builds entries for object names with content versions: "a=1" is object a with content 1.
func states(spec string) map[string]*entry {
	out := map[string]*entry{}
	for _, kv := range strings.Fields(spec) {
		name, v, _ := strings.Cut(kv, "=")
		out[name] = newEntry("c", Blob{Schema: "s", Name: name, Content: []byte(v)})
		out[name].object = name
	}
	return out
}

// step records the transition between two object sets.
func step(h *history, from, to string, before, after map[string]*entry) {
	var cs []change
	for n, e := range after {
		switch old := before[n]; {
		case old == nil:
			cs = append(cs, change{typ: watch.Added, new: e})
		case old.hash != e.hash:
			cs = append(cs, change{typ: watch.Modified, old: old, new: e})
		}
	}
	for n, e := range before {
		if after[n] == nil {
			cs = append(cs, change{typ: watch.Deleted, old: e})
		}
	}
	h.add(transition{from: from, to: to, changes: cs})
}

func describe(cs []change) string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s %s", c.typ, c.object()))
	}
	return strings.Join(out, ",")
}

func TestHistoryNetChanges(t *testing.T) {
	s1, s2, s3, s4 := states("a=1 b=1 c=1"), states("a=2 b=1 d=1"), states("a=1 b=2 d=1 e=1"), states("a=1 b=2 d=1")
	h := &history{base: "S1", maxTransitions: 10, maxChanges: 100}
	step(h, "S1", "S2", s1, s2)
	step(h, "S2", "S3", s2, s3)
	step(h, "S3", "S4", s3, s4)
	for _, tc := range []struct{ from, want string }{
		// a changed and changed back; e added and removed again: neither is mentioned.
		{"S1", "MODIFIED b,DELETED c,ADDED d"},
		{"S2", "MODIFIED a,MODIFIED b"},
		{"S3", "DELETED e"},
		{"S4", ""},
	} {
		got, ok := h.since(tc.from)
		if !ok || describe(got) != tc.want {
			t.Errorf("since %s: %q %v, want %q", tc.from, describe(got), ok, tc.want)
		}
	}
	if _, ok := h.since("S0"); ok {
		t.Error("an unknown state is retained")
	}
	// Back to S2's content: continuing from S2 now has nothing to send.
	step(h, "S4", "S2", s4, s2)
	if got, ok := h.since("S2"); !ok || len(got) != 0 {
		t.Errorf("since S2, which is current again: %q %v", describe(got), ok)
	}
}

func TestHistoryForgetsTheOldest(t *testing.T) {
	h := &history{base: "S0", maxTransitions: 3, maxChanges: 4}
	a, b := states("a=1"), states("a=2")
	for i := 1; i <= 4; i++ {
		step(h, fmt.Sprintf("S%d", i-1), fmt.Sprintf("S%d", i), a, b)
		a, b = b, a
	}
	if h.retains("S0") || !h.retains("S1") || h.latest() != "S4" {
		t.Errorf("after 4 transitions with room for 3: base %s, latest %s", h.base, h.latest())
	}
	big := states("a=1 b=1 c=1 d=1 e=1")
	step(h, "S4", "S5", nil, big)
	if !h.retains("S4") || h.retains("S3") || len(h.transitions) != 1 {
		t.Errorf("a transition over the change budget keeps only itself: base %s, %d transitions", h.base, len(h.transitions))
	}
}
