package author

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/spf13/cobra"

	"github.com/olmv1/olmv1/catalogd/pkg/fbcvalidate"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/fbcedit"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/pull"
	"github.com/olmv1/olmv1/platform/yamlalias"
)

func newCatalogInitCommand(o *options) *cobra.Command {
	var defaultChannel, description string
	cmd := &cobra.Command{
		Use:   "init DIR PACKAGE",
		Short: "Start a file-based catalog directory with a package (authors)",
		Long: `Create DIR/PACKAGE/catalog.yaml holding the package's olm.package blob. Add bundles with
'catalog add-bundle' (which also creates a package that does not exist yet).`,
		Example: `  kubectl olmv1 catalog init ./catalog my-operator --default-channel stable --description "Manages widgets"`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, pkg := args[0], args[1]
			if file, err := findPackageFile(cmd.Context(), dir, pkg); err != nil {
				return err
			} else if file != "" {
				return fmt.Errorf("package %s already exists in %s", pkg, filepath.Join(dir, file))
			}
			cfg := &declcfg.DeclarativeConfig{Packages: []declcfg.Package{{Schema: declcfg.SchemaPackage, Name: pkg, DefaultChannel: defaultChannel, Description: description}}}
			file := filepath.Join(pkg, "catalog.yaml")
			if err := WriteConfig(dir, file, cfg); err != nil {
				return err
			}
			if o.Output != "table" {
				return o.Print(cfg.Packages[0], nil)
			}
			fmt.Fprintf(o.Out, "created %s (package %s, default channel %s)\n", filepath.Join(dir, file), pkg, defaultChannel)
			return nil
		},
	}
	cmd.Flags().StringVar(&defaultChannel, "default-channel", "stable", "the channel installed when an Operator names none")
	cmd.Flags().StringVar(&description, "description", "", "the package's description")
	return cmd
}

func newCatalogAddBundleCommand(o *options) *cobra.Command {
	var (
		image     string
		channels  []string
		skipRange string
		insecure  bool
	)
	cmd := &cobra.Command{
		Use:   "add-bundle DIR (BUNDLE_DIR | BUNDLE_IMAGE)",
		Short: "Add a registry+v1 bundle to a catalog, computing its upgrade edges (authors)",
		Long: `Add a bundle, from a directory or an image, to its package in the file-based catalog DIR.

In every channel the bundle joins (--channel, default: the channels of its annotations.yaml), the
new entry replaces the channel's current head, so the replaces chain never names a version the
catalog does not have, whatever the CSV's spec.replaces says. The bundle must be newer than the head.
--skip-range (default: the CSV's olm.skipRange annotation) lets it skip a range of versions.
Missing packages and channels are created. The package's file is rewritten (as YAML, comments
are not kept) and the whole catalog is validated as catalogd validates it; on error nothing changes.`,
		Example: `  # From a directory: --image is the reference the catalog points at (what 'bundle push' printed)
  kubectl olmv1 catalog add-bundle ./catalog ./bundle --image quay.io/me/my-operator-bundle:v1.2.0

  # From a pushed image, into two channels, skipping every older 1.x
  kubectl olmv1 catalog add-bundle ./catalog quay.io/me/my-operator-bundle:v1.2.0 --channel stable --channel fast --skip-range ">=1.0.0 <1.2.0"`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, src := args[0], args[1]
			b, ref, err := readBundleArg(cmd.Context(), src, image, insecure)
			if err != nil {
				return err
			}
			file, cfg, err := loadPackageFile(cmd.Context(), dir, b.Package)
			if err != nil {
				return err
			}
			res, err := fbcedit.AddBundle(cfg, b, fbcedit.AddOptions{Image: ref, Channels: channels, SkipRange: skipRange})
			if err != nil {
				return err
			}
			v, err := writeValidated(cmd.Context(), dir, file, cfg)
			if err != nil {
				return err
			}
			if o.Output != "table" {
				return o.Print(res, nil)
			}
			o.printAddedBundle(res, ref, filepath.Join(dir, file), v)
			return nil
		},
	}
	cmd.Flags().StringVar(&image, "image", "", "bundle image reference the catalog points at (required for a directory; default: the image argument)")
	cmd.Flags().StringSliceVar(&channels, "channel", nil, "channel to add the bundle to (repeatable; default: the bundle's annotations.yaml channels)")
	cmd.Flags().StringVar(&skipRange, "skip-range", "", `semver range of versions the new entry skips, e.g. ">=1.0.0 <1.2.0"`)
	cmd.Flags().BoolVar(&insecure, "insecure", false, "use plain HTTP to pull the bundle image")
	return cmd
}

// loadPackageFile returns the file of dir (relative) that holds the blobs of pkg and its content;
// when no file does, it returns <pkg>/catalog.yaml and an empty catalog.
func loadPackageFile(ctx context.Context, dir, pkg string) (string, *declcfg.DeclarativeConfig, error) {
	file, err := findPackageFile(ctx, dir, pkg)
	if err != nil {
		return "", nil, err
	}
	if file == "" {
		return filepath.Join(pkg, "catalog.yaml"), &declcfg.DeclarativeConfig{}, nil
	}
	// findPackageFile checked every file of dir for alias bombs (checkAliases).
	cfg, err := declcfg.LoadFile(os.DirFS(dir), filepath.ToSlash(file))
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", filepath.Join(dir, file), err)
	}
	return file, cfg, nil
}

