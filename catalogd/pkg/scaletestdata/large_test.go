package scaletestdata

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
)

const widgetCatalog = `schema: olm.package
name: widget
defaultChannel: stable
---
schema: olm.channel
package: widget
name: stable
entries:
- name: widget.v1.0.0
---
schema: olm.bundle
package: widget
name: widget.v1.0.0
image: registry.test/widget@sha256:0000000000000000000000000000000000000000000000000000000000000000
properties:
- type: olm.package
  value: {packageName: widget, version: 1.0.0}
- type: olm.gvk
  value: {group: widgets.example.com, kind: Widget, version: v1}
- type: olm.gvk.required
  value: {group: gadgets.example.com, kind: Gadget, version: v1}
- type: olm.package.required
  value: {packageName: gadget, versionRange: ">=1.0.0"}
`

// TestRenamedCopy: every package name and reference gets the suffix; the API groups get its name
// as a prefix only when asked.
func TestRenamedCopy(t *testing.T) {
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "widget"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "widget", "catalog.yaml"), []byte(widgetCatalog), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		renameAPIs                 bool
		wantProvided, wantRequired string
	}{
		{false, "widgets.example.com", "gadgets.example.com"},
		{true, "c1.widgets.example.com", "c1.gadgets.example.com"},
	} {
		dst := t.TempDir()
		if err := RenamedCopy(src, dst, "-c1", tc.renameAPIs); err != nil {
			t.Fatal(err)
		}
		cfg, err := declcfg.LoadFS(context.Background(), os.DirFS(filepath.Join(dst, "widget-c1")))
		if err != nil {
			t.Fatal(err)
		}
		if len(cfg.Packages) != 1 || cfg.Packages[0].Name != "widget-c1" || cfg.Channels[0].Package != "widget-c1" || len(cfg.Bundles) != 1 {
			t.Fatalf("renameAPIs=%v: packages %+v, channels %+v", tc.renameAPIs, cfg.Packages, cfg.Channels)
		}
		b := cfg.Bundles[0]
		if b.Package != "widget-c1" || b.Name != "widget.v1.0.0" {
			t.Fatalf("renameAPIs=%v: bundle %s of %s", tc.renameAPIs, b.Name, b.Package)
		}
		got := map[string]string{}
		for _, p := range b.Properties {
			var v map[string]any
			if err := json.Unmarshal(p.Value, &v); err != nil {
				t.Fatal(err)
			}
			switch p.Type {
			case property.TypePackage, property.TypePackageRequired:
				got[p.Type], _ = v["packageName"].(string)
			case property.TypeGVK, property.TypeGVKRequired:
				got[p.Type], _ = v["group"].(string)
			}
		}
		want := map[string]string{
			property.TypePackage: "widget-c1", property.TypePackageRequired: "gadget-c1",
			property.TypeGVK: tc.wantProvided, property.TypeGVKRequired: tc.wantRequired,
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("renameAPIs=%v: %s = %q, want %q", tc.renameAPIs, k, got[k], w)
			}
		}
	}
}
