package bundlevalidate

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
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

// TestValidateRefusesAliasBombs: `kubectl olmv1 bundle validate` reports a YAML alias bomb in the
// CSV, in annotations.yaml, or in any other file of the bundle directory (operator-framework/api's
// loader decodes every file, so its validators are then not run) as an error naming the file,
// without expanding it (time and allocations are logged and held to issue 18's 5 s and 200 MB).
func TestValidateRefusesAliasBombs(t *testing.T) {
	longString := "s: &s \"" + strings.Repeat("x", 1<<20) + "\"\nl: [" + strings.TrimSuffix(strings.Repeat("*s,", 999), ",") + "]\n"
	for name, tc := range map[string]struct {
		file, content string // written into the good bundle
		edits         []edit
	}{
		"CSV":              {edits: []edit{{csvFile, "spec:\n", "spec:\n  laughs:\n" + laughs("    ")}}, file: csvFile},
		"annotations.yaml": {edits: []edit{{"metadata/annotations.yaml", "annotations:\n", "laughs:\n" + laughs("  ") + "annotations:\n"}}, file: "metadata/annotations.yaml"},
		"a scorecard config next to the manifests": {file: "tests/scorecard/config.yaml", content: "kind: Configuration\n" + laughs("")},
		"a long string aliased 999 times":          {file: "metadata/properties.yaml", content: longString},
	} {
		t.Run(name, func(t *testing.T) {
			dir := copyGood(t, tc.edits)
			if tc.content != "" {
				p := filepath.Join(dir, filepath.FromSlash(tc.file))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			r, err := Validate(dir)
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%s: validated in %v, allocating %.1f MiB", name, elapsed, float64(alloc)/(1<<20))
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, p := range r.Problems {
				if p.Level == LevelError && strings.Contains(p.File+" "+p.Message, tc.file) && strings.Contains(p.Message, "refused: its YAML aliases (*name)") {
					found = true
				}
			}
			if !found || r.Valid() {
				t.Errorf("no error for %s's aliases:\n%s", tc.file, problemLines(r))
			}
			if elapsed > 5*time.Second || alloc > 200<<20 {
				t.Errorf("took %v and allocated %d bytes; the bound is 5s and 200 MiB", elapsed, alloc)
			}
		})
	}
}
