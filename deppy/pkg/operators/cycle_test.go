package operators

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/olmv1/olmv1/deppy/pkg/olm"
)

// cycleBundle writes one package with one channel and one bundle per version (a replaces chain),
// each bundle carrying the extra properties given (YAML flow mappings).
func cycleBundle(b *strings.Builder, pkg string, versions []string, props ...string) {
	fmt.Fprintf(b, "---\nschema: olm.package\nname: %s\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: %s\nname: stable\nentries:\n", pkg, pkg)
	for i, v := range versions {
		if i == 0 {
			fmt.Fprintf(b, "- {name: %s.v%s}\n", pkg, v)
		} else {
			fmt.Fprintf(b, "- {name: %s.v%s, replaces: %s.v%s}\n", pkg, v, pkg, versions[i-1])
		}
	}
	for _, v := range versions {
		fmt.Fprintf(b, "---\nschema: olm.bundle\npackage: %s\nname: %s.v%s\nimage: registry.test/%s:%s\nproperties:\n- {type: olm.package, value: {packageName: %s, version: %s}}\n", pkg, pkg, v, pkg, v, pkg, v)
		for _, p := range props {
			fmt.Fprintf(b, "- %s\n", p)
		}
	}
}

func pkgRequired(pkg, rng string) string {
	return fmt.Sprintf(`{type: olm.package.required, value: {packageName: %s, versionRange: %q}}`, pkg, rng)
}

func gvk(kind string) string {
	return fmt.Sprintf(`{type: olm.gvk, value: {group: %s.example.com, version: v1, kind: %s}}`, strings.ToLower(kind), kind)
}

func gvkRequired(kind string) string {
	return fmt.Sprintf(`{type: olm.gvk.required, value: {group: %s.example.com, version: v1, kind: %s}}`, strings.ToLower(kind), kind)
}

// cycleFBC holds dependency cycles:
//   - a → b → c → a (olm.package.required), every link satisfiable;
//   - x ⇄ z, each requiring the other's API;
//   - s requiring its own package;
//   - u → v → w → u, where w requires a u that does not exist (>=3.0.0);
//   - m ⇄ k, where k requires an m that only another version of m provides.
func cycleFBC() string {
	var b strings.Builder
	one := []string{"1.0.0"}
	cycleBundle(&b, "a", one, pkgRequired("b", ">=1.0.0"))
	cycleBundle(&b, "b", one, pkgRequired("c", ">=1.0.0"))
	cycleBundle(&b, "c", one, pkgRequired("a", ">=1.0.0"))
	cycleBundle(&b, "x", one, gvk("X"), gvkRequired("Z"))
	cycleBundle(&b, "z", one, gvk("Z"), gvkRequired("X"))
	cycleBundle(&b, "s", one, pkgRequired("s", ">=1.0.0"))
	cycleBundle(&b, "u", []string{"1.0.0", "1.1.0"}, pkgRequired("v", ">=1.0.0"))
	cycleBundle(&b, "v", one, pkgRequired("w", ">=1.0.0"))
	cycleBundle(&b, "w", one, pkgRequired("u", ">=3.0.0"))
	cycleBundle(&b, "m", []string{"1.0.0", "2.0.0"}, pkgRequired("k", ">=1.0.0"))
	cycleBundle(&b, "k", one, pkgRequired("m", ">=2.0.0"))
	return b.String()
}

