package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// seedCatalog is the brief's example as FBC: a 1.0.0 requires b 1.2.0,
// b 1.2.0 requires c 1.3.0; c has 1.3.0 and 1.4.0.
const seedCatalog = `---
schema: olm.package
name: a
defaultChannel: stable
---
schema: olm.channel
package: a
name: stable
entries:
- name: a.v1.0.0
---
schema: olm.bundle
package: a
name: a.v1.0.0
image: example.com/a:1.0.0
properties:
- type: olm.package
  value: {packageName: a, version: 1.0.0}
- type: olm.package.required
  value: {packageName: b, versionRange: 1.2.0}
---
schema: olm.package
name: b
defaultChannel: stable
---
schema: olm.channel
package: b
name: stable
entries:
- name: b.v1.2.0
---
schema: olm.bundle
package: b
name: b.v1.2.0
image: example.com/b:1.2.0
properties:
- type: olm.package
  value: {packageName: b, version: 1.2.0}
- type: olm.package.required
  value: {packageName: c, versionRange: 1.3.0}
---
schema: olm.package
name: c
defaultChannel: stable
---
schema: olm.channel
package: c
name: stable
entries:
- name: c.v1.3.0
- name: c.v1.4.0
  replaces: c.v1.3.0
---
schema: olm.bundle
package: c
name: c.v1.3.0
image: example.com/c:1.3.0
properties:
- type: olm.package
  value: {packageName: c, version: 1.3.0}
---
schema: olm.bundle
package: c
name: c.v1.4.0
image: example.com/c:1.4.0
properties:
- type: olm.package
  value: {packageName: c, version: 1.4.0}
`

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func deppy(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(t.Context(), args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestResolveCommand(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "seed/catalog.yaml", seedCatalog)
	cat := "seed=" + filepath.Join(dir, "seed")

	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string
		wantErr  string
	}{
		{
			name:     "resolves with dependencies",
			args:     []string{"resolve", "--catalog", cat, "--require", "a"},
			wantCode: exitOK,
			wantOut:  []string{"a        a.v1.0.0  1.0.0    seed     Required", "b        b.v1.2.0  1.2.0", "Dependency  a.v1.0.0", "c        c.v1.3.0"},
		},
		{
			name:     "seed example: installed c blocks the downgrade",
			args:     []string{"resolve", "--catalog", cat, "--require", "a", "--installed", "c@1.4.0"},
			wantCode: exitNoSolve,
			wantOut:  []string{"No solution.", `package "b" 1.2.0 requires package "c" in range "1.3.0", but package "c" 1.4.0 is installed and may not be downgraded`},
		},
		{
			name:     "seed example with Ignore",
			args:     []string{"resolve", "--catalog", cat, "--require", "a", "--installed", "c@1.4.0", "--upgrade-policy", "Ignore"},
			wantCode: exitOK,
			wantOut:  []string{"c        c.v1.3.0  1.3.0    seed     Installed", "1.4.0"},
		},
		{
			name:     "yaml output",
			args:     []string{"resolve", "--catalog", cat, "--require", "c@1.3.0", "-o", "yaml"},
			wantCode: exitOK,
			wantOut:  []string{"resolved: true", "- bundle: c.v1.3.0", "  reason: Required"},
		},
		{
			name:     "kubeconfig that is no kubeconfig",
			args:     []string{"resolve", "--kubeconfig", "/dev/null"},
			wantCode: exitBadInput,
			wantErr:  "--kubeconfig /dev/null: no cluster is configured in it",
		},
		{name: "missing flags", args: []string{"resolve", "--catalog", cat}, wantCode: exitBadInput, wantErr: "want at least one --catalog and one --require"},
		{name: "bad requirement", args: []string{"resolve", "--catalog", cat, "--require", "a@!!"}, wantCode: exitBadInput, wantErr: `invalid version range "!!"`},
		{name: "bad policy", args: []string{"resolve", "--catalog", cat, "--require", "a", "--upgrade-policy", "Maybe"}, wantCode: exitBadInput, wantErr: "want Enforce or Ignore"},
		{name: "bad output", args: []string{"resolve", "-o", "xml"}, wantCode: exitBadInput, wantErr: "want text, yaml or json"},
		{name: "missing catalog dir", args: []string{"resolve", "--catalog", filepath.Join(dir, "nope"), "--require", "a"}, wantCode: exitBadInput, wantErr: "pass a directory holding FBC"},
		{name: "bad catalog priority", args: []string{"resolve", "--catalog", "x:high=" + dir, "--require", "a"}, wantCode: exitBadInput, wantErr: `priority "high" is not an integer`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := deppy(t, "", tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, out, errOut)
			}
			for _, want := range tt.wantOut {
				if !strings.Contains(out, want) {
					t.Errorf("stdout:\n%s\ndoes not contain %q", out, want)
				}
			}
			if tt.wantErr != "" && !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("stderr:\n%s\ndoes not contain %q", errOut, tt.wantErr)
			}
		})
	}
}

