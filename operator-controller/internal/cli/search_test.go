package cli

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	metadatav1alpha1 "github.com/olmv1/olmv1/catalogd/api/metadata/v1alpha1"
)

func blob(catalog, schema, pkg, name, content string) metadatav1alpha1.CatalogMetadata {
	return metadatav1alpha1.CatalogMetadata{Spec: metadatav1alpha1.CatalogMetadataSpec{
		Catalog: catalog, Schema: schema, Package: pkg, Name: name, Content: runtime.RawExtension{Raw: []byte(content)}}}
}

func TestSearchViews(t *testing.T) {
	pkgs := []metadatav1alpha1.CatalogMetadata{
		blob("b", "olm.package", "", "op", `{"schema":"olm.package","name":"op","defaultChannel":"stable","description":"Manages widgets.\nMore."}`),
		blob("a", "olm.package", "", "op", `{"schema":"olm.package","name":"op","defaultChannel":"fast"}`),
	}
	chans := []metadatav1alpha1.CatalogMetadata{
		blob("b", "olm.channel", "op", "stable", `{}`), blob("b", "olm.channel", "op", "fast", `{}`), blob("a", "olm.channel", "op", "fast", `{}`),
	}
	var buf bytes.Buffer
	if err := packagesTable(summarize(pkgs, chans)).Write(&buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "op ") || !strings.Contains(lines[1], " a ") || !strings.Contains(lines[2], "fast,stable") || !strings.Contains(lines[2], "Manages widgets.") {
		t.Fatalf("packages table:\n%s", buf.String())
	}

	blobs := []metadatav1alpha1.CatalogMetadata{
		blob("b", "olm.channel", "op", "stable", `{"schema":"olm.channel","package":"op","name":"stable","entries":[{"name":"op.v1.10.0","replaces":"op.v1.9.0","skipRange":"<1.9.0"},{"name":"op.v1.9.0"}]}`),
		blob("b", "olm.bundle", "op", "op.v1.9.0", `{"schema":"olm.bundle","package":"op","name":"op.v1.9.0","image":"r/op:1.9.0","properties":[{"type":"olm.package","value":{"packageName":"op","version":"1.9.0"}}]}`),
		blob("b", "olm.bundle", "op", "op.v1.10.0", `{"schema":"olm.bundle","package":"op","name":"op.v1.10.0","image":"r/op:1.10.0","properties":[{"type":"olm.package","value":{"packageName":"op","version":"1.10.0"}}]}`),
	}
	info := details(pkgs[0], blobs)
	buf.Reset()
	if err := versionsTable([]packageInfo{info}).Write(&buf); err != nil {
		t.Fatal(err)
	}
	lines = strings.Split(strings.TrimSpace(buf.String()), "\n")
	// Newest first by semver (1.10.0 before 1.9.0), default channel marked, edges listed.
	if len(lines) != 3 || !strings.Contains(lines[1], "stable (default)") || !strings.Contains(lines[1], "1.10.0") ||
		!strings.Contains(lines[1], "op.v1.9.0, <1.9.0") || !strings.Contains(lines[2], "1.9.0") {
		t.Fatalf("versions table:\n%s", buf.String())
	}
	if info.Channels[0].Entries[0].Image != "r/op:1.10.0" {
		t.Fatalf("entries %+v", info.Channels[0].Entries)
	}
}
