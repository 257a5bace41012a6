package widgetbundle

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// CatalogFile is the file RenderCatalog writes, relative to the catalog directory.
const CatalogFile = "catalog.yaml"

// SuggestedNamespace is the namespace the CSV (and the catalog's olm.csv.metadata) suggests.
const SuggestedNamespace = "widget-operator-system"

// CatalogBundle is one bundle of a catalog: its version and bundle image reference.
type CatalogBundle struct {
	Version string
	Image   string
}

type property struct {
	Type  string `json:"type"`
	Value any    `json:"value"`
}

type channelEntry struct {
	Name     string `json:"name"`
	Replaces string `json:"replaces,omitempty"`
}

// RenderCatalog writes the file-based catalog of package widget-operator holding bundles, in that
// order, to dir/catalog.yaml: an olm.package with default channel stable, the olm.channel stable in
// which each bundle replaces the one before it, and an olm.bundle per bundle with the properties
// olm.package, olm.gvk (Widget v1 and v2) and olm.csv.metadata. It does no network access.
func RenderCatalog(dir string, bundles []CatalogBundle) error {
	if len(bundles) == 0 {
		return fmt.Errorf("widget-operator catalog: no bundles (pass at least one version and bundle image)")
	}
	docs := []any{
		map[string]any{"schema": "olm.package", "name": Package, "defaultChannel": Channel,
			"description": "A small real operator for the OLM v1 real-node tests."},
	}
	var entries []channelEntry
	for i, b := range bundles {
		if !versionPattern.MatchString(b.Version) || b.Image == "" {
			return fmt.Errorf("widget-operator catalog: bundle %d has version %q and image %q; both are needed (e.g. 1.0.0 and 10.201.0.1:5000/bundles/widget-operator:1.0.0)", i, b.Version, b.Image)
		}
		e := channelEntry{Name: CSVName(b.Version)}
		if i > 0 {
			e.Replaces = CSVName(bundles[i-1].Version)
		}
		entries = append(entries, e)
	}
	docs = append(docs, map[string]any{"schema": "olm.channel", "package": Package, "name": Channel, "entries": entries})
	for _, b := range bundles {
		docs = append(docs, map[string]any{
			"schema": "olm.bundle", "package": Package, "name": CSVName(b.Version), "image": b.Image,
			"properties": []property{
				{Type: "olm.package", Value: map[string]string{"packageName": Package, "version": b.Version}},
				{Type: "olm.gvk", Value: map[string]string{"group": "widgets.olmv1.io", "kind": "Widget", "version": "v1"}},
				{Type: "olm.gvk", Value: map[string]string{"group": "widgets.olmv1.io", "kind": "Widget", "version": "v2"}},
				{Type: "olm.csv.metadata", Value: map[string]any{
					"annotations": map[string]string{"operatorframework.io/suggested-namespace": SuggestedNamespace},
					"displayName": "Widget Operator",
					"installModes": []map[string]any{
						{"type": "OwnNamespace", "supported": false},
						{"type": "SingleNamespace", "supported": false},
						{"type": "MultiNamespace", "supported": false},
						{"type": "AllNamespaces", "supported": true},
					},
				}},
			},
		})
	}
	var out bytes.Buffer
	out.WriteString("# The widget-operator catalog, rendered by widgetbundle.RenderCatalog.\n")
	for i, d := range docs {
		data, err := yaml.Marshal(d)
		if err != nil {
			return err
		}
		if i > 0 {
			out.WriteString("---\n")
		}
		out.Write(data)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("widget-operator catalog: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, CatalogFile), out.Bytes(), 0o644); err != nil {
		return fmt.Errorf("widget-operator catalog: %w", err)
	}
	return nil
}
