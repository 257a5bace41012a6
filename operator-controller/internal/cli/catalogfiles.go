package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/olmv1/olmv1/catalogd/pkg/fbcvalidate"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/fbcedit"
	"github.com/olmv1/olmv1/platform/yamlalias"
	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
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
			if err := writeConfig(dir, file, cfg); err != nil {
				return err
			}
			if o.output != "table" {
				return o.print(cfg.Packages[0], nil)
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
			if o.output != "table" {
				return o.print(res, nil)
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
	dir, remove, err := pullToDir(ctx, src, insecure)
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

// writeConfig writes cfg as YAML to dir/file.
func writeConfig(dir, file string, cfg *declcfg.DeclarativeConfig) error {
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
	if err := writeConfig(dir, file, cfg); err != nil {
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

func newCatalogRenderCommand(o *options) *cobra.Command {
	var (
		semverTemplate string
		to             string
		insecure       bool
	)
	cmd := &cobra.Command{
		Use:   "render --semver TEMPLATE",
		Short: "Render a semver template into a file-based catalog: channels and edges from bundle versions (authors)",
		Long: `Render a semver catalog template: bundles are listed under candidate, fast and stable, and the
channels (<kind>-v<major> with generateMajorChannels, <kind>-v<major>.<minor> with
generateMinorChannels, the default) and their upgrade edges are generated from the versions. Within a
major version, the highest patch of each minor skips the lower patches (or, with avoidSkipPatch,
each patch replaces the previous one) and replaces the highest patch of the previous minor. No edge
crosses a major version. The default channel is the most stable kind's channel with the highest version.

Each bundle is read from its image, or from 'path' (a bundle directory, relative to the template)
when given; the catalog references 'image'. The output is YAML on stdout (-o json for JSON), or
DIR/<package>/catalog.yaml with --to DIR; it is validated as catalogd validates catalogs.`,
		Example: `  cat > semver.yaml <<EOF
  schema: olm.semver
  generateMajorChannels: true
  generateMinorChannels: false
  candidate:
    bundles:
    - image: quay.io/me/my-operator-bundle:v0.1.0
    - image: quay.io/me/my-operator-bundle:v0.2.0
      path: ./bundles/0.2.0
  stable:
    bundles:
    - image: quay.io/me/my-operator-bundle:v0.1.0
  EOF
  kubectl olmv1 catalog render --semver semver.yaml --to ./catalog`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if semverTemplate == "" {
				return fmt.Errorf("--semver TEMPLATE is required")
			}
			t, err := readSemverTemplate(semverTemplate)
			if err != nil {
				return err
			}
			bundles, err := readTemplateBundles(cmd.Context(), t, semverTemplate, insecure)
			if err != nil {
				return err
			}
			cfg, err := fbcedit.RenderSemver(t, bundles)
			if err != nil {
				return fmt.Errorf("%s: %w", semverTemplate, err)
			}
			if to != "" {
				return o.writeRendered(cmd.Context(), to, cfg)
			}
			return o.printRendered(cmd.Context(), cfg)
		},
	}
	cmd.Flags().StringVar(&semverTemplate, "semver", "", "the semver template file (schema: olm.semver)")
	cmd.Flags().StringVar(&to, "to", "", "write DIR/<package>/catalog.yaml instead of printing the catalog")
	cmd.Flags().BoolVar(&insecure, "insecure", false, "use plain HTTP to pull bundle images")
	return cmd
}

// readSemverTemplate reads the semver template file path.
func readSemverTemplate(path string) (*fbcedit.SemverTemplate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := yamlalias.CheckFile(data); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t := &fbcedit.SemverTemplate{}
	if err := yaml.Unmarshal(data, t); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// readTemplateBundles reads every bundle of template t (file templatePath) once, by image: from its
// path (relative to the template) when it has one, else from its image.
func readTemplateBundles(ctx context.Context, t *fbcedit.SemverTemplate, templatePath string, insecure bool) (map[string]*fbcedit.Bundle, error) {
	bundles := map[string]*fbcedit.Bundle{}
	for _, kind := range []fbcedit.SemverChannel{t.Candidate, t.Fast, t.Stable} {
		for _, e := range kind.Bundles {
			if _, ok := bundles[e.Image]; ok || e.Image == "" {
				continue
			}
			var b *fbcedit.Bundle
			var err error
			if e.Path != "" {
				p := e.Path
				if !filepath.IsAbs(p) {
					p = filepath.Join(filepath.Dir(templatePath), p)
				}
				b, _, err = readBundleArg(ctx, p, e.Image, insecure)
			} else {
				b, _, err = readBundleArg(ctx, e.Image, e.Image, insecure)
			}
			if err != nil {
				return nil, err
			}
			bundles[e.Image] = b
		}
	}
	return bundles, nil
}

// writeRendered writes the rendered catalog cfg, validated, to to/<package>/catalog.yaml, unless
// another file of to holds the package.
func (o *options) writeRendered(ctx context.Context, to string, cfg *declcfg.DeclarativeConfig) error {
	file := filepath.Join(cfg.Packages[0].Name, "catalog.yaml")
	if existing, err := findPackageFile(ctx, to, cfg.Packages[0].Name); err != nil {
		return err
	} else if existing != "" && existing != file {
		return fmt.Errorf("package %s is already in %s; remove it or render into another directory", cfg.Packages[0].Name, filepath.Join(to, existing))
	}
	v, err := writeValidated(ctx, to, file, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "wrote %s: %d channel(s), %d bundle(s), default channel %s; catalog hash %s\n", filepath.Join(to, file), len(cfg.Channels), len(cfg.Bundles), cfg.Packages[0].DefaultChannel, v.Hash)
	return nil
}

// printRendered validates the rendered catalog cfg and prints it as YAML (JSON with -o json).
func (o *options) printRendered(ctx context.Context, cfg *declcfg.DeclarativeConfig) error {
	dir, err := os.MkdirTemp("", "kubectl-olmv1-render-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if _, err := writeValidated(ctx, dir, "catalog.yaml", cfg); err != nil {
		return err
	}
	if o.output == "json" {
		return declcfg.WriteJSON(*cfg, o.Out)
	}
	return declcfg.WriteYAML(*cfg, o.Out)
}

func newCatalogValidateCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "validate DIR",
		Short: "Validate a file-based catalog exactly as catalogd does (authors)",
		Long: `Parse and validate every .json and .yaml file of DIR (honouring .indexignore) with catalogd's own
code: the same checks and the same messages as a Catalog's Unpacked condition, and the content hash
catalogd will report in status.contentHash. Memory stays bounded by the largest packages, not the
catalog: the Go heap is held near 32 MiB (a soft limit; set GOMEMLIMIT to choose another).`,
		Example: `  kubectl olmv1 catalog validate ./catalog`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			limitHeap()
			res, err := fbcvalidate.Validate(cmd.Context(), os.DirFS(args[0]))
			if err != nil {
				if fbcvalidate.IsInvalid(err) {
					fmt.Fprintf(o.Out, "%s: invalid catalog: %v\n", args[0], err)
					return &SilentError{err}
				}
				return err
			}
			return o.print(res, func() *table {
				t := &table{headers: []string{"CATALOG", "VALID", "PACKAGES", "CHANNELS", "BUNDLES", "HASH"}}
				t.add(args[0], "true", fmt.Sprint(res.Packages), fmt.Sprint(res.Channels), fmt.Sprint(res.Bundles), res.Hash)
				return t
			})
		},
	}
}

// validateHeapLimit is the soft Go memory limit of `catalog validate` (unless GOMEMLIMIT is set):
// validation streams the catalog and holds a few packages at a time, so the collector can keep the
// heap near this at little cost (the 60 MB catalog of issue 20: 74 MiB peak RSS instead of 87 MiB,
// 2.2 s instead of 2.0 s, BenchmarkCatalogValidateLarge).
const validateHeapLimit = 32 << 20

func limitHeap() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(validateHeapLimit)
	}
}

func newCatalogPushCommand(o *options) *cobra.Command {
	var insecure bool
	cmd := &cobra.Command{
		Use:   "push DIR IMAGE",
		Short: "Validate a file-based catalog, build its image (content under /configs) and push it (authors)",
		Long: `Validate DIR as catalogd does, build the catalog image (DIR's content under /configs, with the
operators.operatorframework.io.index.configs.v1=/configs label) and push it. Registry credentials come
from the docker config file. Prints the pushed digest reference.`,
		Example: `  kubectl olmv1 catalog push ./catalog quay.io/me/my-catalog:latest
  kubectl olmv1 catalog push ./catalog localhost:5000/my-catalog:latest --insecure`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := fbcvalidate.Validate(cmd.Context(), os.DirFS(args[0])); err != nil {
				return fmt.Errorf("catalog %s is invalid, not pushed: %w", args[0], err)
			}
			img, err := imagebuild.CatalogImage(args[0])
			if err != nil {
				return err
			}
			return o.push(cmd, img, args[1], insecure, "catalog")
		},
	}
	cmd.Flags().BoolVar(&insecure, "insecure", false, "use plain HTTP to talk to the registry")
	return cmd
}
