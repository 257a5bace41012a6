package fbc

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"
)

// namedCatalog is a valid one-bundle catalog with the given package, channel and bundle names,
// written as JSON (names may hold any escape there; encoding/json turns invalid UTF-8 into U+FFFD).
func namedCatalog(pkg, channel, bundle string) fstest.MapFS {
	q := func(s string) string { return jsonString(s) }
	data := `{"schema":"olm.package","name":` + q(pkg) + `,"defaultChannel":` + q(channel) + `}
{"schema":"olm.channel","package":` + q(pkg) + `,"name":` + q(channel) + `,"entries":[{"name":` + q(bundle) + `}]}
{"schema":"olm.bundle","package":` + q(pkg) + `,"name":` + q(bundle) + `,"image":"example.com/b:1","properties":[{"type":"olm.package","value":{"packageName":` + q(pkg) + `,"version":"1.0.0"}}]}
`
	return fstest.MapFS{"pkg/catalog.json": {Data: []byte(data)}}
}

// jsonString quotes s for JSON, keeping invalid UTF-8 bytes as they are (so that the decoder, not
// the test, decides what becomes of them).
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[c>>4])
			b.WriteByte("0123456789abcdef"[c&15])
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// TestUnusualNamesAreRefused: names that cannot be served as written, or that read as another
// name, are refused as invalid content; the message names the field and quotes the name with its
// invisible characters escaped.
func TestUnusualNamesAreRefused(t *testing.T) {
	long := strings.Repeat("a", maxNameLength+1)
	for name, tc := range map[string]struct {
		pkg, channel, bundle string
		want                 []string
	}{
		"NUL in a package name":             {"foo\x00bar", "stable", "foo.v1", []string{`package name "foo\x00bar"`, "U+0000", "a control character"}},
		"escape sequence in a bundle name":  {"foo", "stable", "foo\x1b[31m.v1", []string{`bundle name "foo\x1b[31m.v1"`, "a control character"}},
		"right-to-left override":            {"foo", "stable\u202e1v", "foo.v1", []string{`channel name "stable\u202e1v"`, "U+202E (RIGHT-TO-LEFT OVERRIDE)", "changes the direction"}},
		"zero-width space":                  {"etcd\u200b", "stable", "foo.v1", []string{`package name "etcd\u200b"`, "U+200B (ZERO WIDTH SPACE)", "invisible formatting character"}},
		"zero-width joiner":                 {"foo", "stable", "foo\u200d.v1", []string{`bundle name "foo\u200d.v1"`, "U+200D (ZERO WIDTH JOINER)"}},
		"byte order mark":                   {"\ufefffoo", "stable", "foo.v1", []string{`package name "\ufefffoo"`, "U+FEFF"}},
		"no-break space":                    {"foo", "fast\u00a0lane", "foo.v1", []string{`channel name "fast\u00a0lane"`, "U+00A0 (NO-BREAK SPACE)", "looks like one"}},
		"line separator":                    {"foo", "stable", "foo\u2028.v1", []string{`bundle name "foo\u2028.v1"`, "line or paragraph separator"}},
		"private use":                       {"foo\ue000", "stable", "foo.v1", []string{`package name "foo\ue000"`, "private-use"}},
		"leading space":                     {" foo", "stable", "foo.v1", []string{`package name " foo"`, "starts or ends with a space"}},
		"decomposed accent":                 {"foo", "cafe\u0301", "foo.v1", []string{`channel name "cafe\u0301"`, "normalization form C", `write it as "caf\u00e9"`}},
		"invalid UTF-8 (JSON makes U+FFFD)": {"foo\xffbar", "stable", "foo.v1", []string{`package name "foo\ufffdbar"`, "U+FFFD", "replacement character"}},
		"254-byte package name":             {long, "stable", "foo.v1", []string{`package name "aaaa`, "(254 bytes) is too long", "at most 253 bytes"}},
		"254-byte channel name":             {"foo", long, "foo.v1", []string{`channel name "aaaa`, "(254 bytes) is too long"}},
		"254-byte bundle name":              {"foo", "stable", long, []string{`bundle name "aaaa`, "(254 bytes) is too long"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load(context.Background(), namedCatalog(tc.pkg, tc.channel, tc.bundle))
			if err == nil {
				t.Fatal("Load accepted the catalog")
			}
			if !IsInvalid(err) {
				t.Fatalf("want an InvalidError, got %T: %v", err, err)
			}
			t.Log(err)
			for _, want := range append([]string{`file "pkg/catalog.json"`}, tc.want...) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message lacks %q:\n%v", want, err)
				}
			}
		})
	}
}

