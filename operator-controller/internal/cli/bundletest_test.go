package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeDev writes a stand-in olmv1-dev that prints its arguments and exits with code.
func fakeDev(t *testing.T, code string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "olmv1-dev")
	script := "#!/bin/sh\necho \"args: $*\"\nexit " + code + "\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBundleTestRunsOLMv1Dev(t *testing.T) {
	dev := fakeDev(t, "0")
	out, _, err := run(t, "bundle", "test", "./bundle", "--upgrade-from", "./old", "--junit", "r.xml",
		"--install-modes", "AllNamespaces", "--keep", "--dev-binary", dev)
	if err != nil {
		t.Fatal(err)
	}
	want := "args: bundle-test ./bundle --upgrade-from ./old --junit r.xml --install-modes AllNamespaces --keep"
	if strings.TrimSpace(out) != want {
		t.Fatalf("olmv1-dev ran with\n%s\nwant\n%s", out, want)
	}

	out, _, err = run(t, "bundle", "test", "./bundle", "--pods", "real", "--load-image", "quay.io/me/op:v1=op.tar",
		"--load-image", "quay.io/me/other@sha256:0123=other", "--dev-binary", dev)
	if err != nil {
		t.Fatal(err)
	}
	want = "args: bundle-test ./bundle --pods real --load-image quay.io/me/op:v1=op.tar --load-image quay.io/me/other@sha256:0123=other"
	if strings.TrimSpace(out) != want {
		t.Fatalf("olmv1-dev ran with\n%s\nwant\n%s", out, want)
	}

	t.Setenv("OLMV1_DEV", dev)
	if out, _, err = run(t, "bundle", "test", "quay.io/me/b:1", "--catalog", "quay.io/me/c:1"); err != nil || !strings.Contains(out, "--catalog quay.io/me/c:1") {
		t.Fatalf("with $OLMV1_DEV: %q, %v", out, err)
	}
}

func TestBundleTestFailureIsSilentExit1(t *testing.T) {
	_, _, err := run(t, "bundle", "test", "./bundle", "--dev-binary", fakeDev(t, "1"))
	if err == nil || !IsSilent(err) {
		t.Fatalf("want a silent error (olmv1-dev printed the report), got %v", err)
	}
}

func TestBundleTestWithoutOLMv1Dev(t *testing.T) {
	t.Setenv("OLMV1_DEV", "")
	t.Setenv("PATH", t.TempDir())
	_, _, err := run(t, "bundle", "test", "./bundle")
	if err == nil || !strings.Contains(err.Error(), "make build") || !strings.Contains(err.Error(), "--dev-binary") {
		t.Fatalf("want an error saying to run make build, got %v", err)
	}
	_, _, err = run(t, "bundle", "test", "./bundle", "--upgrade-from", "a", "--catalog", "b", "--dev-binary", fakeDev(t, "0"))
	if err == nil || !strings.Contains(err.Error(), "upgrade-from") {
		t.Fatalf("--upgrade-from with --catalog: want an error, got %v", err)
	}
}
