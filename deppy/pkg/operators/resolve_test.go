package operators

import (
	"context"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
)

// mainFBC is a small catalog:
//   - a: 0.1.0 → 0.2.0 → 0.3.0 (replaces chain) in stable, 1.0.0 in fast (no edge from 0.x);
//   - b 1.0.0 requires package c >=1.0.0; c 1.0.0 and 1.1.0;
//   - g 1.0.0 requires the API example.com/v1 Widget, which w 1.0.0 provides;
//   - old: deprecated package with a deprecated channel and bundle; plain: a plain+v0 bundle that
//     suggests a namespace.
const mainFBC = `
schema: olm.package
name: a
defaultChannel: stable
---
schema: olm.channel
package: a
name: stable
entries:
- name: a.v0.1.0
- name: a.v0.2.0
  replaces: a.v0.1.0
- name: a.v0.3.0
  replaces: a.v0.2.0
---
schema: olm.channel
package: a
name: fast
entries:
- name: a.v1.0.0
---
schema: olm.bundle
package: a
name: a.v0.1.0
image: registry.test/a:0.1.0
properties:
- {type: olm.package, value: {packageName: a, version: 0.1.0}}
---
schema: olm.bundle
package: a
name: a.v0.2.0
image: registry.test/a:0.2.0
properties:
- {type: olm.package, value: {packageName: a, version: 0.2.0}}
---
schema: olm.bundle
package: a
name: a.v0.3.0
image: registry.test/a:0.3.0
properties:
- {type: olm.package, value: {packageName: a, version: 0.3.0}}
---
schema: olm.bundle
package: a
name: a.v1.0.0
image: registry.test/a:1.0.0
properties:
- {type: olm.package, value: {packageName: a, version: 1.0.0}}
---
schema: olm.package
name: b
defaultChannel: stable
---
schema: olm.channel
package: b
name: stable
entries:
- name: b.v1.0.0
---
schema: olm.bundle
package: b
name: b.v1.0.0
image: registry.test/b:1.0.0
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
entries:
- name: c.v1.0.0
- name: c.v1.1.0
  replaces: c.v1.0.0
---
schema: olm.bundle
package: c
name: c.v1.0.0
image: registry.test/c:1.0.0
properties:
- {type: olm.package, value: {packageName: c, version: 1.0.0}}
---
schema: olm.bundle
package: c
name: c.v1.1.0
image: registry.test/c:1.1.0
properties:
- {type: olm.package, value: {packageName: c, version: 1.1.0}}
---
schema: olm.package
name: g
defaultChannel: stable
---
schema: olm.channel
package: g
name: stable
entries:
- name: g.v1.0.0
---
schema: olm.bundle
package: g
name: g.v1.0.0
image: registry.test/g:1.0.0
properties:
- {type: olm.package, value: {packageName: g, version: 1.0.0}}
- {type: olm.gvk.required, value: {group: example.com, version: v1, kind: Widget}}
---
schema: olm.package
name: w
defaultChannel: stable
---
schema: olm.channel
package: w
name: stable
entries:
- name: w.v1.0.0
---
schema: olm.bundle
package: w
name: w.v1.0.0
image: registry.test/w:1.0.0
properties:
- {type: olm.package, value: {packageName: w, version: 1.0.0}}
- {type: olm.gvk, value: {group: example.com, version: v1, kind: Widget}}
---
schema: olm.package
name: old
defaultChannel: legacy
---
schema: olm.channel
package: old
name: legacy
entries:
- name: old.v1.0.0
---
schema: olm.bundle
package: old
name: old.v1.0.0
image: registry.test/old:1.0.0
properties:
- {type: olm.package, value: {packageName: old, version: 1.0.0}}
---
schema: olm.deprecations
package: old
entries:
- reference: {schema: olm.package}
  message: old is no longer maintained
- reference: {schema: olm.channel, name: legacy}
  message: legacy is frozen
- reference: {schema: olm.bundle, name: old.v1.0.0}
  message: old 1.0.0 has a CVE
---
schema: olm.package
name: plain
defaultChannel: stable
---
schema: olm.channel
package: plain
name: stable
entries:
- name: plain.v0.1.0
---
schema: olm.bundle
package: plain
name: plain.v0.1.0
image: registry.test/plain:0.1.0
properties:
- {type: olm.package, value: {packageName: plain, version: 0.1.0}}
- {type: olm.bundle.mediatype, value: plain+v0}
- {type: olm.csv.metadata, value: {annotations: {operatorframework.io/suggested-namespace: plain-system}}}
`