// TestUnusualSchemaAndCustomBlobNames: the rules hold for the schema field and for blobs of other
// schemas, whose names have no length limit.
func TestUnusualSchemaAndCustomBlobNames(t *testing.T) {
	for doc, want := range map[string]string{
		`{"schema":"olm.package\u200b","name":"foo"}`:                  `file "c.json": blob: schema "olm.package\u200b" holds U+200B (ZERO WIDTH SPACE)`,
		`{"schema":"example.custom","package":"foo","name":"a\u0000"}`: `file "c.json": example.custom blob of package "foo": name "a\x00" holds U+0000`,
	} {
		_, err := Load(context.Background(), fstest.MapFS{"c.json": {Data: []byte(doc)}})
		if !IsInvalid(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", doc, err, want)
		}
	}
	long := strings.Repeat("n", 1000)
	doc := `{"schema":"olm.package","name":"foo","defaultChannel":"s"}
{"schema":"olm.channel","package":"foo","name":"s","entries":[{"name":"foo.v1"}]}
{"schema":"olm.bundle","package":"foo","name":"foo.v1","image":"example.com/b:1","properties":[{"type":"olm.package","value":{"packageName":"foo","version":"1.0.0"}}]}
{"schema":"example.custom","package":"foo","name":"` + long + `"}
`
	if _, err := Load(context.Background(), fstest.MapFS{"c.json": {Data: []byte(doc)}}); err != nil {
		t.Fatalf("a long name in a blob of another schema: %v", err)
	}
}

// TestInvalidUTF8InYAMLNames: YAML can carry bytes that are not UTF-8 (a !!binary string); the
// name is refused rather than served as U+FFFD in the blob while the index holds the raw byte.
func TestInvalidUTF8InYAMLNames(t *testing.T) {
	doc := "schema: olm.channel\npackage: foo\nname: !!binary c3Rh/2JsZQ==\n" // "sta\xffble"
	_, err := Load(context.Background(), fstest.MapFS{"c.yaml": {Data: []byte(doc)}})
	var ie *InvalidError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), `channel name "sta\xffble" is not valid UTF-8 (byte 0xff at offset 3)`) {
		t.Fatalf("got %v", err)
	}
}

// TestUnusualButVisibleNamesAreServedAsWritten: channel and bundle names with letters of any
// script, upper case, symbols and inner spaces, and names of exactly 253 bytes, are accepted, and
// blobs and meta fields hold them unchanged.
func TestUnusualButVisibleNamesAreServedAsWritten(t *testing.T) {
	for _, tc := range []struct{ pkg, channel, bundle string }{
		// (operator-registry holds package names to lower-case DNS labels.)
		{"cafe", "café", "café-operator.v1.0.0"},
		{"jp", "安定版", "日本語-オペレーター.v1"},
		{"he", "ערוץ", "שלום.v1"}, // right-to-left letters need no override
		{"foo", "Fast", "foo+bar@1~2"},
		{"foo", "a channel", "foo bar.v1"}, // inner spaces are visible
		{strings.Repeat("p", 63), strings.Repeat("c", maxNameLength), strings.Repeat("b", maxNameLength)},
	} {
		cat, err := Load(context.Background(), namedCatalog(tc.pkg, tc.channel, tc.bundle))
		if err != nil {
			t.Errorf("%q/%q/%q: %v", tc.pkg, tc.channel, tc.bundle, err)
			continue
		}
		want := map[string]string{"olm.package": tc.pkg, "olm.channel": tc.channel, "olm.bundle": tc.bundle}
		metas, err := cat.ReadMetas()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range metas {
			if m.Name != want[m.Schema] {
				t.Errorf("%s name %q, want %q", m.Schema, m.Name, want[m.Schema])
			}
			if m.Schema != "olm.package" && m.Package != tc.pkg {
				t.Errorf("%s package %q, want %q", m.Schema, m.Package, tc.pkg)
			}
			if !strings.Contains(string(m.Blob), `"name":`+jsonString(want[m.Schema])) {
				t.Errorf("%s blob does not hold the name as written: %s", m.Schema, m.Blob)
			}
		}
	}
}
