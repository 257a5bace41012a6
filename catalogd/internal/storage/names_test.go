package storage

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/olmv1/olmv1/catalogd/internal/fbc"
)

// TestUnusualNamesAreStoredAndServedAsWritten: channel and bundle names that fbc accepts — letters
// of other scripts (right-to-left ones too), upper case, symbols, inner spaces, 253 bytes — are
// indexed, found by exact name, read back unchanged, and found again after a restart (index.json
// round trip). Names never become paths: only the catalog name does.
func TestUnusualNamesAreStoredAndServedAsWritten(t *testing.T) {
	long := strings.Repeat("ü", 126) // 252 bytes
	names := []struct{ channel, bundle string }{
		{"安定版", "日本語-オペレーター.v1"},
		{"ערוץ", "שלום.v1"},
		{"Fast", "foo+bar@1~2"},
		{"a channel", "../../etc/passwd"},
		{"café", long},
	}
	var b strings.Builder
	b.WriteString(`{"schema":"olm.package","name":"pkg","defaultChannel":"Fast"}` + "\n")
	for i, n := range names {
		ch, _ := json.Marshal(n.channel)
		bu, _ := json.Marshal(n.bundle)
		b.WriteString(`{"schema":"olm.channel","package":"pkg","name":` + string(ch) + `,"entries":[{"name":` + string(bu) + `}]}` + "\n")
		b.WriteString(`{"schema":"olm.bundle","package":"pkg","name":` + string(bu) + `,"image":"example.com/b:1","properties":[{"type":"olm.package","value":{"packageName":"pkg","version":"1.0.` + strconv.Itoa(i) + `"}}]}` + "\n")
	}
	cat, err := fbc.Load(context.Background(), fstest.MapFS{"pkg/catalog.json": {Data: []byte(b.String())}})
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	s, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Put("unusual", cat)
	if err != nil {
		t.Fatal(err)
	}
	check := func(c *Content) {
		t.Helper()
		f, err := c.Open()
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, n := range names {
			for schema, name := range map[string]string{"olm.channel": n.channel, "olm.bundle": n.bundle} {
				got := c.Query(schema, "pkg", name)
				if len(got) != 1 || got[0].Name != name {
					t.Fatalf("%s %q: %+v", schema, name, got)
				}
				blob, err := ReadBlob(f, got[0])
				if err != nil {
					t.Fatal(err)
				}
				var v struct{ Name string }
				if err := json.Unmarshal(blob, &v); err != nil || v.Name != name {
					t.Fatalf("%s %q: blob %s (%v)", schema, name, blob, err)
				}
			}
		}
		if got := c.Query("", "pkg", ""); len(got) != 1+2*len(names) {
			t.Fatalf("package pkg: %d blobs, want %d", len(got), 1+2*len(names))
		}
	}
	check(c)
	s2, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	c2, ok := s2.Get("unusual")
	if !ok {
		t.Fatal("not served after a restart")
	}
	check(c2)
}