// TestDependencyCycles resolves Operators whose packages depend on each other in cycles through
// operator-controller's resolver: a cycle installs every member when each has an Operator, says
// which Operator to create when one is missing, and, when it cannot hold, names the requirement
// that fails and the packages of the cycle. Every Operator gets an answer.
func TestDependencyCycles(t *testing.T) {
	idx, err := olm.NewIndex(loadCatalog(t, "cycles", 0, cycleFBC()))
	if err != nil {
		t.Fatal(err)
	}
	ops := func(pkgs ...string) []Request {
		reqs := make([]Request, len(pkgs))
		for i, p := range pkgs {
			reqs[i] = Request{Name: "op-" + p, Package: p, Order: int64(i)}
		}
		return reqs
	}
	tests := []struct {
		name string
		reqs []Request
		want map[string]want
	}{
		{
			name: "a three-package cycle with an Operator each installs them all",
			reqs: ops("a", "b", "c"),
			want: map[string]want{"op-a": {bundle: "a.v1.0.0", catalog: "cycles"}, "op-b": {bundle: "b.v1.0.0", catalog: "cycles"}, "op-c": {bundle: "c.v1.0.0", catalog: "cycles"}},
		},
		{
			name: "a cycle member without an Operator is named",
			reqs: ops("a", "c"),
			want: map[string]want{
				"op-a": {failure: []string{`package "b" (in catalog "cycles") is not installed by any Operator: create an Operator with packageName "b" to provide it`}},
				"op-c": {failure: []string{`package "b" (in catalog "cycles") is not installed by any Operator: create an Operator with packageName "b" to provide it`}},
			},
		},
		{
			name: "two packages requiring each other's API",
			reqs: ops("x", "z"),
			want: map[string]want{"op-x": {bundle: "x.v1.0.0", catalog: "cycles"}, "op-z": {bundle: "z.v1.0.0", catalog: "cycles"}},
		},
		{
			name: "a package requiring itself",
			reqs: ops("s"),
			want: map[string]want{"op-s": {bundle: "s.v1.0.0", catalog: "cycles"}},
		},
		{
			name: "an unsatisfiable cycle, the Operator of its first package oldest",
			reqs: ops("u", "v", "w"),
			want: map[string]want{
				"op-w": {failure: []string{`package "w" 1.0.0 requires package "u" in range ">=3.0.0", but no version of "u" is in that range (available: 1.1.0, 1.0.0)`}},
				"op-v": {failure: []string{
					`package "w" 1.0.0 requires package "u" in range ">=3.0.0", but no version of "u" is in that range (available: 1.1.0, 1.0.0)`,
					`package "w" is needed through "v" → "w"`,
				}},
				"op-u": {failure: []string{
					`Operator "op-u" requires package "u"`,
					`package "u" 1.1.0 requires package "v" in range ">=1.0.0"`,
					`package "v" is requested by Operator "op-v", which cannot be resolved: package "w" 1.0.0 requires package "u" in range ">=3.0.0", but no version of "u" is in that range (available: 1.1.0, 1.0.0)`,
				}},
			},
		},
		{
			name: "an unsatisfiable cycle, the Operator of the failing package newest",
			reqs: ops("w", "v", "u"),
			want: map[string]want{
				"op-w": {failure: []string{`package "w" 1.0.0 requires package "u" in range ">=3.0.0", but no version of "u" is in that range (available: 1.1.0, 1.0.0)`}},
				"op-v": {failure: []string{`package "w" is requested by Operator "op-w", which cannot be resolved: package "w" 1.0.0 requires package "u" in range ">=3.0.0"`}},
				"op-u": {failure: []string{`package "v" is requested by Operator "op-v", which cannot be resolved because Operator "op-w" cannot: package "w" 1.0.0 requires package "u" in range ">=3.0.0"`}},
			},
		},
		{
			name: "an unsatisfiable cycle, only its first package requested",
			reqs: ops("u"),
			want: map[string]want{
				"op-u": {failure: []string{`package "v" (in catalog "cycles") is not installed by any Operator: create an Operator with packageName "v" to provide it`}},
			},
		},
		{
			name: "a cycle that needs another version of the requested package",
			reqs: []Request{{Name: "op-m", Package: "m", VersionRange: "1.0.0", Order: 0}, {Name: "op-k", Package: "k", Order: 1}},
			want: map[string]want{
				"op-m": {failure: []string{
					`Operator "op-m" requires package "m" in range "1.0.0", but package "k" 1.0.0 requires package "m" in range ">=2.0.0"`,
					`packages "m" and "k" depend on each other in a cycle: "m" → "k" → "m"`,
				}},
				"op-k": {failure: []string{
					`package "m" is requested by Operator "op-m", which cannot be resolved: Operator "op-m" requires package "m" in range "1.0.0", but package "k" 1.0.0 requires package "m" in range ">=2.0.0"`,
				}},
			},
		},
		{
			name: "the same cycle, without the range that breaks it",
			reqs: []Request{{Name: "op-m", Package: "m", Order: 0}, {Name: "op-k", Package: "k", Order: 1}},
			want: map[string]want{"op-m": {bundle: "m.v2.0.0", catalog: "cycles"}, "op-k": {bundle: "k.v1.0.0", catalog: "cycles"}},
		},
		{
			name: "a cycle whose other Operator is invalid",
			reqs: []Request{{Name: "op-a", Package: "a", Order: 0}, {Name: "op-b", Package: "b", VersionRange: ">>1", Order: 1}, {Name: "op-c", Package: "c", Order: 2}},
			want: map[string]want{
				"op-a": {failure: []string{`package "b" is requested by Operator "op-b", which cannot be resolved: spec.version ">>1" is not a valid semver range`}},
				"op-b": {failure: []string{`spec.version ">>1" is not a valid semver range`}},
				"op-c": {failure: []string{`package "a" is requested by Operator "op-a", which cannot be resolved because Operator "op-b" cannot: spec.version ">>1" is not a valid semver range`}},
			},
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
							t.Errorf("%s: message\n%s\ndoes not contain\n%s", name, o.Message, s)
						}
					}
					continue
				}
				if o.Bundle == nil || o.Bundle.Name != w.bundle || o.Bundle.Catalog != w.catalog {
					t.Errorf("%s: got %+v (%s), want %s from %q", name, o.Bundle, o.Message, w.bundle, w.catalog)
				}
			}
		})
	}
}

