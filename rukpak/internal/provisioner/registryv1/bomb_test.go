package registryv1

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
)

// laughs is a YAML mapping fragment of 9 levels of 9 aliases (9^9 strings), at the given indent.
func laughs(indent string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%sl0: &l0 \"lol\"\n", indent)
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "%sl%d: &l%d [%s]\n", indent, i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", i-1), 9), ","))
	}
	return b.String()
}

// TestRenderRefusesAliasBombs: a registry+v1 bundle whose CSV, another manifest or
// metadata/annotations.yaml is a YAML alias bomb is refused as an InvalidBundle (not retried),
// naming the file and the reason, before anything expands the aliases (time and allocations are
// logged and held to issue 18's 5 s and 200 MB).
func TestRenderRefusesAliasBombs(t *testing.T) {
	longString := "  s: &s \"" + strings.Repeat("x", 1<<20) + "\"\n  l: [" + strings.TrimSuffix(strings.Repeat("*s,", 999), ",") + "]\n"
	for name, tc := range map[string]struct {
		edit func(map[string]string)
		want string
	}{
		"CSV with nested aliases": {
			edit: func(f map[string]string) {
				f[csvFile] = strings.Replace(f[csvFile], "spec:\n", "spec:\n  laughs:\n"+laughs("    "), 1)
			},
			want: "registry+v1 bundle: " + csvFile + " (document 1): refused: its YAML aliases (*name)",
		},
		"CSV with a long string aliased 999 times": {
			edit: func(f map[string]string) {
				f[csvFile] = strings.Replace(f[csvFile], "spec:\n", "spec:\n"+longString, 1)
			},
			want: "registry+v1 bundle: " + csvFile + " (document 1): refused: its YAML aliases (*name)",
		},
		"another manifest": {
			edit: func(f map[string]string) {
				f["manifests/laughs.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: laughs\ndata:\n" + laughs("  ")
			},
			want: "registry+v1 bundle: manifests/laughs.yaml (document 1): refused: its YAML aliases (*name)",
		},
		"annotations.yaml": {
			edit: func(f map[string]string) { f["metadata/annotations.yaml"] += laughs("  ") },
			want: "registry+v1 bundle: metadata/annotations.yaml: refused: its YAML aliases (*name)",
		},
	} {
		t.Run(name, func(t *testing.T) {
			content := fixtureFS(t, tc.edit)
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err := renderFS(t, content, nil)
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%s: refused in %v, allocating %.1f MiB", name, elapsed, float64(alloc)/(1<<20))
			var ib *provisioner.InvalidBundleError
			if !errors.As(err, &ib) || ib.Reason != ReasonInvalidBundle {
				t.Fatalf("want InvalidBundleError with reason %s, got %v", ReasonInvalidBundle, err)
			}
			if !strings.HasPrefix(ib.Message, tc.want) || !strings.Contains(ib.Message, `"billion laughs"`) {
				t.Errorf("message %q does not start with %q", ib.Message, tc.want)
			}
			if elapsed > 5*time.Second || alloc > 200<<20 {
				t.Errorf("took %v and allocated %d bytes; the bound is 5s and 200 MiB", elapsed, alloc)
			}
		})
	}
}
