package author

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/olmv1/olmv1/operator-controller/internal/cli/fbcedit"
	"github.com/olmv1/olmv1/platform/yamlalias"
)

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
	if o.Output == "json" {
		return declcfg.WriteJSON(*cfg, o.Out)
	}
	return declcfg.WriteYAML(*cfg, o.Out)
}