func TestResolveJSONExplanation(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "catalog.yaml", seedCatalog)
	code, out, _ := deppy(t, "", "resolve", "--catalog", dir, "--require", "a", "--installed", "c@1.4.0", "-o", "json")
	if code != exitNoSolve {
		t.Fatalf("exit %d", code)
	}
	var got resolveOutput
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got.Resolved || got.Explanation == nil || len(got.Explanation.Summary) != 1 || len(got.Explanation.Reasons) < 3 {
		t.Fatalf("unexpected output: %+v", got)
	}
}

func TestSolveCommand(t *testing.T) {
	dir := t.TempDir()
	ok := writeFile(t, dir, "ok.yaml", `
variables:
  - id: app
    constraints:
      - mandatory: true
      - dependency: [db-v2, db-v1]
  - id: db-v2
    constraints:
      - conflict: legacy
  - id: db-v1
  - id: legacy
    constraints:
      - mandatory: true
`)
	bad := writeFile(t, dir, "bad.yaml", `
variables:
  - id: app
    constraints:
      - mandatory: true
      - dependency: [db]
  - id: db
    constraints:
      - prohibited: true
        message: the database is blocked by policy
`)
	tests := []struct {
		name     string
		args     []string
		stdin    string
		wantCode int
		wantOut  []string
		wantErr  string
	}{
		{name: "text", args: []string{"solve", "-f", ok}, wantCode: exitOK, wantOut: []string{"Selected:\n  app\n  db-v1\n  legacy\n"}},
		{name: "json", args: []string{"solve", "-f", ok, "-o", "json"}, wantCode: exitOK, wantOut: []string{`"satisfiable": true`, `"db-v1"`}},
		{name: "yaml from stdin", args: []string{"solve", "-f", "-", "-o", "yaml"}, stdin: "variables:\n- id: a\n  constraints: [{mandatory: true}]\n", wantCode: exitOK, wantOut: []string{"satisfiable: true\nselected:\n- a\n"}},
		{name: "no solution", args: []string{"solve", "-f", bad}, wantCode: exitNoSolve, wantOut: []string{"No solution.", "the database is blocked by policy", "app requires at least one of db"}},
		{name: "no solution yaml", args: []string{"solve", "-f", bad, "-o", "yaml"}, wantCode: exitNoSolve, wantOut: []string{"satisfiable: false", "reasons:"}},
		{name: "missing -f", args: []string{"solve"}, wantCode: exitBadInput, wantErr: "want -f FILE"},
		{name: "missing file", args: []string{"solve", "-f", filepath.Join(dir, "nope.yaml")}, wantCode: exitBadInput, wantErr: "no such file"},
		{name: "invalid file", args: []string{"solve", "-f", "-"}, stdin: "variables: [{id: a, constraints: [{dependency: [b]}]}]", wantCode: exitBadInput, wantErr: `refers to unknown variable "b"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := deppy(t, tt.stdin, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, out, errOut)
			}
			for _, want := range tt.wantOut {
				if !strings.Contains(out, want) {
					t.Errorf("stdout:\n%s\ndoes not contain %q", out, want)
				}
			}
			if tt.wantErr != "" && !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("stderr:\n%s\ndoes not contain %q", errOut, tt.wantErr)
			}
		})
	}
}

func TestHelpHasExamples(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"help"}, {"help", "solve"}, {"help", "resolve"}, {"solve", "--help"}, {"resolve", "-h"}} {
		code, out, errOut := deppy(t, "", args...)
		if code != exitOK || !strings.Contains(out, "Examples:") || !strings.Contains(out, "deppy ") {
			t.Errorf("deppy %v: exit %d, stdout:\n%s\nstderr:\n%s", args, code, out, errOut)
		}
	}
	if code, _, errOut := deppy(t, "", "frobnicate"); code != exitBadInput || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Errorf("unknown command: exit %d, %s", code, errOut)
	}
	if code, _, _ := deppy(t, ""); code != exitBadInput {
		t.Errorf("no arguments: exit %d", code)
	}
}
