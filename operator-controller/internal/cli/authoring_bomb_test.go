package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAuthoringCommandsRefuseAliasBombs: every YAML file an authoring command reads is checked for
// alias bombs before it is decoded — a bundle's annotations, manifests, dependencies and properties
// (catalog add-bundle), an existing catalog file (add-bundle), a semver template (catalog render),
// and bundle render's --values, --deployment-config and its namespace lookup. Each is refused fast,
// naming the file.
func TestAuthoringCommandsRefuseAliasBombs(t *testing.T) {
	bomb := nestedLaughs("bomb")
	bundleWith := func(t *testing.T, file string) string {
		dir := t.TempDir()
		copyDir(t, filepath.Join(exampleBundles, "0.1.0"), dir)
		p := filepath.Join(dir, file)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(bomb), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	bombFile := func(t *testing.T, name string) string {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, []byte(bomb), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name string
		args func(t *testing.T) []string
		want string
	}{
		{"add-bundle: annotations", func(t *testing.T) []string {
			return []string{"catalog", "add-bundle", t.TempDir(), bundleWith(t, "metadata/annotations.yaml"), "--image", "r.test/b:1"}
		}, "metadata/annotations.yaml"},
		{"add-bundle: dependencies", func(t *testing.T) []string {
			return []string{"catalog", "add-bundle", t.TempDir(), bundleWith(t, "metadata/dependencies.yaml"), "--image", "r.test/b:1"}
		}, "metadata/dependencies.yaml"},
		{"add-bundle: properties", func(t *testing.T) []string {
			return []string{"catalog", "add-bundle", t.TempDir(), bundleWith(t, "metadata/properties.yaml"), "--image", "r.test/b:1"}
		}, "metadata/properties.yaml"},
		{"add-bundle: a manifest", func(t *testing.T) []string {
			return []string{"catalog", "add-bundle", t.TempDir(), bundleWith(t, "manifests/extra.yaml"), "--image", "r.test/b:1"}
		}, "manifests/extra.yaml"},
		{"add-bundle: the existing catalog file", func(t *testing.T) []string {
			cat := writeCatalogFiles(t, map[string]string{"example-operator/catalog.yaml": bomb})
			return []string{"catalog", "add-bundle", cat, filepath.Join(exampleBundles, "0.1.0"), "--image", "r.test/b:1"}
		}, "catalog.yaml"},
		{"add-bundle: another package's file, a 1 MiB string aliased 999 times", func(t *testing.T) []string {
			cat := writeCatalogFiles(t, map[string]string{"other/catalog.yaml": longStringLaughs("other")})
			return []string{"catalog", "add-bundle", cat, filepath.Join(exampleBundles, "0.1.0"), "--image", "r.test/b:1"}
		}, "other/catalog.yaml"},
		{"render: semver template", func(t *testing.T) []string {
			return []string{"catalog", "render", "--semver", bombFile(t, "semver.yaml")}
		}, "semver.yaml"},
		{"bundle render: --values", func(t *testing.T) []string {
			return []string{"bundle", "render", filepath.Join(exampleBundles, "0.1.0"), "--values", bombFile(t, "values.yaml")}
		}, "values.yaml"},
		{"bundle render: --deployment-config", func(t *testing.T) []string {
			return []string{"bundle", "render", filepath.Join(exampleBundles, "0.1.0"), "--deployment-config", bombFile(t, "dc.yaml")}
		}, "dc.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args(t)
			start := time.Now()
			out, errOut, err := run(t, args...)
			took := time.Since(start)
			msg := out + errOut
			if err != nil {
				msg += err.Error()
			}
			if err == nil || !strings.Contains(msg, "aliases") || !strings.Contains(msg, tc.want) {
				t.Fatalf("kubectl olmv1 %s: err %v, want a refusal naming %s and the aliases\n%s", strings.Join(args, " "), err, tc.want, msg)
			}
			if took > bombWallBound {
				t.Errorf("took %v, the bound is %v", took, bombWallBound)
			}
		})
	}
}