// ringFBC is n packages p0 … p(n-1) with m versions each; version v of p(i) requires p(i+1) in
// version v, except that p(n-1) requires p0 in version v+1: a ring that cannot hold.
func ringFBC(n, m int) string {
	var b strings.Builder
	versions := make([]string, m)
	for v := range versions {
		versions[v] = fmt.Sprintf("%d.0.0", v)
	}
	for i := 0; i < n; i++ {
		var props []string
		for v := 0; v < m; v++ {
			want := v
			if i == n-1 {
				want = v + 1
			}
			props = append(props, pkgRequired(fmt.Sprintf("p%d", (i+1)%n), fmt.Sprintf("=%d.0.0", want)))
		}
		// One bundle per version, each with its own requirement.
		pkg := fmt.Sprintf("p%d", i)
		fmt.Fprintf(&b, "---\nschema: olm.package\nname: %s\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: %s\nname: stable\nentries:\n", pkg, pkg)
		for v := range versions {
			if v == 0 {
				fmt.Fprintf(&b, "- {name: %s.v%s}\n", pkg, versions[v])
			} else {
				fmt.Fprintf(&b, "- {name: %s.v%s, replaces: %s.v%s}\n", pkg, versions[v], pkg, versions[v-1])
			}
		}
		for v, ver := range versions {
			fmt.Fprintf(&b, "---\nschema: olm.bundle\npackage: %s\nname: %s.v%s\nimage: registry.test/%s:%s\nproperties:\n- {type: olm.package, value: {packageName: %s, version: %s}}\n- %s\n",
				pkg, pkg, ver, pkg, ver, pkg, ver, props[v])
		}
	}
	return b.String()
}

