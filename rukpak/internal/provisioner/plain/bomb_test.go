package plain

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
)

// TestRenderRefusesAliasBombs: a plain bundle whose manifest is a YAML alias bomb ends in an
// InvalidBundleError (reason InvalidBundle: retrying cannot help) naming the file, the document
// and the reason, quickly and with little memory (the measured numbers are logged; the bounds are
// issue 18's 5 s and 200 MB).
func TestRenderRefusesAliasBombs(t *testing.T) {
	var nested strings.Builder
	nested.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: laughs\nl0: &l0 \"lol\"\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&nested, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", i-1), 9), ","))
	}
	longString := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: laughs\ndata:\n  s: &s \"" + strings.Repeat("x", 1<<20) + "\"\nl: [" + strings.TrimSuffix(strings.Repeat("*s,", 999), ",") + "]\n"
	for name, bomb := range map[string]string{"nested aliases": nested.String(), "1 MiB string aliased 999 times": longString} {
		t.Run(name, func(t *testing.T) {
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err := render(t, map[string]string{"manifests/a.yaml": multiDoc, "manifests/laughs.yaml": bomb})
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%s: refused in %v, allocating %.1f MiB", name, elapsed, float64(alloc)/(1<<20))
			var ib *provisioner.InvalidBundleError
			if !errors.As(err, &ib) || ib.Reason != ReasonInvalidBundle {
				t.Fatalf("want InvalidBundleError with reason %s, got %v", ReasonInvalidBundle, err)
			}
			if !strings.HasPrefix(ib.Message, "plain bundle: manifests/laughs.yaml (document 1): refused: its YAML aliases (*name)") {
				t.Errorf("message: %s", ib.Message)
			}
			if !strings.Contains(ib.Message, `"billion laughs"`) {
				t.Errorf("message does not say what is refused: %s", ib.Message)
			}
			if elapsed > 5*time.Second || alloc > 200<<20 {
				t.Errorf("took %v and allocated %d bytes; the bound is 5s and 200 MiB", elapsed, alloc)
			}
		})
	}
}
