// Package provisionertest holds assertions shared by the provisioners' tests.
package provisionertest

import (
	"errors"
	"strings"
	"testing"

	"github.com/olmv1/olmv1/rukpak/internal/provisioner"
)

// WantInvalid asserts that err is a *provisioner.InvalidBundleError whose Reason is reason (any
// reason when reason is "") and whose Message contains every one of parts.
func WantInvalid(t testing.TB, err error, reason string, parts ...string) {
	t.Helper()
	var ib *provisioner.InvalidBundleError
	if !errors.As(err, &ib) {
		t.Fatalf("want an InvalidBundleError (%s), got %v", reason, err)
	}
	if reason != "" && ib.Reason != reason {
		t.Errorf("reason %q, want %q (message: %s)", ib.Reason, reason, ib.Message)
	}
	for _, p := range parts {
		if !strings.Contains(ib.Message, p) {
			t.Errorf("message %q does not mention %q", ib.Message, p)
		}
	}
}
