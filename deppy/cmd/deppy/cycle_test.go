package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// cycleCatalog holds dependency cycles: a → b → c → a (olm.package.required), x ⇄ y (each
// requires the other's API), s requires its own package, and u ⇄ v where v needs a u that
// does not exist.
const cycleCatalog = `---
schema: olm.package
name: a
defaultChannel: stable
---
schema: olm.channel
package: a
name: stable
entries: [{name: a.v1.0.0}]
---
schema: olm.bundle
package: a
name: a.v1.0.0
image: example.com/a:1.0.0
properties:
- {type: olm.package, value: {packageName: a, version: 1.0.0}}
- {type: olm.package.required, value: {packageName: b, versionRange: ">=1.0.0"}}
---
schema: olm.package
name: b
defaultChannel: stable
---
schema: olm.channel
package: b
name: stable
entries: [{name: b.v1.0.0}]
---
schema: olm.bundle
package: b
name: b.v1.0.0
image: example.com/b:1.0.0
properties:
- {type: olm.package, value: {packageName: b, version: 1.0.0}}
- {type: olm.package.required, value: {packageName: c, versionRange: ">=1.0.0"}}
---
schema: olm.package
name: c
defaultChannel: stable
---
schema: olm.channel
package: c
name: stable
entries: [{name: c.v1.0.0}]
---
schema: olm.bundle
package: c
name: c.v1.0.0
image: example.com/c:1.0.0
properties:
- {type: olm.package, value: {packageName: c, version: 1.0.0}}
- {type: olm.package.required, value: {packageName: a, versionRange: ">=1.0.0"}}
---
schema: olm.package
name: x
defaultChannel: stable
---
schema: olm.channel
package: x
name: stable
entries: [{name: x.v1.0.0}]
---
schema: olm.bundle
package: x
name: x.v1.0.0
image: example.com/x:1.0.0
properties:
- {type: olm.package, value: {packageName: x, version: 1.0.0}}
- {type: olm.gvk, value: {group: x.example.com, version: v1, kind: X}}
- {type: olm.gvk.required, value: {group: y.example.com, version: v1, kind: "Y"}}
---
schema: olm.package
name: "y"
defaultChannel: stable
---
schema: olm.channel
package: "y"
name: stable
entries: [{name: y.v1.0.0}]
---
schema: olm.bundle
package: "y"
name: y.v1.0.0
image: example.com/y:1.0.0
properties:
- {type: olm.package, value: {packageName: "y", version: 1.0.0}}
- {type: olm.gvk, value: {group: y.example.com, version: v1, kind: "Y"}}
- {type: olm.gvk.required, value: {group: x.example.com, version: v1, kind: X}}
---
schema: olm.package
name: s
defaultChannel: stable
---
schema: olm.channel
package: s
name: stable
entries: [{name: s.v1.0.0}]
---
schema: olm.bundle
package: s
name: s.v1.0.0
image: example.com/s:1.0.0
properties:
- {type: olm.package, value: {packageName: s, version: 1.0.0}}
- {type: olm.package.required, value: {packageName: s, versionRange: ">=1.0.0"}}
---
schema: olm.package
name: u
defaultChannel: stable
---
schema: olm.channel
package: u
name: stable
entries: [{name: u.v1.0.0}]
---
schema: olm.bundle
package: u
name: u.v1.0.0
image: example.com/u:1.0.0
properties:
- {type: olm.package, value: {packageName: u, version: 1.0.0}}
- {type: olm.package.required, value: {packageName: v, versionRange: ">=1.0.0"}}
---
schema: olm.package
name: v
defaultChannel: stable
---
schema: olm.channel
package: v
name: stable
entries: [{name: v.v1.0.0}]
---
schema: olm.bundle
package: v
name: v.v1.0.0
image: example.com/v:1.0.0
properties:
- {type: olm.package, value: {packageName: v, version: 1.0.0}}
- {type: olm.package.required, value: {packageName: u, versionRange: ">=2.0.0"}}
`

