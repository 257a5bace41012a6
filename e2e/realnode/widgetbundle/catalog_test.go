package widgetbundle

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// readCatalog returns the documents of dir/catalog.yaml by schema.
func readCatalog(t *testing.T, dir string) map[string][]map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, CatalogFile))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]map[string]any{}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("%v\n%s", err, doc)
		}
		s, _ := m["schema"].(string)
		out[s] = append(out[s], m)
	}
	return out
}

func TestRenderCatalog(t *testing.T) {
	dir := t.TempDir()
	bundles := []CatalogBundle{
		{Version: "1.0.0", Image: "10.201.0.1:5000/bundles/widget-operator@sha256:aa"},
		{Version: "1.1.0", Image: "10.201.0.1:5000/bundles/widget-operator@sha256:bb"},
	}
	if err := RenderCatalog(dir, bundles); err != nil {
		t.Fatal(err)
	}
	docs := readCatalog(t, dir)
	if len(docs["olm.package"]) != 1 || docs["olm.package"][0]["name"] != Package || docs["olm.package"][0]["defaultChannel"] != Channel {
		t.Errorf("olm.package %v", docs["olm.package"])
	}
	wantEntries := []any{
		map[string]any{"name": "widget-operator.v1.0.0"},
		map[string]any{"name": "widget-operator.v1.1.0", "replaces": "widget-operator.v1.0.0"},
	}
	if ch := docs["olm.channel"]; len(ch) != 1 || ch[0]["name"] != Channel || ch[0]["package"] != Package || !reflect.DeepEqual(ch[0]["entries"], wantEntries) {
		t.Errorf("olm.channel %v", ch)
	}
	if len(docs["olm.bundle"]) != 2 {
		t.Fatalf("%d bundles", len(docs["olm.bundle"]))
	}
	for i, b := range docs["olm.bundle"] {
		if b["name"] != CSVName(bundles[i].Version) || b["image"] != bundles[i].Image || b["package"] != Package {
			t.Errorf("bundle %d: %v", i, b)
		}
		props, _ := b["properties"].([]any)
		var types []string
		for _, p := range props {
			pm := p.(map[string]any)
			types = append(types, pm["type"].(string))
			switch pm["type"] {
			case "olm.package":
				if !reflect.DeepEqual(pm["value"], map[string]any{"packageName": Package, "version": bundles[i].Version}) {
					t.Errorf("bundle %d: olm.package %v", i, pm["value"])
				}
			case "olm.gvk":
				v := pm["value"].(map[string]any)
				if v["group"] != "widgets.olmv1.io" || v["kind"] != "Widget" || (v["version"] != "v1" && v["version"] != "v2") {
					t.Errorf("bundle %d: olm.gvk %v", i, v)
				}
			}
		}
		if !reflect.DeepEqual(types, []string{"olm.package", "olm.gvk", "olm.gvk", "olm.csv.metadata"}) {
			t.Errorf("bundle %d: properties %v", i, types)
		}
	}
}

func TestRenderCatalogErrors(t *testing.T) {
	if err := RenderCatalog(t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "no bundles") {
		t.Errorf("error %v", err)
	}
	if err := RenderCatalog(t.TempDir(), []CatalogBundle{{Version: "1.0.0"}}); err == nil || !strings.Contains(err.Error(), "both are needed") {
		t.Errorf("error %v", err)
	}
}
