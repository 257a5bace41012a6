package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/olmv1/olmv1/catalogd/pkg/fbcvalidate"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/pull"
)

// exampleBundles is the example-operator fixture of the e2e tier (bundles 0.1.0 and 0.2.0).
var exampleBundles = filepath.Join("..", "..", "..", "e2e", "testdata", "example-operator", "bundles")

// run runs the CLI with args and returns stdout, stderr and the error.
func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := Execute(ctx, Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, args)
	return out.String(), errOut.String(), err
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := run(t, args...)
	if err != nil {
		t.Fatalf("kubectl olmv1 %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// startRegistry serves an in-memory OCI registry on 127.0.0.1 and returns its host:port.
func startRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestAuthorFlowThroughARegistry: bundle push, catalog add-bundle (from an image and from a
// directory), catalog push; the pushed catalog image holds the catalog under /configs with the hash
// that catalog validate reported.
func TestAuthorFlowThroughARegistry(t *testing.T) {
	reg := startRegistry(t)
	catalog := t.TempDir()

	b1 := reg + "/bundles/example-operator:0.1.0"
	out := mustRun(t, "bundle", "push", filepath.Join(exampleBundles, "0.1.0"), b1, "--insecure")
	if !strings.Contains(out, "pushed registry+v1 bundle "+b1) || !strings.Contains(out, reg+"/bundles/example-operator@sha256:") {
		t.Fatalf("bundle push output:\n%s", out)
	}
	b2 := reg + "/bundles/example-operator:0.2.0"
	mustRun(t, "bundle", "push", filepath.Join(exampleBundles, "0.2.0"), b2, "--insecure")

	out = mustRun(t, "catalog", "add-bundle", catalog, b1, "--insecure")
	if !strings.Contains(out, "channel stable (new channel): first entry") {
		t.Fatalf("add-bundle 0.1.0:\n%s", out)
	}
	out = mustRun(t, "catalog", "add-bundle", catalog, filepath.Join(exampleBundles, "0.2.0"), "--image", b2)
	if !strings.Contains(out, "channel stable: replaces example-operator.v0.1.0") {
		t.Fatalf("add-bundle 0.2.0:\n%s", out)
	}
	// Adding 0.1.0 again is refused and leaves the catalog as it was.
	before, _ := os.ReadFile(filepath.Join(catalog, "example-operator", "catalog.yaml"))
	if _, _, err := run(t, "catalog", "add-bundle", catalog, b1, "--insecure"); err == nil || !strings.Contains(err.Error(), "already has bundle example-operator.v0.1.0") {
		t.Fatalf("re-adding 0.1.0: err = %v", err)
	}
	after, _ := os.ReadFile(filepath.Join(catalog, "example-operator", "catalog.yaml"))
	if !bytes.Equal(before, after) {
		t.Fatalf("a refused add-bundle changed the catalog")
	}

	out = mustRun(t, "catalog", "validate", catalog)
	local, err := fbcvalidate.Validate(context.Background(), os.DirFS(catalog))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, local.Hash) || local.Bundles != 2 || local.Channels != 1 {
		t.Fatalf("catalog validate:\n%s\n%+v", out, local)
	}

	ref := reg + "/catalogs/example:latest"
	mustRun(t, "catalog", "push", catalog, ref, "--insecure")
	dir, remove, err := pull.ToDir(context.Background(), ref, true)
	if err != nil {
		t.Fatal(err)
	}
	defer remove()
	pushed, err := fbcvalidate.Validate(context.Background(), os.DirFS(filepath.Join(dir, "configs")))
	if err != nil {
		t.Fatal(err)
	}
	if pushed.Hash != local.Hash {
		t.Fatalf("pushed catalog hash %s, local %s", pushed.Hash, local.Hash)
	}
	cfg, err := declcfg.LoadFS(context.Background(), os.DirFS(filepath.Join(dir, "configs")))
	if err != nil {
		t.Fatal(err)
	}
	images := map[string]string{}
	for _, b := range cfg.Bundles {
		images[b.Name] = b.Image
	}
	if images["example-operator.v0.1.0"] != b1 || images["example-operator.v0.2.0"] != b2 {
		t.Fatalf("bundle images in the catalog: %v", images)
	}
}

func TestBundleValidateCommand(t *testing.T) {
	out, _, err := run(t, "bundle", "validate", filepath.Join(exampleBundles, "0.1.0"))
	if err != nil || !strings.Contains(out, "registry+v1 bundle example-operator.v0.1.0 (package example-operator, version 0.1.0): valid") {
		t.Fatalf("err = %v\n%s", err, out)
	}

	// A misspelled install mode: one line naming file, field, problem and fix; exit with an error.
	dir := t.TempDir()
	copyDir(t, filepath.Join(exampleBundles, "0.1.0"), dir)
	csv := filepath.Join(dir, "manifests", "example-operator.clusterserviceversion.yaml")
	data, _ := os.ReadFile(csv)
	if err := os.WriteFile(csv, []byte(strings.Replace(string(data), "type: OwnNamespace", "type: OwnNamespacejl", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err = run(t, "bundle", "validate", dir)
	if err == nil || !IsSilent(err) {
		t.Fatalf("err = %v, want a (silent) validation failure", err)
	}
	want := `manifests/example-operator.clusterserviceversion.yaml: spec.installModes[0].type: "OwnNamespacejl" is not an install mode; fix: did you mean OwnNamespace?`
	if !strings.Contains(out, want) || !strings.Contains(out, "1 error(s)") {
		t.Fatalf("output:\n%s\nwant a line starting %q", out, want)
	}
	// bundle push refuses it.
	if _, errOut, err := run(t, "bundle", "push", dir, "127.0.0.1:1/never:1", "--insecure"); err == nil || !strings.Contains(err.Error(), "not pushed") || !strings.Contains(errOut, "OwnNamespacejl") {
		t.Fatalf("push of an invalid bundle: err = %v\n%s", err, errOut)
	}
	// -o json gives the report.
	out, _, _ = run(t, "bundle", "validate", dir, "-o", "json")
	if !strings.Contains(out, `"field": "spec.installModes[0].type"`) {
		t.Fatalf("json output:\n%s", out)
	}
}

func TestCatalogRenderSemverCommand(t *testing.T) {
	dir := t.TempDir()
	abs, err := filepath.Abs(exampleBundles)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := `Schema: olm.semver
GenerateMajorChannels: true
Candidate:
  Bundles:
  - Image: registry.test/example-operator:0.1.0
    Path: ` + filepath.Join(abs, "0.1.0") + `
  - Image: registry.test/example-operator:0.2.0
    Path: ` + filepath.Join(abs, "0.2.0") + `
Stable:
  Bundles:
  - Image: registry.test/example-operator:0.1.0
    Path: ` + filepath.Join(abs, "0.1.0") + `
`
	p := filepath.Join(dir, "semver.yaml")
	if err := os.WriteFile(p, []byte(tmpl), 0o644); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, "catalog", "render", "--semver", p)
	for _, want := range []string{"defaultChannel: stable-v0", "name: candidate-v0", "replaces: example-operator.v0.1.0", "name: stable-v0", "image: registry.test/example-operator:0.2.0"} {
		if !strings.Contains(out, want) {
			t.Errorf("render output lacks %q:\n%s", want, out)
		}
	}
	catalog := filepath.Join(dir, "catalog")
	out = mustRun(t, "catalog", "render", "--semver", p, "--to", catalog)
	if !strings.Contains(out, "2 channel(s), 2 bundle(s), default channel stable-v0") {
		t.Fatalf("render --to:\n%s", out)
	}
	if _, err := fbcvalidate.Validate(context.Background(), os.DirFS(catalog)); err != nil {
		t.Fatal(err)
	}
}

func TestCatalogValidateCommandReportsCatalogdsMessage(t *testing.T) {
	dir := t.TempDir()
	bad := "schema: olm.package\nname: p\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: p\nname: stable\nentries:\n- name: p.v1.0.0\n"
	if err := os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "catalog", "validate", dir)
	_, want := fbcvalidate.Validate(context.Background(), os.DirFS(dir))
	if err == nil || want == nil || !strings.Contains(out, want.Error()) {
		t.Fatalf("err = %v, output:\n%s\nwant catalogd's message %v", err, out, want)
	}
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
}
