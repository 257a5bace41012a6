package fbc

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

func slowCanonical(t testing.TB, b []byte) string {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func TestIsCanonical(t *testing.T) {
	for _, tc := range []struct {
		blob string
		want bool
	}{
		{`{"a":1,"b":[true,false,null,"x"],"c":{"d":-12}}`, true},
		{`{}`, true},
		{`{"a":[]}`, true},
		{`{"b":1,"a":2}`, false},          // key order
		{`{"a":1,"a":2}`, false},          // duplicate key
		{`{"a": 1}`, false},               // whitespace
		{`{"a":1.0}`, false},              // float formatting
		{`{"a":1e3}`, false},              // exponent
		{`{"a":01}`, false},               // leading zero
		{`{"a":-0}`, false},               // negative zero
		{`{"a":1234567890123456}`, false}, // beyond exact float formatting
		{`{"a":"<b>&"}`, true},            // no HTML escaping
		{`{"a":"\u003cb\u003e"}`, false},  // needless escapes
		{`{"a":"\/"}`, false},             // escaped slash
		{`{"a":"\u00e9"}`, false},         // needless unicode escape
		{`{"a":"é\n\t\"\\"}`, true},       // plain UTF-8 and short escapes
		{`{"a\"b":1}`, false},             // escaped key
		{`{"a":1}x`, false},               // trailing bytes
		{`[1]`, false},                    // not an object
		{"{\"a\":\"\xff\"}", false},       // invalid UTF-8
		{"{\"a\":\"\u2028\"}", false},     // line separator
	} {
		got := isCanonical([]byte(tc.blob))
		if got != tc.want {
			t.Errorf("isCanonical(%s) = %v, want %v", tc.blob, got, tc.want)
		}
		if got && slowCanonical(t, []byte(tc.blob)) != tc.blob {
			t.Errorf("isCanonical(%s) but the encoder writes %s", tc.blob, slowCanonical(t, []byte(tc.blob)))
		}
	}
}

// TestCanonicalizeMatchesSlowPath checks the fast path against re-encoding on every blob of the
// real catalogs.
func TestCanonicalizeMatchesSlowPath(t *testing.T) {
	dir := testdataDir(t, "catalogs/community-v4.20")
	fast := 0
	total := 0
	err := declcfg.WalkMetasFS(t.Context(), os.DirFS(dir), func(path string, m *declcfg.Meta, err error) error {
		if err != nil {
			return err
		}
		c, err := canonicalize(m)
		if err != nil {
			return err
		}
		if want := slowCanonical(t, m.Blob); string(c.Blob) != want {
			t.Errorf("%s %s: canonical form differs from json.Marshal", path, describe(m))
		}
		if isCanonical(bytes.TrimSpace(m.Blob)) {
			fast++
		}
		total++
		return nil
	}, declcfg.WithConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d blobs took the fast path", fast, total)
}
