package operators

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
)

// semverEntry is one bundle of a semverPackage: its channel, version and upgrade edges.
type semverEntry struct{ channel, version, replaces, skipRange string }

// semverPackage renders package pkg (default channel stable) with a bundle per entry, as FBC YAML.
func semverPackage(pkg string, entries ...semverEntry) string {
	docs := []string{fmt.Sprintf("schema: olm.package\nname: %s\ndefaultChannel: stable\n", pkg)}
	var channels []string
	byChannel := map[string]string{}
	var bundles []string
	for _, e := range entries {
		if _, ok := byChannel[e.channel]; !ok {
			channels = append(channels, e.channel)
		}
		byChannel[e.channel] += fmt.Sprintf("- name: %s.v%s\n", pkg, e.version)
		if e.replaces != "" {
			byChannel[e.channel] += fmt.Sprintf("  replaces: %s.v%s\n", pkg, e.replaces)
		}
		if e.skipRange != "" {
			byChannel[e.channel] += fmt.Sprintf("  skipRange: %q\n", e.skipRange)
		}
		bundles = append(bundles, fmt.Sprintf("schema: olm.bundle\npackage: %s\nname: %s.v%s\nimage: registry.test/%s:%s\nproperties:\n- {type: olm.package, value: {packageName: %s, version: %s}}\n",
			pkg, pkg, e.version, pkg, e.version, pkg, e.version))
	}
	for _, ch := range channels {
		docs = append(docs, fmt.Sprintf("schema: olm.channel\npackage: %s\nname: %s\nentries:\n%s", pkg, ch, byChannel[ch]))
	}
	return strings.Join(append(docs, bundles...), "---\n")
}

// semverFBC offers, from each installed version, a successor within its semver-compatible range
// and one beyond it:
//   - one: 1.0.0 → 1.1.0 (replaces), 2.0.0 (skipRange >=1.0.0 <2.0.0: reachable from 1.0.0 and 1.1.0);
//   - zero: 0.1.0 → 0.1.1 (replaces), 0.2.0 (skipRange >=0.1.0 <0.2.0);
//   - tiny: 0.0.1 → 0.0.2 (replaces);
//   - side: 1.0.0 → 1.1.0 in the default channel stable, 2.0.0 (skipRange >=1.0.0 <2.0.0) in next.
var semverFBC = strings.Join([]string{
	semverPackage("one", semverEntry{"stable", "1.0.0", "", ""}, semverEntry{"stable", "1.1.0", "1.0.0", ""},
		semverEntry{"stable", "2.0.0", "1.1.0", ">=1.0.0 <2.0.0"}),
	semverPackage("zero", semverEntry{"stable", "0.1.0", "", ""}, semverEntry{"stable", "0.1.1", "0.1.0", ""},
		semverEntry{"stable", "0.2.0", "0.1.1", ">=0.1.0 <0.2.0"}),
	semverPackage("tiny", semverEntry{"stable", "0.0.1", "", ""}, semverEntry{"stable", "0.0.2", "0.0.1", ""}),
	semverPackage("side", semverEntry{"stable", "1.0.0", "", ""}, semverEntry{"stable", "1.1.0", "1.0.0", ""},
		semverEntry{"next", "2.0.0", "", ">=1.0.0 <2.0.0"}),
}, "---\n")

