package bundletest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// fromCatalog is the package of the bundle under test as a catalog image has it, the previous
// version being the head of the bundle's channel.
type fromCatalog struct {
	// blobs are the package's FBC blobs (olm.package, olm.channel, olm.bundle, …), the previous
	// bundle's image pointed at its copy in the throw-away registry.
	blobs   []map[string]any
	channel string
}

// readCatalog pulls Options.Catalog, keeps the blobs of the bundle's package, and makes the head of
// the bundle's default channel the previous version: its image is copied into the throw-away
// registry and read.
func (t *tester) readCatalog(ctx context.Context) (string, error) {
	dir, err := t.pullToDir(ctx, t.o.Catalog, "from-catalog")
	if err != nil {
		return "", err
	}
	blobs, err := readFBC(dir)
	if err != nil {
		return "", fmt.Errorf("catalog %s: %w", t.o.Catalog, err)
	}
	fc := &fromCatalog{}
	var pkgBlob map[string]any
	for _, b := range blobs {
		if (b["schema"] == "olm.package" && b["name"] == t.bundle.Package) || b["package"] == t.bundle.Package {
			fc.blobs = append(fc.blobs, b)
			if b["schema"] == "olm.package" {
				pkgBlob = b
			}
		}
	}
	if pkgBlob == nil {
		return "", fmt.Errorf("catalog %s has no package %s: pass --upgrade-from with the previous bundle instead", t.o.Catalog, t.bundle.Package)
	}
	fc.channel = t.bundle.DefaultChannel
	if fc.channel == "" {
		fc.channel, _ = pkgBlob["defaultChannel"].(string)
	}
	head, err := channelHead(fc.blobs, fc.channel)
	if err != nil {
		return "", fmt.Errorf("catalog %s, package %s: %w", t.o.Catalog, t.bundle.Package, err)
	}
	var headBlob map[string]any
	for _, b := range fc.blobs {
		if b["schema"] == "olm.bundle" && b["name"] == head {
			headBlob = b
		}
	}
	image, _ := headBlob["image"].(string)
	if image == "" {
		return "", fmt.Errorf("catalog %s: bundle %s (head of channel %s) has no image", t.o.Catalog, head, fc.channel)
	}
	prev, err := t.readSource(ctx, image, "previous")
	if err != nil {
		return "", fmt.Errorf("the head of channel %s, %s: %w", fc.channel, head, err)
	}
	prev.Ref = fmt.Sprintf("%s/bundle-test/%s:%s", t.env.Registry.Addr, prev.Package, prev.Version)
	if err := t.pushSource(ctx, prev); err != nil {
		return "", err
	}
	headBlob["image"] = prev.Ref
	t.prev, t.catalog = prev, fc
	return fmt.Sprintf("package %s: %d blobs; channel %s head %s (%s) copied to %s", t.bundle.Package, len(fc.blobs), fc.channel, head, image, prev.Ref), nil
}

// channelHead returns the entry of channel that no other entry replaces or skips.
func channelHead(blobs []map[string]any, channel string) (string, error) {
	for _, b := range blobs {
		if b["schema"] != "olm.channel" || b["name"] != channel {
			continue
		}
		entries, _ := b["entries"].([]any)
		replaced := map[string]bool{}
		var names []string
		for _, e := range entries {
			m, _ := e.(map[string]any)
			name, _ := m["name"].(string)
			names = append(names, name)
			if r, ok := m["replaces"].(string); ok {
				replaced[r] = true
			}
			skips, _ := m["skips"].([]any)
			for _, s := range skips {
				replaced[fmt.Sprint(s)] = true
			}
		}
		var heads []string
		for _, n := range names {
			if !replaced[n] {
				heads = append(heads, n)
			}
		}
		if len(heads) != 1 {
			return "", fmt.Errorf("channel %s has %d heads (%s): pass --upgrade-from with the previous bundle", channel, len(heads), strings.Join(heads, ", "))
		}
		return heads[0], nil
	}
	return "", fmt.Errorf("no channel %s", channel)
}

// write writes the package's blobs to dir/<package>/catalog.yaml.
func (fc *fromCatalog) write(dir string) error {
	var buf bytes.Buffer
	for _, b := range fc.blobs {
		data, err := yaml.Marshal(b)
		if err != nil {
			return err
		}
		buf.WriteString("---\n")
		buf.Write(data)
	}
	pkg := ""
	for _, b := range fc.blobs {
		if b["schema"] == "olm.package" {
			pkg, _ = b["name"].(string)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, pkg), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, pkg, "catalog.yaml"), buf.Bytes(), 0o644)
}

// readFBC reads every blob of the FBC files (JSON or YAML streams) under the catalog image's
// configs directory (/configs, as catalog images lay it out).
func readFBC(root string) ([]map[string]any, error) {
	dir := filepath.Join(root, "configs")
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("no /configs directory in the image: is it a file-based catalog image? (%w)", err)
	}
	var out []map[string]any
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
		for {
			var m map[string]any
			if err := dec.Decode(&m); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return fmt.Errorf("%s: %w", strings.TrimPrefix(p, root), err)
			}
			if m != nil {
				out = append(out, m)
			}
		}
	})
	return out, err
}
