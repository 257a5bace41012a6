// Package scaletestdata builds the large catalogs of the scale benchmarks from the shared real test
// data (rukpak/pkg/sharedtestdata locates it).
package scaletestdata

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
)

// LargeCatalog writes the ~60 MB catalog of issue 20's benchmarks under dst, about the size of
// OpenShift's default catalogs: catalogs/community-v4.16 and catalogs/community-v4.20 of root, each
// copied twice with every package renamed per copy (suffixes -a1, -a2 and -b1, -b2: the two
// catalogs share package names), as YAML, one catalog.yaml per package as the originals.
func LargeCatalog(root, dst string) error {
	for _, c := range []struct{ src, suffix string }{
		{"community-v4.16", "-a1"}, {"community-v4.16", "-a2"},
		{"community-v4.20", "-b1"}, {"community-v4.20", "-b2"},
	} {
		if err := copyRenamed(filepath.Join(root, "catalogs", c.src), dst, c.suffix, false); err != nil {
			return err
		}
	}
	return nil
}

// RenamedCopy writes every package directory of src (a catalog laid out one directory per
// package) under dst with suffix appended to every package name and every reference to one, as
// LargeCatalog does to each of its copies. With renameAPIs, the group of every API a bundle
// provides or requires (olm.gvk, olm.gvk.required) is also prefixed with the suffix ("-c0":
// "example.com" becomes "c0.example.com"), so that the packages of several copies can be resolved
// together (only one bundle may provide an API). BenchmarkFourCatalogs builds its catalogs with it.
func RenamedCopy(src, dst, suffix string, renameAPIs bool) error {
	return copyRenamed(src, dst, suffix, renameAPIs)
}

// copyRenamed writes every package directory of src under dst, renaming the package (and every
// reference to it and to the other packages of src) with suffix.
func copyRenamed(src, dst, suffix string, renameAPIs bool) error {
	dirs, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		cfg, err := declcfg.LoadFS(context.Background(), os.DirFS(filepath.Join(src, d.Name())))
		if err != nil {
			return fmt.Errorf("%s: %w", d.Name(), err)
		}
		if err := renamePackages(cfg, suffix, renameAPIs); err != nil {
			return fmt.Errorf("%s: %w", d.Name(), err)
		}
		if err := writeYAML(cfg, filepath.Join(dst, d.Name()+suffix)); err != nil {
			return err
		}
	}
	return nil
}

func writeYAML(cfg *declcfg.DeclarativeConfig, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "catalog.yaml"))
	if err != nil {
		return err
	}
	if err := declcfg.WriteYAML(*cfg, f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func renamePackages(cfg *declcfg.DeclarativeConfig, suffix string, renameAPIs bool) error {
	apiPrefix := strings.TrimPrefix(suffix, "-") + "."
	for i := range cfg.Packages {
		cfg.Packages[i].Name += suffix
	}
	for i := range cfg.Channels {
		cfg.Channels[i].Package += suffix
	}
	for i := range cfg.Deprecations {
		cfg.Deprecations[i].Package += suffix
	}
	for i := range cfg.Bundles {
		b := &cfg.Bundles[i]
		b.Package += suffix
		for j, p := range b.Properties {
			field, value := "", func(s string) string { return s + suffix }
			switch {
			case p.Type == property.TypePackage || p.Type == property.TypePackageRequired:
				field = "packageName"
			case renameAPIs && (p.Type == property.TypeGVK || p.Type == property.TypeGVKRequired):
				field, value = "group", func(s string) string { return strings.TrimSuffix(apiPrefix+s, ".") }
			default:
				continue
			}
			var v map[string]any
			if err := json.Unmarshal(p.Value, &v); err != nil {
				return err
			}
			if s, ok := v[field].(string); ok {
				v[field] = value(s)
			}
			raw, err := json.Marshal(v)
			if err != nil {
				return err
			}
			b.Properties[j].Value = raw
		}
	}
	return nil
}
