package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBundleGenerateCommand runs the operator author's guide (docs/operator-authors.md) as written:
// generate a bundle from plain manifests and from a kustomize overlay, validate it, check it
// (exit 0 when up to date; exit 1 with a diff when the committed bundle was edited).
func TestBundleGenerateCommand(t *testing.T) {
	manifests := filepath.Join("bundlegen", "testdata", "plain")
	overlay := filepath.Join("bundlegen", "testdata", "kustomize", "overlay")
	icon := filepath.Join("bundlegen", "testdata", "icon.svg")
	bundle := filepath.Join(t.TempDir(), "bundle")
	flags := []string{"--package", "widget-operator", "--version", "1.0.0", "--channels", "stable,candidate",
		"--default-channel", "stable", "--icon", icon, "--min-kube-version", "1.27.0",
		"--requires-gvk", "cert-manager.io/v1/Certificate", "--requires-package", "etcd:>=0.9.0 <1.0.0"}

	_, errOut, err := run(t, append([]string{"bundle", "generate", manifests, "--output", bundle}, flags...)...)
	if err != nil {
		t.Fatalf("generate: %v\n%s", err, errOut)
	}
	for _, want := range []string{"warning: RoleBinding/widget-system/widget-admins", "wrote 8 files to " + bundle} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if out := mustRun(t, "bundle", "validate", bundle); !strings.Contains(out, "registry+v1 bundle widget-operator.v1.0.0 (package widget-operator, version 1.0.0): valid") {
		t.Errorf("validate:\n%s", out)
	}

	out, errOut, err := run(t, append([]string{"bundle", "generate", manifests, "--check", bundle}, flags...)...)
	if err != nil || out != "" || !strings.Contains(errOut, "is up to date") {
		t.Fatalf("check of an up-to-date bundle: err %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}

	csv := filepath.Join(bundle, "manifests", "widget-operator.clusterserviceversion.yaml")
	data, err := os.ReadFile(csv)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(csv, []byte(strings.Replace(string(data), "replicas: 1", "replicas: 2", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err = run(t, append([]string{"bundle", "generate", manifests, "--check", bundle}, flags...)...)
	if err == nil || !IsSilent(err) {
		t.Fatalf("check of an edited bundle: want a silent error (exit 1), got %v", err)
	}
	for _, want := range []string{"(committed)", "(generated)", "-          replicas: 2", "+          replicas: 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("diff lacks %q:\n%s", want, out)
		}
	}

	// The kustomize overlay is built in-process.
	kbundle := filepath.Join(t.TempDir(), "bundle")
	mustRun(t, "bundle", "generate", overlay, "--package", "widget-operator", "--version", "1.1.0", "--channels", "stable", "--output", kbundle)
	if out := mustRun(t, "bundle", "validate", kbundle); !strings.Contains(out, ": valid") {
		t.Errorf("validate of the overlay's bundle:\n%s", out)
	}
}