// TestLargeCycleMessagesStayBounded: a ring of 60 packages with 40 versions each makes a conflict
// of thousands of constraints (before the bound, with an Operator per package, one message was
// 236 KB, which the API server refuses: a condition message is at most 32768 bytes). Resolution ends, and every
// Operator's message keeps the failing requirement, the cycle and the Operator to create or that
// cannot be resolved, lists at most maxListedCauses constraints and counts the rest. The time
// bound is generous (about 20 times what it takes on a shared 2-core machine).
func TestLargeCycleMessagesStayBounded(t *testing.T) {
	idx, err := olm.NewIndex(loadCatalog(t, "ring", 0, ringFBC(60, 40)))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	alone := Resolve(context.Background(), idx, []Request{{Name: "op-p0", Package: "p0"}})["op-p0"]
	t.Logf("one Operator: %v, %d bytes: %s", time.Since(start), len(alone.Message), alone.Message)
	checkBounded(t, "op-p0 alone", alone.Message,
		`package "p1" (in catalog "ring") is not installed by any Operator: create an Operator with packageName "p1" to provide it`,
		`Operator "op-p0" requires package "p0"`, "and 30 more")

	// Every package of a ring of 20 with its Operator, p0's the oldest: they all fail; the Operator
	// whose package closes the ring explains it, the others point to the next Operator and carry
	// the requirement that fails. (Each Operator that gives way costs one more solve, so the ring
	// is smaller here.)
	idx, err = olm.NewIndex(loadCatalog(t, "ring", 0, ringFBC(20, 40)))
	if err != nil {
		t.Fatal(err)
	}
	reqs := make([]Request, 20)
	for i := range reqs {
		reqs[i] = Request{Name: fmt.Sprintf("op-p%d", i), Package: fmt.Sprintf("p%d", i), Order: int64(i)}
	}
	start = time.Now()
	all := Resolve(context.Background(), idx, reqs)
	took := time.Since(start)
	t.Logf("20 Operators: %v; op-p19: %d bytes: %s", took, len(all["op-p19"].Message), all["op-p19"].Message)
	if took > time.Minute {
		t.Fatalf("resolving the ring took %v", took)
	}
	checkBounded(t, "op-p19", all["op-p19"].Message,
		`package "p19" 39.0.0 requires package "p0" in range "=40.0.0", but no version of "p0" is in that range`,
		`packages "p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9" and 10 more depend on each other in a cycle: "p0" → "p1" → "p2" → "p3" → "p4" → "p5" → "p6" → "p7" → "p8" → … (10 more) → "p19" → "p0"`)
	for i, r := range reqs {
		o := all[r.Name]
		if o.Bundle != nil {
			t.Errorf("%s: got %s, want a failure", r.Name, o.Bundle.Name)
		}
		checkBounded(t, r.Name, o.Message)
		if i < 18 {
			// Each points to the next Operator, and to what fails at the end of the ring.
			checkBounded(t, r.Name, o.Message, fmt.Sprintf(`package "p%d" is requested by Operator "op-p%d", which cannot be resolved`, i+1, i+1),
				`package "p19" 39.0.0 requires package "p0" in range "=40.0.0", but no version of "p0" is in that range`)
		}
	}
}

func checkBounded(t *testing.T, who, msg string, contains ...string) {
	t.Helper()
	if len(msg) > maxMessageBytes || !utf8.ValidString(msg) {
		t.Errorf("%s: message of %d bytes (valid UTF-8: %v), want at most %d", who, len(msg), utf8.ValidString(msg), maxMessageBytes)
	}
	if n := strings.Count(msg, "; "); n > maxListedCauses+8 {
		t.Errorf("%s: message lists %d items", who, n)
	}
	for _, s := range contains {
		if !strings.Contains(msg, s) {
			t.Errorf("%s: message\n%s\ndoes not contain\n%s", who, msg, s)
		}
	}
}

func TestTruncateKeepsRunes(t *testing.T) {
	s := strings.Repeat("é", 100) // 200 bytes
	for max := 30; max < 60; max++ {
		got := truncate(s, max)
		if len(got) > max || !utf8.ValidString(got) || !strings.HasSuffix(got, " … (message truncated)") {
			t.Fatalf("truncate(%d): %q (%d bytes)", max, got, len(got))
		}
	}
	if got := truncate("short", 30); got != "short" {
		t.Fatalf("truncate of a short message: %q", got)
	}
}
