package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
)

// channelCatalog: the default channel's head (stable 1.4.0) is lower than another channel's highest
// version, a release (candidate 2.0.0) and a pre-release (nightly 2.1.0-nightly.20260101); app
// depends on op.
const channelCatalog = `---
schema: olm.package
name: op
defaultChannel: stable
---
schema: olm.channel
package: op
name: stable
entries:
- name: op.v1.3.0
- name: op.v1.4.0
  replaces: op.v1.3.0
---
schema: olm.channel
package: op
name: candidate
entries:
- name: op.v1.4.0
- name: op.v2.0.0
  replaces: op.v1.4.0
---
schema: olm.channel
package: op
name: nightly
entries:
- name: op.v2.1.0-nightly.20260101
---
schema: olm.bundle
package: op
name: op.v1.3.0
image: example.com/op:1.3.0
properties:
- {type: olm.package, value: {packageName: op, version: 1.3.0}}
---
schema: olm.bundle
package: op
name: op.v1.4.0
image: example.com/op:1.4.0
properties:
- {type: olm.package, value: {packageName: op, version: 1.4.0}}
---
schema: olm.bundle
package: op
name: op.v2.0.0
image: example.com/op:2.0.0
properties:
- {type: olm.package, value: {packageName: op, version: 2.0.0}}
---
schema: olm.bundle
package: op
name: op.v2.1.0-nightly.20260101
image: example.com/op:2.1.0-nightly.20260101
properties:
- {type: olm.package, value: {packageName: op, version: 2.1.0-nightly.20260101}}
---
schema: olm.package
name: app
defaultChannel: stable
---
schema: olm.channel
package: app
name: stable
entries:
- name: app.v1.0.0
---
schema: olm.bundle
package: app
name: app.v1.0.0
image: example.com/app:1.0.0
properties:
- {type: olm.package, value: {packageName: app, version: 1.0.0}}
- {type: olm.package.required, value: {packageName: op, versionRange: ">=1.0.0"}}
`

// TestResolveChoosesDefaultChannelHead: with no channel, deppy resolve takes the default channel's
// head, as operator-controller does (operator-controller/internal/resolve tests the same catalog
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
