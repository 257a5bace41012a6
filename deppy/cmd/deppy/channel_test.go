package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
)

// channelCatalog is the catalog shape of the one channel rule, shared with operator-controller's
// resolver test.
var channelCatalog = mustRead("../../pkg/olm/testdata/channel-rule/catalog.yaml")

func mustRead(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// TestResolveChoosesDefaultChannelHead: with no channel, deppy resolve takes the default channel's
// head, as operator-controller does (deppy/pkg/operators tests the same catalog
// shape through its own resolver); an explicit channel is used as given. Each answer of the CLI is
// also checked against the library call it makes, olm.Resolve.
func TestResolveChoosesDefaultChannelHead(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "channels/catalog.yaml", channelCatalog)
	catDir := filepath.Join(dir, "channels")
	cat, err := olm.LoadCatalogDir(t.Context(), "", 0, catDir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := olm.NewIndex(cat)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		require string
		want    string // "pkg=version ..." in result order
	}{
		{require: "op", want: "op=1.4.0"},
		{require: "op#candidate", want: "op=2.0.0"},
		{require: "op#nightly", want: "op=2.1.0-nightly.20260101"},
		{require: "op#stable", want: "op=1.4.0"},
		{require: "op@>=2.0.0", want: "op=2.0.0"}, // only another channel fits (a range excludes pre-releases)
		{require: "app", want: "app=1.0.0 op=1.4.0"},
	}
	for _, tt := range tests {
		t.Run(tt.require, func(t *testing.T) {
			code, out, errOut := deppy(t, "", "resolve", "--catalog", catDir, "--require", tt.require, "-o", "json")
			if code != exitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			var got resolveOutput
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if s := chosen(got.Selections); s != tt.want {
				t.Errorf("deppy resolve --require %s: got %q, want %q", tt.require, s, tt.want)
			}
			req, err := olm.ParseRequirement(tt.require)
			if err != nil {
				t.Fatal(err)
			}
			res, err := olm.Resolve(t.Context(), idx, olm.Problem{Requirements: []olm.Requirement{req}})
			if err != nil {
				t.Fatal(err)
			}
			if s := chosen(res.Selections); s != tt.want {
				t.Errorf("olm.Resolve(%s): got %q, want %q", tt.require, s, tt.want)
			}
		})
	}
}

func TestResolveHelpStatesTheChannelRule(t *testing.T) {
	_, out, _ := deppy(t, "", "help", "resolve")
	for _, want := range []string{"default channel's head", "#CHANNEL restricts"} {
		if !strings.Contains(out, want) {
			t.Errorf("deppy help resolve does not mention %q:\n%s", want, out)
		}
	}
}

func chosen(sels []olm.Selection) string {
	parts := make([]string, len(sels))
	for i, s := range sels {
		parts[i] = s.Package + "=" + s.Version
	}
	return strings.Join(parts, " ")
}
