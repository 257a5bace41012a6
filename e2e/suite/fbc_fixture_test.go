package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	. "github.com/onsi/gomega"
)

// fixtureCatalog builds a fixture catalog's file-based catalog from typed blobs, so that a spec says
// which packages, channels, bundles and properties it needs instead of writing FBC text by hand.
// Bundles are named <package>.v<version>, as the example bundles' CSVs are.
type fixtureCatalog struct {
	blobs []any
}

// fbcProperty is one olm.bundle property.
type fbcProperty struct {
	Type  string `json:"type"`
	Value any    `json:"value"`
}

type fbcEntry struct {
	Name     string `json:"name"`
	Replaces string `json:"replaces,omitempty"`
}

func newFixtureCatalog() *fixtureCatalog { return &fixtureCatalog{} }

func fbcBundleName(pkg, version string) string { return pkg + ".v" + version }

// Package adds an olm.package blob.
func (f *fixtureCatalog) Package(name, defaultChannel string) *fixtureCatalog {
	f.blobs = append(f.blobs, map[string]any{"schema": "olm.package", "name": name, "defaultChannel": defaultChannel})
	return f
}

// Channel adds an olm.channel blob whose entries are the versions in order, each replacing the one
// before it.
func (f *fixtureCatalog) Channel(pkg, name string, versions ...string) *fixtureCatalog {
	entries := make([]fbcEntry, len(versions))
	for i, v := range versions {
		entries[i].Name = fbcBundleName(pkg, v)
		if i > 0 {
			entries[i].Replaces = fbcBundleName(pkg, versions[i-1])
		}
	}
	f.blobs = append(f.blobs, map[string]any{"schema": "olm.channel", "package": pkg, "name": name, "entries": entries})
	return f
}

// Bundle adds an olm.bundle blob with its olm.package property and the extra properties.
func (f *fixtureCatalog) Bundle(pkg, version, image string, props ...fbcProperty) *fixtureCatalog {
	all := append([]fbcProperty{{Type: "olm.package", Value: map[string]string{"packageName": pkg, "version": version}}}, props...)
	f.blobs = append(f.blobs, map[string]any{"schema": "olm.bundle", "package": pkg, "name": fbcBundleName(pkg, version), "image": image, "properties": all})
	return f
}

// SingleBundlePackage adds a package with one channel, stable, holding one bundle.
func (f *fixtureCatalog) SingleBundlePackage(pkg, version, image string, props ...fbcProperty) *fixtureCatalog {
	return f.Package(pkg, "stable").Channel(pkg, "stable", version).Bundle(pkg, version, image, props...)
}

// FBC renders the blobs as JSON lines.
func (f *fixtureCatalog) FBC() string {
	var b strings.Builder
	for _, blob := range f.blobs {
		line, err := json.Marshal(blob)
		Expect(err).NotTo(HaveOccurred())
		fmt.Fprintf(&b, "%s\n", line)
	}
	return b.String()
}

// Push builds the catalog image and pushes it to the suite's registry as catalogs/repo:tag.
func (f *fixtureCatalog) Push(ctx context.Context, repo, tag string) string {
	return pushCatalog(ctx, f.FBC(), repo, tag)
}

// gvkProperty is an olm.gvk (provided) or olm.gvk.required property.
func gvkProperty(propertyType, group, version, kind string) fbcProperty {
	return fbcProperty{Type: propertyType, Value: map[string]string{"group": group, "version": version, "kind": kind}}
}
