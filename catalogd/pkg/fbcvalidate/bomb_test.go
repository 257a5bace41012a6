package fbcvalidate

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
)

// TestValidateRefusesAliasBombAsInvalid: the CLI's entry point into catalogd's validation reports a
// catalog of nested YAML aliases as invalid content (IsInvalid, so `catalog validate` prints it as
// "invalid catalog"), naming the file and the reason.
func TestValidateRefusesAliasBombAsInvalid(t *testing.T) {
	var b strings.Builder
	b.WriteString("schema: olm.package\nname: laughs\nl0: &l0 \"lol\"\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", i-1), 9), ","))
	}
	_, err := Validate(context.Background(), fstest.MapFS{
		"p/catalog.yaml":      {Data: []byte(valid)},
		"laughs/catalog.yaml": {Data: []byte(b.String())},
	})
	if err == nil || !IsInvalid(err) {
		t.Fatalf("want an invalid-content error, got %v", err)
	}
	for _, want := range []string{`file "laughs/catalog.yaml"`, "YAML document starting at line 1", "refused: its YAML aliases (*name)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q: %v", want, err)
		}
	}
}
