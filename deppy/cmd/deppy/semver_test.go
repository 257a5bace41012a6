package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// semverCatalog: p 1.0.0 → 1.1.0 (replaces) and 2.0.0 (skipRange >=1.0.0 <2.0.0) in channel stable.
const semverCatalog = `{"schema":"olm.package","name":"p","defaultChannel":"stable"}
{"schema":"olm.channel","package":"p","name":"stable","entries":[{"name":"p.v1.0.0"},{"name":"p.v1.1.0","replaces":"p.v1.0.0"},{"name":"p.v2.0.0","replaces":"p.v1.1.0","skipRange":">=1.0.0 <2.0.0"}]}
{"schema":"olm.bundle","package":"p","name":"p.v1.0.0","image":"r/p:1.0.0","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}}]}
{"schema":"olm.bundle","package":"p","name":"p.v1.1.0","image":"r/p:1.1.0","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.1.0"}}]}
{"schema":"olm.bundle","package":"p","name":"p.v2.0.0","image":"r/p:2.0.0","properties":[{"type":"olm.package","value":{"packageName":"p","version":"2.0.0"}}]}
`

// TestResolveSemverGuardRails: `deppy resolve --require P --installed P@V` applies operator-controller's
// semver guard rails: the next major waits (a note; "waiting" in JSON) unless --upgrade-scope
// AnyVersion or a range takes it.
func TestResolveSemverGuardRails(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "catalog.json", semverCatalog)
	base := []string{"resolve", "--catalog", dir, "--installed", "p@1.0.0"}
	for _, tt := range []struct {
		name    string
		args    []string
		want    string
		waiting bool
	}{
		{"guarded", []string{"--require", "p"}, "p        p.v1.1.0  1.1.0", true},
		{"AnyVersion", []string{"--require", "p", "--upgrade-scope", "AnyVersion"}, "p        p.v2.0.0  2.0.0", false},
		{"a range", []string{"--require", "p@>=2.0.0 <3.0.0"}, "p        p.v2.0.0  2.0.0", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := deppy(t, "", append(base, tt.args...)...)
			if code != exitOK || !strings.Contains(out, tt.want) {
				t.Fatalf("exit %d, stdout lacks %q:\n%s\nstderr:\n%s", code, tt.want, out, errOut)
			}
			const note = `note: package "p": 2.0.0 is available but waits: automatic upgrades stay within major 1 (require it with a range, e.g. --require 'p@>=2.0.0 <3.0.0', or pass --upgrade-scope AnyVersion`
			if strings.Contains(out, note) != tt.waiting {
				t.Errorf("note present %v, want %v:\n%s", !tt.waiting, tt.waiting, out)
			}
		})
	}
	_, out, _ := deppy(t, "", append(base, "--require", "p", "-o", "json")...)
	var got resolveOutput
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Waiting) != 1 || !strings.Contains(got.Waiting[0], "2.0.0 is available but waits") {
		t.Errorf("json: %v\n%s", err, out)
	}
	if code, _, errOut := deppy(t, "", append(base, "--require", "p", "--upgrade-scope", "Major")...); code != exitBadInput || !strings.Contains(errOut, "want SemverCompatible or AnyVersion") {
		t.Errorf("bad --upgrade-scope: exit %d, %s", code, errOut)
	}
}
