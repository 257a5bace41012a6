package cli

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	operatorsv1alpha1 "github.com/olmv1/olmv1/operator-controller/api/v1alpha1"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/command"
	rukpakv1alpha1 "github.com/olmv1/olmv1/rukpak/api/v1alpha1"
)

func TestBundleSource(t *testing.T) {
	commit := strings.Repeat("ab", 20)
	git := func(repo string, ref rukpakv1alpha1.GitRef, dir string) rukpakv1alpha1.Source {
		return rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeGit, Git: &rukpakv1alpha1.GitSource{Repository: repo, Ref: ref, Directory: dir}}
	}
	img := func(ref string) rukpakv1alpha1.Source {
		return rukpakv1alpha1.Source{Type: rukpakv1alpha1.SourceTypeImage, Image: &rukpakv1alpha1.ImageSource{Ref: ref}}
	}
	for in, want := range map[string]rukpakv1alpha1.Source{
		"quay.io/org/bundle:v1.0.0":                             img("quay.io/org/bundle:v1.0.0"),
		"localhost:5000/b@sha256:" + strings.Repeat("0", 64):    img("localhost:5000/b@sha256:" + strings.Repeat("0", 64)),
		"https://github.com/org/repo.git":                       git("https://github.com/org/repo.git", rukpakv1alpha1.GitRef{Branch: "main"}, ""),
		"https://github.com/org/repo.git#tag=v1.2.0&dir=bundle": git("https://github.com/org/repo.git", rukpakv1alpha1.GitRef{Tag: "v1.2.0"}, "bundle"),
		"https://github.com/org/repo.git#release-1":             git("https://github.com/org/repo.git", rukpakv1alpha1.GitRef{Branch: "release-1"}, ""),
		"git@github.com:org/repo.git#" + commit:                 git("git@github.com:org/repo.git", rukpakv1alpha1.GitRef{Commit: commit}, ""),
		"ssh://git@host/repo#commit=" + commit + "&dir=a/b":     git("ssh://git@host/repo", rukpakv1alpha1.GitRef{Commit: commit}, "a/b"),
		"https://files.test/bundle.tar.gz":                      {Type: rukpakv1alpha1.SourceTypeHTTP, HTTP: &rukpakv1alpha1.HTTPSource{URL: "https://files.test/bundle.tar.gz"}},
	} {
		got, err := bundleSource(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v (git %+v), %v; want %+v", in, got, got.Git, err, want)
		}
	}
	for in, msg := range map[string]string{
		"": "--bundle is empty",
		"https://g.test/r.git#tag=v1&branch=main": "give one of branch, tag or commit",
		"https://g.test/r.git#commit=abc":         "is not branch=B, tag=T, commit=",
		"ftp://files.test/b.tgz":                  "neither an image reference",
	} {
		if _, err := bundleSource(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: %v, want %q", in, err, msg)
		}
	}
	if f, err := bundleFormat("helm"); err != nil || f != "Helm" {
		t.Errorf("helm: %q %v", f, err)
	}
	if f, err := bundleFormat(""); err != nil || f != "RegistryV1" {
		t.Errorf("default: %q %v", f, err)
	}
	if _, err := bundleFormat("zip"); err == nil {
		t.Error("zip accepted")
	}
}

// install NAME --bundle REF creates an Operator of type Bundle named NAME, with no packageName, and
// refuses the flags of catalog installs.
func TestInstallBundleOperator(t *testing.T) {
	f := &installFlags{bundle: "quay.io/org/widget-bundle:v1", format: "plain", namespace: "widgets"}
	op, err := f.operator("widget")
	if err != nil {
		t.Fatal(err)
	}
	if op.Name != "widget" || op.Spec.PackageName != "" || !op.Spec.IsDirect() || op.Spec.Source.Bundle.Format != "Plain" ||
		op.Spec.Source.Bundle.Source.Image.Ref != "quay.io/org/widget-bundle:v1" || op.Spec.InstallNamespace != "widgets" {
		t.Errorf("Operator %+v", op.Spec)
	}
	if _, err := (&installFlags{bundle: "r/b:1", channel: "stable"}).operator("w"); err == nil || !strings.Contains(err.Error(), "--channel cannot be used with --bundle") {
		t.Errorf("--channel with --bundle: %v", err)
	}
	if _, err := (&installFlags{format: "Helm"}).operator("w"); err == nil || !strings.Contains(err.Error(), "--format is for --bundle") {
		t.Errorf("--format alone: %v", err)
	}
	if op, err := (&installFlags{}).operator("pkg"); err != nil || op.Spec.Source != nil || op.Spec.PackageName != "pkg" {
		t.Errorf("catalog install changed: %+v %v", op, err)
	}
}

// status NAME of a direct Operator names its source, and its bundles by their source.
func TestStatusOfADirectOperator(t *testing.T) {
	op, err := (&installFlags{bundle: "r.test/widget-bundle:v1"}).operator("widget")
	if err != nil {
		t.Fatal(err)
	}
	op.Status.InstalledBundle = &operatorsv1alpha1.BundleMetadata{Source: "r.test/widget-bundle@sha256:abc"}
	var out bytes.Buffer
	if err := writeOperatorDetails(&options{Options: &command.Options{Streams: command.Streams{Out: &out}}}, op); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Source:            bundle r.test/widget-bundle:v1, format RegistryV1 (installed directly, no resolution)",
		"Installed bundle:  r.test/widget-bundle@sha256:abc\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("missing %q in:\n%s", want, out.String())
		}
	}
}