// TestResolveDependencyCycles: deppy resolve reads catalogs with dependency cycles, installs
// every member of a cycle that holds, and explains one that does not by naming the failing
// requirement and the cycle's packages.
func TestResolveDependencyCycles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "cycles/catalog.yaml", cycleCatalog)
	cat := filepath.Join(dir, "cycles")
	tests := []struct {
		require  string
		wantCode int
		want     string // "pkg=version ..." when solved, else the summary lines joined by "\n"
	}{
		{require: "a", wantCode: exitOK, want: "a=1.0.0 b=1.0.0 c=1.0.0"},
		{require: "c", wantCode: exitOK, want: "c=1.0.0 a=1.0.0 b=1.0.0"},
		{require: "x", wantCode: exitOK, want: "x=1.0.0 y=1.0.0"},
		{require: "s", wantCode: exitOK, want: "s=1.0.0"},
		{require: "u", wantCode: exitNoSolve, want: `package "v" 1.0.0 requires package "u" in range ">=2.0.0", but no version of "u" is in that range (available: 1.0.0)` + "\n" +
			`packages "u" and "v" depend on each other in a cycle: "u" → "v" → "u"`},
	}
	for _, tt := range tests {
		t.Run(tt.require, func(t *testing.T) {
			code, out, errOut := deppy(t, "", "resolve", "--catalog", cat, "--require", tt.require, "-o", "json")
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, out, errOut)
			}
			var got resolveOutput
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if tt.wantCode == exitOK {
				parts := make([]string, len(got.Selections))
				for i, s := range got.Selections {
					parts[i] = s.Package + "=" + s.Version
				}
				if g := strings.Join(parts, " "); g != tt.want {
					t.Fatalf("got %s, want %s", g, tt.want)
				}
				return
			}
			if got.Explanation == nil {
				t.Fatalf("no explanation: %s", out)
			}
			if g := strings.Join(got.Explanation.Summary, "\n"); g != tt.want {
				t.Fatalf("summary:\n%s\nwant:\n%s", g, tt.want)
			}
		})
	}

	// The text output prints the same summary, then every conflicting constraint of the cycle.
	code, out, _ := deppy(t, "", "resolve", "--catalog", cat, "--require", "u")
	if code != exitNoSolve {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	t.Logf("deppy resolve --require u:\n%s", out)
	for _, want := range []string{
		`packages "u" and "v" depend on each other in a cycle: "u" → "v" → "u"`,
		`  - package "u" 1.0.0 requires package "v" in range ">=1.0.0" (candidates: v.v1.0.0 from "cycles")`,
		`  - package "v" 1.0.0 requires package "u" in range ">=2.0.0", but no version of "u" is in that range (available: 1.0.0)`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout:\n%s\ndoes not contain %q", out, want)
		}
	}
}

// TestSolveDependencyCycles: deppy solve with variables that depend on each other.
func TestSolveDependencyCycles(t *testing.T) {
	tests := []struct {
		name     string
		problem  string
		wantCode int
		wantOut  []string
	}{
		{
			name:     "a cycle holds",
			problem:  "variables:\n- {id: a, constraints: [{mandatory: true}, {dependency: [b]}]}\n- {id: b, constraints: [{dependency: [c]}]}\n- {id: c, constraints: [{dependency: [a]}]}\n",
			wantCode: exitOK,
			wantOut:  []string{"Selected:\n  a\n  b\n  c\n"},
		},
		{
			name:     "a self-dependency holds",
			problem:  "variables:\n- {id: a, constraints: [{mandatory: true}, {dependency: [a]}]}\n",
			wantCode: exitOK,
			wantOut:  []string{"Selected:\n  a\n"},
		},
		{
			name:     "a cycle with a prohibited member",
			problem:  "variables:\n- {id: a, constraints: [{mandatory: true}, {dependency: [b]}]}\n- {id: b, constraints: [{dependency: [a]}, {prohibited: true}]}\n",
			wantCode: exitNoSolve,
			wantOut:  []string{"No solution.", "a requires at least one of b", "b is prohibited"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := deppy(t, tt.problem, "solve", "-f", "-")
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, out, errOut)
			}
			for _, want := range tt.wantOut {
				if !strings.Contains(out, want) {
					t.Errorf("stdout:\n%s\ndoes not contain %q", out, want)
				}
			}
		})
	}
}
