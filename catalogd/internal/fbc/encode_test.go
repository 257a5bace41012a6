package fbc

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// encodingJSON is the reference appendJSON must match: encoding/json without HTML escaping, without
// the Encoder's trailing newline.
func encodingJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// checkAppendJSON fails t unless appendJSON writes what encoding/json writes for v, or declines
// (ok false) exactly where encoding/json fails or v holds a type it does not know.
func checkAppendJSON(t *testing.T, v any) {
	t.Helper()
	want, werr := encodingJSON(v)
	got, ok := appendJSON([]byte("prefix"), v)
	switch {
	case !ok && werr == nil && knownJSONTypes(v):
		t.Fatalf("appendJSON declines %#v, which encoding/json writes as %s", v, want)
	case !ok:
		return
	case werr != nil:
		t.Fatalf("appendJSON writes %#v as %s, encoding/json fails: %v", v, got, werr)
	case !bytes.HasPrefix(got, []byte("prefix")):
		t.Fatalf("appendJSON did not append to its destination: %q", got)
	case !bytes.Equal(got[len("prefix"):], want):
		t.Fatalf("appendJSON(%#v)\n got  %q\n want %q", v, got[len("prefix"):], want)
	}
}

// knownJSONTypes reports whether v holds only the types appendJSON encodes itself.
func knownJSONTypes(v any) bool {
	switch t := v.(type) {
	case nil, bool, string:
		return true
	case float64:
		return !math.IsInf(t, 0) && !math.IsNaN(t)
	case []any:
		for _, e := range t {
			if !knownJSONTypes(e) {
				return false
			}
		}
		return true
	case map[string]any:
		for _, e := range t {
			if !knownJSONTypes(e) {
				return false
			}
		}
		return true
	}
	return false
}

func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	var controls strings.Builder
	for c := range 0x20 {
		controls.WriteByte(byte(c))
	}
	strs := []string{
		"", "plain", `"quoted" \back\slash/`, "<b>&amp;</b>", "\x7f", controls.String(),
		"é ü 日本 🚀", "\u2028 \u2029", "\ufffd", "bad \xff utf8 \xc3", "\xe2\x80", "a\x00b",
		strings.Repeat("PD94bWwgdmVyc2lvbj0iMS4wIj8+", 1000),
	}
	floats := []float64{
		0, math.Copysign(0, -1), 1, -1, 0.5, 123.456, 1e-6, 9.99e-7, 1e-7, -1e-7, 1e20, 1e21, -1e21,
		123456789012345678, 1.5e300, 5e-324, math.MaxFloat64, math.SmallestNonzeroFloat64, 1e-10, 2e-100,
	}
	var values []any
	for _, s := range strs {
		values = append(values, s, map[string]any{s: s})
	}
	for _, f := range floats {
		values = append(values, f, []any{f})
	}
	values = append(values,
		nil, true, false, []any{}, []any(nil), map[string]any{}, map[string]any(nil),
		map[string]any{"b": 1.0, "a": 2.0, "B": 3.0, "": 4.0, "é": 5.0, "a\x00": 6.0, "aa": []any{nil, true, "x", map[string]any{}}},
		map[string]any{"schema": "olm.bundle", "properties": []any{map[string]any{"type": "olm.bundle.object", "value": map[string]any{"data": "eyJ9"}}}},
		// Not written by appendJSON: encoding/json's error or output is the reference.
		math.NaN(), math.Inf(1), []any{math.Inf(-1)}, map[string]any{"n": 1}, int64(2), []string{"x"},
	)
	for _, v := range values {
		checkAppendJSON(t, v)
	}
	if _, ok := appendJSON(nil, map[string]any{"a": []any{"b", math.NaN()}}); ok {
		t.Error("appendJSON accepts a NaN, which encoding/json refuses")
	}
}

// FuzzAppendJSON: for any JSON value, any string and any float64, appendJSON writes what
// encoding/json writes.
func FuzzAppendJSON(f *testing.F) {
	f.Add([]byte(`{"b":[1,2.5,-0,1e-7,1e21,"x\u2028"],"a":{"":null,"t":true}}`), "bad \xff \u2029 <&>\t\"", 1e-7)
	f.Add([]byte(`[]`), "", 0.1)
	f.Fuzz(func(t *testing.T, data []byte, s string, x float64) {
		var v any
		if json.Unmarshal(data, &v) == nil {
			checkAppendJSON(t, v)
		}
		checkAppendJSON(t, s)
		checkAppendJSON(t, x)
		checkAppendJSON(t, map[string]any{s: []any{s, x}, "k": s})
	})
}