// TestSemverGuardRails: an installed Operator upgrades by itself only within its major version (a
// 0.x one within its minor, a 0.0.x one never); the newer version waits with a message saying why
// and how to take it, until spec.version, spec.approvedVersion or spec.upgradeScope AnyVersion
// takes it.
func TestSemverGuardRails(t *testing.T) {
	idx, err := olm.NewIndex(loadCatalog(t, "semver", 0, semverFBC))
	if err != nil {
		t.Fatal(err)
	}
	inst := func(name, version string) *Installed { return &Installed{BundleName: name, Version: version} }
	for _, tt := range []struct {
		name    string
		req     Request
		want    string   // the bundle resolved
		upgrade string   // Outcome.UpgradeAvailable (Manual)
		waiting string   // Outcome.Waiting's version
		message []string // in Outcome.Waiting's message
	}{
		{name: "1.x upgrades within major 1; 2.0.0 waits",
			req:  Request{Package: "one", Installed: inst("one.v1.0.0", "1.0.0")},
			want: "one.v1.1.0", waiting: "2.0.0",
			message: []string{"2.0.0 is available but waits: automatic upgrades stay within major 1", `spec.version`, `">=2.0.0 <3.0.0"`, "spec.upgradeScope: AnyVersion"}},
		{name: "the head of major 1 stays; 2.0.0 waits",
			req:  Request{Package: "one", Installed: inst("one.v1.1.0", "1.1.0")},
			want: "one.v1.1.0", waiting: "2.0.0"},
		{name: "0.x upgrades within its minor; 0.2.0 waits",
			req:  Request{Package: "zero", Installed: inst("zero.v0.1.0", "0.1.0")},
			want: "zero.v0.1.1", waiting: "0.2.0",
			message: []string{"0.2.0 is available but waits: automatic upgrades stay within minor 0.1", `">=0.2.0 <0.3.0"`}},
		{name: "0.0.x never upgrades automatically",
			req:  Request{Package: "tiny", Installed: inst("tiny.v0.0.1", "0.0.1")},
			want: "tiny.v0.0.1", waiting: "0.0.2",
			message: []string{"0.0.2 is available but waits: a 0.0.x version (0.0.1) is never upgraded automatically", `e.g. "0.0.2"`}},
		{name: "an explicit spec.version range takes the next major",
			req:  Request{Package: "one", VersionRange: ">=2.0.0 <3.0.0", Installed: inst("one.v1.1.0", "1.1.0")},
			want: "one.v2.0.0"},
		{name: "an explicit range is honoured as written, even a wide one",
			req:  Request{Package: "one", VersionRange: ">=1.0.0", Installed: inst("one.v1.0.0", "1.0.0")},
			want: "one.v2.0.0"},
		{name: "an exact spec.version in 0.x takes the next minor",
			req:  Request{Package: "zero", VersionRange: "0.2.0", Installed: inst("zero.v0.1.1", "0.1.1")},
			want: "zero.v0.2.0"},
		{name: "upgradeScope AnyVersion follows every catalog edge",
			req:  Request{Package: "one", AnyVersion: true, Installed: inst("one.v1.0.0", "1.0.0")},
			want: "one.v2.0.0"},
		{name: "upgradeScope AnyVersion in 0.0.x",
			req:  Request{Package: "tiny", AnyVersion: true, Installed: inst("tiny.v0.0.1", "0.0.1")},
			want: "tiny.v0.0.2"},
		{name: "a first install takes the newest version",
			req:  Request{Package: "one"},
			want: "one.v2.0.0"},
		{name: "Manual offers the same-major upgrade for approval; 2.0.0 waits and may be approved",
			req:  Request{Package: "one", Manual: true, Installed: inst("one.v1.0.0", "1.0.0")},
			want: "one.v1.0.0", upgrade: "1.1.0", waiting: "2.0.0",
			message: []string{`approve it with spec.approvedVersion: "2.0.0"`}},
		{name: "Manual: an approved next major is installed",
			req:  Request{Package: "one", Manual: true, ApprovedVersion: "2.0.0", Installed: inst("one.v1.1.0", "1.1.0")},
			want: "one.v2.0.0"},
		{name: "Manual with AnyVersion offers the next major for approval",
			req:  Request{Package: "one", Manual: true, AnyVersion: true, Installed: inst("one.v1.1.0", "1.1.0")},
			want: "one.v1.1.0", upgrade: "2.0.0"},
		{name: "a next major the Operator would not prefer (another channel than the default) does not wait",
			req:  Request{Package: "side", Installed: inst("side.v1.0.0", "1.0.0")},
			want: "side.v1.1.0"},
		{name: "the same without guard rails: the default channel still wins",
			req:  Request{Package: "side", AnyVersion: true, Installed: inst("side.v1.0.0", "1.0.0")},
			want: "side.v1.1.0"},
		{name: "upgradeConstraintPolicy Ignore stays within the major too",
			req:  Request{Package: "one", ConstraintPolicy: olm.Ignore, Installed: inst("one.v1.0.0", "1.0.0")},
			want: "one.v1.1.0", waiting: "2.0.0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Name = "op"
			o := Resolve(context.Background(), idx, []Request{tt.req})["op"]
			if o.Bundle == nil || o.Bundle.Name != tt.want {
				t.Fatalf("got %+v (%s), want %s", o.Bundle, o.Message, tt.want)
			}
			upgrade, waiting, message := "", "", ""
			if o.UpgradeAvailable != nil {
				upgrade = o.UpgradeAvailable.Version
			}
			if o.Waiting != nil {
				waiting, message = o.Waiting.Version, o.Waiting.Message
			}
			if upgrade != tt.upgrade || waiting != tt.waiting {
				t.Errorf("upgrade available %q, waiting %q; want %q, %q", upgrade, waiting, tt.upgrade, tt.waiting)
			}
			for _, s := range tt.message {
				if !strings.Contains(message, s) {
					t.Errorf("waiting message %q does not contain %q", message, s)
				}
			}
		})
	}
}

// TestSemverGuardRailsExplainAConflict: when the only way left for an installed Operator is beyond
// its compatible range (its installed bundle is gone from the catalog and spec.version is not set),
// resolution fails with the guard rails' message rather than jumping a major.
func TestSemverGuardRailsExplainAConflict(t *testing.T) {
	idx, err := olm.NewIndex(loadCatalog(t, "semver", 0, semverFBC))
	if err != nil {
		t.Fatal(err)
	}
	o := Resolve(context.Background(), idx, []Request{{Name: "op", Package: "one", Channel: "stable",
		Installed: &Installed{BundleName: "one.v1.5.0", Version: "1.5.0"}}})["op"]
	if o.Bundle != nil {
		t.Fatalf("got %s, want a failure: no automatic move across major 1", o.Bundle.Name)
	}
	for _, s := range []string{"bundle one.v2.0.0: 2.0.0 is available but waits: automatic upgrades stay within major 1", `">=2.0.0 <3.0.0"`} {
		if !strings.Contains(o.Message, s) {
			t.Errorf("message %q does not contain %q", o.Message, s)
		}
	}
	if o.Waiting == nil || o.Waiting.Version != "2.0.0" {
		t.Errorf("waiting %+v, want 2.0.0", o.Waiting)
	}
}
