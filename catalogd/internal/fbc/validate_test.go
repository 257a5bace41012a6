package fbc

import (
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// badMetadataBundle is a bundle of package foo whose olm.csv.metadata does not parse.
func badMetadataBundle(name string) string {
	return `schema: olm.bundle
package: foo
name: ` + name + `
image: example.com/foo:` + name + `
properties:
- type: olm.package
  value: {packageName: foo, version: ` + strings.TrimPrefix(name, "foo.v") + `}
- type: olm.csv.metadata
  value: {annotations: [not, a, map]}
`
}

// TestValidateReportsTheFirstInvalidBundle: package validation reads one blob at a time and slims
// each bundle as it is decoded; with two bundles whose olm.csv.metadata is invalid, Load reports
// the first in canonical order with the message of operator-registry's model conversion.
func TestValidateReportsTheFirstInvalidBundle(t *testing.T) {
	ForgetValidatedPackages()
	files := map[string]string{"c.yaml": pkgYAML + "---\n" + chanYAML + "---\n" + badMetadataBundle("foo.v0.1.0") + "---\n" + badMetadataBundle("foo.v0.2.0")}
	_, err := Load(t.Context(), mapFS(files))
	if err == nil || !IsInvalid(err) {
		t.Fatalf("Load = %v, want an InvalidError", err)
	}
	cfg, lerr := declcfg.LoadFS(t.Context(), mapFS(files))
	if lerr != nil {
		t.Fatal(lerr)
	}
	_, want := declcfg.ConvertToModel(*cfg)
	if want == nil || err.Error() != want.Error() {
		t.Errorf("error %q, want the model conversion's %q", err, want)
	}
	if !strings.Contains(err.Error(), `"foo.v0.1.0"`) {
		t.Errorf("error %q does not name the first bundle foo.v0.1.0", err)
	}
}

// TestValidateReportsUndecodableBlobBeforeInvalidBundle: a blob of the package that does not decode
// into its schema's type is reported (with its file) even when a bundle before it in canonical order
// has an invalid property, as when the whole package was decoded before any property was parsed.
func TestValidateReportsUndecodableBlobBeforeInvalidBundle(t *testing.T) {
	ForgetValidatedPackages()
	_, err := Load(t.Context(), mapFS(map[string]string{
		"a.yaml": pkgYAML + "---\n" + chanYAML + "---\n" + badMetadataBundle("foo.v0.1.0"),
		"b.yaml": "schema: olm.bundle\npackage: foo\nname: foo.v0.2.0\nimage: 5\n",
	}))
	if err == nil || !IsInvalid(err) {
		t.Fatalf("Load = %v, want an InvalidError", err)
	}
	for _, want := range []string{`file "b.yaml"`, `name="foo.v0.2.0"`, "cannot unmarshal"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// TestValidateRemembersOnlyValidPackages: a package that failed validation is validated again by
// the next Load (it is not remembered as valid), and so fails again.
func TestValidateRemembersOnlyValidPackages(t *testing.T) {
	ForgetValidatedPackages()
	files := map[string]string{"c.yaml": pkgYAML + "---\n" + chanYAML + "---\n" + badMetadataBundle("foo.v0.1.0") + "---\n" + badMetadataBundle("foo.v0.2.0")}
	for i := range 2 {
		if _, err := Load(t.Context(), mapFS(files)); err == nil {
			t.Fatalf("Load %d of an invalid package succeeded", i+1)
		}
	}
}