// printAddedBundle prints what add-bundle did: the notes (to ErrOut), the bundle added (image ref)
// to path, the edge of every channel it joined and the validated catalog v.
func (o *options) printAddedBundle(res *fbcedit.AddResult, ref, path string, v *fbcvalidate.Result) {
	for _, n := range res.Notes {
		fmt.Fprintf(o.ErrOut, "note: %s\n", n)
	}
	fmt.Fprintf(o.Out, "added %s (image %s) to package %s in %s\n", res.Bundle, ref, res.Package, path)
	for _, c := range res.Channels {
		created := ""
		if c.Created {
			created = " (new channel)"
		}
		fmt.Fprintf(o.Out, "  channel %s%s: %s\n", c.Channel, created, channelEdge(c))
	}
	fmt.Fprintf(o.Out, "catalog valid: %d package(s), %d channel(s), %d bundle(s), hash %s\n", v.Packages, v.Channels, v.Bundles, v.Hash)
}

// channelEdge describes the upgrade edge of a channel's new entry, e.g. "replaces a, skips b".
func channelEdge(c fbcedit.ChannelChange) string {
	edge := "first entry"
	if c.Replaces != "" {
		edge = "replaces " + c.Replaces
	}
	if len(c.Skips) > 0 {
		edge += ", skips " + strings.Join(c.Skips, ",")
	}
	if c.SkipRange != "" {
		edge += ", skipRange " + c.SkipRange
	}
	return edge
}

// readBundleArg reads a bundle from a directory (image names the catalog's reference) or pulls it.
func readBundleArg(ctx context.Context, src, image string, insecure bool) (*fbcedit.Bundle, string, error) {
	if st, err := os.Stat(src); err == nil && st.IsDir() {
		if image == "" {
			return nil, "", fmt.Errorf("%s is a directory: pass --image with the reference the bundle was pushed to (kubectl olmv1 bundle push %s IMAGE)", src, src)
		}
		b, err := fbcedit.ReadBundle(os.DirFS(src))
		if err != nil {
			return nil, "", fmt.Errorf("bundle %s: %w", src, err)
		}
		return b, image, nil
	}
	dir, remove, err := pull.ToDir(ctx, src, insecure)
	if err != nil {
		return nil, "", err
	}
	defer remove()
	b, err := fbcedit.ReadBundle(os.DirFS(dir))
	if err != nil {
		return nil, "", fmt.Errorf("bundle image %s: %w", src, err)
	}
	if image == "" {
		image = src
	}
	return b, image, nil
}

// checkAliases refuses a catalog directory with a YAML alias bomb in any file before operator-registry's
// walker (which does not guard against them) decodes it.
func checkAliases(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := yamlalias.CheckFile(data); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		return nil
	})
}

// findPackageFile returns the file of dir (relative) that holds the blobs of pkg, "" when none does.
// A package whose blobs are spread over several files is an error: add-bundle edits one file.
func findPackageFile(ctx context.Context, dir, pkg string) (string, error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err := checkAliases(dir); err != nil {
		return "", err
	}
	var mu sync.Mutex
	files := map[string]bool{}
	err := declcfg.WalkMetasFS(ctx, os.DirFS(dir), func(path string, m *declcfg.Meta, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(dir, path), err)
		}
		if (m.Schema == declcfg.SchemaPackage && m.Name == pkg) || (m.Schema != declcfg.SchemaPackage && m.Package == pkg) {
			mu.Lock()
			files[path] = true
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	var list []string
	for f := range files {
		list = append(list, f)
	}
	slices.Sort(list)
	switch len(list) {
	case 0:
		return "", nil
	case 1:
		return filepath.FromSlash(list[0]), nil
	}
	return "", fmt.Errorf("package %s is spread over %s in %s; keep one file per package to edit it with add-bundle", pkg, strings.Join(list, ", "), dir)
}

// WriteConfig writes cfg to dir/file as YAML, formatted as every catalog command writes it.
func WriteConfig(dir, file string, cfg *declcfg.DeclarativeConfig) error {
	var buf bytes.Buffer
	if err := declcfg.WriteYAML(*cfg, &buf); err != nil {
		return err
	}
	p := filepath.Join(dir, file)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, buf.Bytes(), 0o644)
}

// writeValidated writes cfg to dir/file and validates the whole catalog as catalogd does; when it is
// invalid, the file is put back as it was.
func writeValidated(ctx context.Context, dir, file string, cfg *declcfg.DeclarativeConfig) (*fbcvalidate.Result, error) {
	p := filepath.Join(dir, file)
	old, readErr := os.ReadFile(p)
	if err := WriteConfig(dir, file, cfg); err != nil {
		return nil, err
	}
	res, err := fbcvalidate.Validate(ctx, os.DirFS(dir))
	if err != nil {
		if readErr == nil {
			_ = os.WriteFile(p, old, 0o644)
		} else {
			_ = os.Remove(p)
		}
		return nil, fmt.Errorf("the catalog would be invalid, nothing was changed: %w", err)
	}
	return res, nil
}
