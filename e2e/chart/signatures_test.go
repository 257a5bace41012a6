package chart

import (
	"slices"
	"strings"
	"testing"
)

// signatures.requireSecret passes --require-image-signatures to catalogd and rukpak (and to
// nothing else); unset, neither gets it. A name that is no Secret name fails the values schema.
func TestSignaturesRequireSecret(t *testing.T) {
	dir, ch := loadChart(t)
	vals := map[string]any{"signatures": map[string]any{"requireSecret": "cluster-keys"}}
	if findings := Lint(dir, vals); len(findings) > 0 {
		t.Errorf("helm lint (strict) findings:\n%s", strings.Join(findings, "\n"))
	}
	requires := func(a any) bool { return strings.HasPrefix(a.(string), "--require-image-signatures") }
	objs := render(t, ch, vals)
	for _, name := range []string{"catalogd", "rukpak", "operator-controller"} {
		args := list(list(mustGet(t, objs, "Deployment/olmv1-system/"+name), "spec", "template", "spec", "containers")[0], "args")
		want := name != "operator-controller"
		n := 0
		for _, a := range args {
			if requires(a) {
				n++
			}
		}
		if got := slices.Contains(args, any("--require-image-signatures=cluster-keys")); got != want || n > 1 {
			t.Errorf("%s args %v: want --require-image-signatures=cluster-keys %v (once)", name, args, want)
		}
	}

	objs = render(t, ch, nil)
	for _, name := range []string{"catalogd", "rukpak"} {
		if args := list(list(mustGet(t, objs, "Deployment/olmv1-system/"+name), "spec", "template", "spec", "containers")[0], "args"); slices.ContainsFunc(args, requires) {
			t.Errorf("%s args %v: --require-image-signatures without signatures.requireSecret", name, args)
		}
	}

	for _, bad := range []any{"Cluster Keys", 42} {
		if _, err := Render(ch, map[string]any{"signatures": map[string]any{"requireSecret": bad}}, RenderOptions{}); err == nil || !strings.Contains(err.Error(), "schema") {
			t.Errorf("requireSecret: %v: want a values schema error, got %v", bad, err)
		}
	}
}