// otherFBC offers a 0.3.0 of package a too, from a second catalog with a higher priority.
const otherFBC = `
schema: olm.package
name: a
defaultChannel: stable
---
schema: olm.channel
package: a
name: stable
entries:
- name: a.v0.3.0
---
schema: olm.bundle
package: a
name: a.v0.3.0
image: other.test/a:0.3.0
properties:
- {type: olm.package, value: {packageName: a, version: 0.3.0}}
`

func loadCatalog(t testing.TB, name string, priority int, fbc string) *olm.Catalog {
	t.Helper()
	cfg, err := declcfg.LoadReader(strings.NewReader(fbc))
	if err != nil {
		t.Fatalf("parsing catalog %s: %v", name, err)
	}
	c, err := olm.NewCatalog(name, priority, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func testIndex(t testing.TB) *olm.Index {
	t.Helper()
	idx, err := olm.NewIndex(loadCatalog(t, "main", 0, mainFBC), loadCatalog(t, "other", 10, otherFBC))
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// want is the expected outcome of one request: the bundle name and catalog, or substrings of the
// failure message.
type want struct {
	bundle, catalog string
	failure         []string
	upgrade         string
}

func TestResolve(t *testing.T) {
	idx := testIndex(t)
	inst := func(name, version string) *Installed { return &Installed{BundleName: name, Version: version} }
	tests := []struct {
		name string
		reqs []Request
		want map[string]want
	}{
		{
			name: "highest version of the default channel, then catalog priority",
			reqs: []Request{{Name: "op-a", Package: "a"}},
			want: map[string]want{"op-a": {bundle: "a.v0.3.0", catalog: "other"}},
		},
		{
			name: "any channel when the default channel has no match",
			reqs: []Request{{Name: "op-a", Package: "a", VersionRange: ">=1.0.0"}},
			want: map[string]want{"op-a": {bundle: "a.v1.0.0", catalog: "main"}},
		},
		{
			name: "channel and range filter; priority breaks the tie between catalogs",
			reqs: []Request{{Name: "op-a", Package: "a", Channel: "stable", VersionRange: "<1.0.0"}},
			want: map[string]want{"op-a": {bundle: "a.v0.3.0", catalog: "other"}},
		},
		{
			name: "catalog selection restricts candidates",
			reqs: []Request{{Name: "op-a", Package: "a", VersionRange: "0.3.0", Catalogs: []string{"main"}}},
			want: map[string]want{"op-a": {bundle: "a.v0.3.0", catalog: "main"}},
		},
		{
			name: "a selector matching no catalog fails with a hint",
			reqs: []Request{{Name: "op-a", Package: "a", Catalogs: []string{}}},
			want: map[string]want{"op-a": {failure: []string{"catalogSelector matches no serving Catalog"}}},
		},
		{
			// AnyVersion: 0.1.0 → 0.2.0 crosses a 0.x minor, which the semver guard rails hold back.
			name: "Enforce moves one replaces edge from the installed bundle",
			reqs: []Request{{Name: "op-a", Package: "a", Channel: "stable", Catalogs: []string{"main"}, AnyVersion: true, Installed: inst("a.v0.1.0", "0.1.0")}},
			want: map[string]want{"op-a": {bundle: "a.v0.2.0", catalog: "main"}},
		},
		{
			name: "Enforce refuses a version that no edge reaches and names the constraint",
			reqs: []Request{{Name: "op-a", Package: "a", VersionRange: "1.0.0", Installed: inst("a.v0.2.0", "0.2.0")}},
			want: map[string]want{"op-a": {failure: []string{`"a"`, "0.2.0", "upgrade"}}},
		},
		{
			name: "Ignore allows the jump",
			reqs: []Request{{Name: "op-a", Package: "a", VersionRange: "1.0.0", ConstraintPolicy: olm.Ignore, Installed: inst("a.v0.2.0", "0.2.0")}},
			want: map[string]want{"op-a": {bundle: "a.v1.0.0", catalog: "main"}},
		},
		{
			name: "Ignore allows a downgrade",
			reqs: []Request{{Name: "op-a", Package: "a", VersionRange: "0.1.0", ConstraintPolicy: olm.Ignore, Installed: inst("a.v0.3.0", "0.3.0")}},
			want: map[string]want{"op-a": {bundle: "a.v0.1.0", catalog: "main"}},
		},
		{
			name: "Manual stays on the installed version and reports the upgrade",
			reqs: []Request{{Name: "op-a", Package: "a", Channel: "stable", Catalogs: []string{"main"}, Manual: true, AnyVersion: true, Installed: inst("a.v0.1.0", "0.1.0")}},
			want: map[string]want{"op-a": {bundle: "a.v0.1.0", catalog: "main", upgrade: "0.2.0"}},
		},
		{
			name: "Manual moves once the upgrade is approved",
			reqs: []Request{{Name: "op-a", Package: "a", Channel: "stable", Catalogs: []string{"main"}, Manual: true, ApprovedVersion: "0.2.0", Installed: inst("a.v0.1.0", "0.1.0")}},
			want: map[string]want{"op-a": {bundle: "a.v0.2.0", catalog: "main"}},
		},
		{
			name: "Manual without an installed bundle installs the best bundle",
			reqs: []Request{{Name: "op-a", Package: "a", Channel: "stable", Catalogs: []string{"main"}, Manual: true}},
			want: map[string]want{"op-a": {bundle: "a.v0.3.0", catalog: "main"}},
		},
		{
			name: "Manual up to date reports no upgrade",
			reqs: []Request{{Name: "op-a", Package: "a", Channel: "stable", Catalogs: []string{"main"}, Manual: true, Installed: inst("a.v0.3.0", "0.3.0")}},
			want: map[string]want{"op-a": {bundle: "a.v0.3.0", catalog: "main"}},
		},
		{
			name: "a dependency no Operator installs blocks the bundle and says which Operator to create",
			reqs: []Request{{Name: "op-b", Package: "b"}},
			want: map[string]want{"op-b": {failure: []string{`"c"`, "not installed by any Operator", `packageName "c"`}}},
		},
		{
			name: "the dependency is satisfied by another Operator",
			reqs: []Request{{Name: "op-b", Package: "b"}, {Name: "op-c", Package: "c"}},
			want: map[string]want{"op-b": {bundle: "b.v1.0.0", catalog: "main"}, "op-c": {bundle: "c.v1.1.0", catalog: "main"}},
		},
		{
			name: "a required API no Operator provides names the providing package",
			reqs: []Request{{Name: "op-g", Package: "g"}},
			want: map[string]want{"op-g": {failure: []string{"Widget", `packageName "w"`}}},
		},
		{
			name: "the required API is provided by another Operator",
			reqs: []Request{{Name: "op-g", Package: "g"}, {Name: "op-w", Package: "w"}},
			want: map[string]want{"op-g": {bundle: "g.v1.0.0", catalog: "main"}, "op-w": {bundle: "w.v1.0.0", catalog: "main"}},
		},
		{
			name: "a failing Operator does not block the others",
			reqs: []Request{{Name: "op-a", Package: "a", Order: 1}, {Name: "op-x", Package: "missing", Order: 2}},
			want: map[string]want{"op-a": {bundle: "a.v0.3.0", catalog: "other"}, "op-x": {failure: []string{`"missing"`}}},
		},
		{
			name: "when two Operators conflict the newer one gives way",
			reqs: []Request{
				{Name: "op-c", Package: "c", VersionRange: "1.0.0", Order: 1},
				{Name: "op-b", Package: "b", Order: 2},
			},
			want: map[string]want{"op-c": {bundle: "c.v1.0.0", catalog: "main"}, "op-b": {bundle: "b.v1.0.0", catalog: "main"}},
		},
		{
			name: "one Operator per package",
			reqs: []Request{{Name: "first", Package: "a", Order: 1}, {Name: "second", Package: "a", Order: 2}},
			want: map[string]want{"first": {bundle: "a.v0.3.0", catalog: "other"}, "second": {failure: []string{`already requested by Operator "first"`}}},
		},
		{
			name: "an invalid version range fails only its Operator",
			reqs: []Request{{Name: "bad", Package: "a", VersionRange: ">>1"}, {Name: "good", Package: "c"}},
			want: map[string]want{"bad": {failure: []string{"spec.version"}}, "good": {bundle: "c.v1.1.0", catalog: "main"}},
		},
		{
			name: "an Operator that cannot resolve keeps others from displacing its installed bundle",
			reqs: []Request{
				{Name: "op-c", Package: "c", VersionRange: "9.9.9", Installed: inst("c.v1.0.0", "1.0.0"), Order: 1},
				{Name: "op-b", Package: "b", Order: 2},
			},
			want: map[string]want{"op-c": {failure: []string{`"c"`, "9.9.9"}}, "op-b": {bundle: "b.v1.0.0", catalog: "main"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Resolve(context.Background(), idx, tt.reqs)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d outcomes, want %d: %+v", len(got), len(tt.want), got)
			}
			for name, w := range tt.want {
				o := got[name]
				if w.failure != nil {
					if o.Bundle != nil {
						t.Errorf("%s: got bundle %s, want a failure", name, o.Bundle.Name)
						continue
					}
					t.Logf("%s: %s", name, o.Message)
					for _, s := range w.failure {
						if !strings.Contains(o.Message, s) {
							t.Errorf("%s: message %q does not contain %q", name, o.Message, s)
						}
					}
					continue
				}
				if o.Bundle == nil {
					t.Errorf("%s: no bundle: %s", name, o.Message)
					continue
				}
				if o.Bundle.Name != w.bundle || o.Bundle.Catalog != w.catalog {
					t.Errorf("%s: got %s from %q, want %s from %q", name, o.Bundle.Name, o.Bundle.Catalog, w.bundle, w.catalog)
				}
				gotUpgrade := ""
				if o.UpgradeAvailable != nil {
					gotUpgrade = o.UpgradeAvailable.Version
				}
				if gotUpgrade != w.upgrade {
					t.Errorf("%s: upgrade available %q, want %q", name, gotUpgrade, w.upgrade)
				}
			}
		})
	}
}

func TestBundleDetails(t *testing.T) {
	idx := testIndex(t)
	got := Resolve(context.Background(), idx, []Request{{Name: "p", Package: "plain"}, {Name: "o", Package: "old"}, {Name: "a", Package: "a", VersionRange: "1.0.0"}})
	p := got["p"].Bundle
	if p == nil || p.MediaType != "plain+v0" || p.SuggestedNamespace != "plain-system" || p.Image != "registry.test/plain:0.1.0" {
		t.Errorf("plain bundle: %+v (%s)", p, got["p"].Message)
	}
	o := got["o"].Bundle
	if o == nil || o.PackageDeprecation != "old is no longer maintained" || o.ChannelDeprecation != "legacy is frozen" || o.BundleDeprecation != "old 1.0.0 has a CVE" {
		t.Errorf("deprecated bundle: %+v (%s)", o, got["o"].Message)
	}
	a := got["a"].Bundle
	if a == nil || a.MediaType != "" || a.PackageDeprecation != "" || a.ChannelDeprecation != "" || a.BundleDeprecation != "" {
		t.Errorf("plain registry bundle: %+v", a)
	}
}

func TestResolveIsDeterministic(t *testing.T) {
	idx := testIndex(t)
	reqs := []Request{{Name: "op-b", Package: "b"}, {Name: "op-c", Package: "c"}, {Name: "op-a", Package: "a"}, {Name: "op-g", Package: "g"}}
	first := Resolve(context.Background(), idx, reqs)
	for i := 0; i < 5; i++ {
		reqs[0], reqs[len(reqs)-1] = reqs[len(reqs)-1], reqs[0]
		again := Resolve(context.Background(), idx, reqs)
		for name, o := range first {
			if (o.Bundle == nil) != (again[name].Bundle == nil) || o.Message != again[name].Message ||
				(o.Bundle != nil && o.Bundle.Name != again[name].Bundle.Name) {
				t.Fatalf("%s: %+v then %+v", name, o, again[name])
			}
		}
	}
}

// tieFBC is package t at version 1.0.0 (with a custom property and a large olm.bundle.object one).
const tieFBC = `
schema: olm.package
name: t
defaultChannel: stable
---
schema: olm.channel
package: t
name: stable
entries:
- name: t.v1.0.0
---
schema: olm.bundle
package: t
name: t.v1.0.0
image: registry.test/t:1.0.0
properties:
- {type: olm.package, value: {packageName: t, version: 1.0.0}}
- {type: example.com/support-tier, value: gold}
- {type: olm.bundle.object, value: {data: eyJraW5kIjoiQ29uZmlnTWFwIn0=}}
`

// Two catalogs of the same priority offering the same version: the first by name wins, and the
// bundle says it was a tie, with which catalog and what to do. A higher priority is no tie; a
// catalogSelector leaving one catalog is none either.
func TestTieBetweenCatalogsIsReported(t *testing.T) {
	idx, err := olm.NewIndex(loadCatalog(t, "bravo", 0, tieFBC), loadCatalog(t, "alpha", 0, tieFBC), loadCatalog(t, "charlie", 0, tieFBC))
	if err != nil {
		t.Fatal(err)
	}
	b := Resolve(context.Background(), idx, []Request{{Name: "op", Package: "t"}})["op"].Bundle
	if b == nil || b.Catalog != "alpha" || strings.Join(b.TiedWith, ",") != "bravo,charlie" {
		t.Fatalf("bundle %+v; want catalog alpha tied with bravo and charlie", b)
	}
	for _, s := range []string{`catalog "alpha" and catalogs "bravo", "charlie" offer version 1.0.0 of package "t" at the same priority`, `"alpha" won because ties are broken by catalog name`, "spec.catalogSelector", "olm.operatorframework.io/metadata.name", "spec.priority"} {
		if !strings.Contains(b.Tie(), s) {
			t.Errorf("tie message %q lacks %q", b.Tie(), s)
		}
	}
	var types []string
	for _, p := range b.Properties {
		types = append(types, p.Type)
	}
	if strings.Join(types, ",") != "olm.package,example.com/support-tier" {
		t.Errorf("recorded properties %v; want olm.package and example.com/support-tier (olm.bundle.object left out)", types)
	}

	b = Resolve(context.Background(), idx, []Request{{Name: "op", Package: "t", Catalogs: []string{"bravo"}}})["op"].Bundle
	if b == nil || b.Catalog != "bravo" || b.Tie() != "" {
		t.Fatalf("with one catalog selected: %+v, tie %q; want bravo and no tie", b, b.Tie())
	}

	idx, err = olm.NewIndex(loadCatalog(t, "bravo", 5, tieFBC), loadCatalog(t, "alpha", 0, tieFBC))
	if err != nil {
		t.Fatal(err)
	}
	b = Resolve(context.Background(), idx, []Request{{Name: "op", Package: "t"}})["op"].Bundle
	if b == nil || b.Catalog != "bravo" || b.Tie() != "" {
		t.Fatalf("with priorities 5 and 0: %+v, tie %q; want bravo by priority, no tie", b, b.Tie())
	}
}
