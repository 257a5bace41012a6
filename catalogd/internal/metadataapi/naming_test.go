package metadataapi

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// TestIsLabelValueMatchesValidation: the hand-written check answers as apimachinery's.
func TestIsLabelValueMatchesValidation(t *testing.T) {
	for _, v := range []string{
		"", "a", "A", "0", "-", "_", ".", "a-b", "a_b", "a.b", "-a", "a-", "_a", "a_", ".a", "a.",
		"hello-operator.v1.1.0", "olm.bundle", "a b", "a/b", "a:b", "é", "a\u200bb", "a\x00b",
		strings.Repeat("a", 63), strings.Repeat("a", 64), "v1.0.0+build", "x--y", "x..y",
	} {
		if got, want := isLabelValue(v), len(validation.IsValidLabelValue(v)) == 0; got != want {
			t.Errorf("isLabelValue(%q) = %v, validation says %v", v, got, want)
		}
	}
}

func FuzzIsLabelValue(f *testing.F) {
	for _, seed := range []string{"", "a", "a-b", "-a", "a.", strings.Repeat("z", 64), "é"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if got, want := isLabelValue(v), len(validation.IsValidLabelValue(v)) == 0; got != want {
			t.Errorf("isLabelValue(%q) = %v, validation says %v", v, got, want)
		}
	})
}
