package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestBundleRenderCommand(t *testing.T) {
	dir := filepath.Join(exampleBundles, "0.1.0")
	out, errOut, err := run(t, "bundle", "render", dir)
	if err != nil {
		t.Fatalf("err = %v\n%s", err, errOut)
	}
	// The default install namespace is the CSV's suggested one; the default install mode is shown.
	for _, want := range []string{"olm.operatorNamespace: example-operator-system", "kind: Deployment", "core.rukpak.io/owner-name: bundle"} {
		if !strings.Contains(out, want) {
			t.Errorf("render output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, `for install namespace "example-operator-system"`) || !strings.Contains(errOut, "install mode") {
		t.Errorf("stderr: %s", errOut)
	}
	again := mustRun(t, "bundle", "render", dir)
	if again != out {
		t.Error("two renders of the same bundle differ")
	}

	// From an image, with an explicit namespace and JSON output.
	reg := startRegistry(t)
	ref := reg + "/render/example-operator:0.1.0"
	mustRun(t, "bundle", "push", dir, ref, "--insecure")
	out = mustRun(t, "bundle", "render", ref, "--insecure", "--install-namespace", "ops", "--name", "example", "-o", "json")
	if !strings.HasPrefix(strings.TrimSpace(out), "[") || !strings.Contains(out, `"olm.operatorNamespace": "ops"`) || !strings.Contains(out, `"core.rukpak.io/owner-name": "example"`) {
		t.Errorf("json render of the image:\n%s", out)
	}

	// A watch-namespace set the bundle does not support: the provisioner's own message.
	if _, _, err := run(t, "bundle", "render", dir, "--watch-namespaces", "a,b"); err == nil || !strings.Contains(err.Error(), "MultiNamespace") {
		t.Errorf("unsupported install mode: %v", err)
	}
}
