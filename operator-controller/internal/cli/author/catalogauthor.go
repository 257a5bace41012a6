package author

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/spf13/cobra"

	"github.com/olmv1/olmv1/operator-controller/internal/cli/fbcedit"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/graph"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/pull"
	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

// newCatalogAuthorCommands are the catalog subcommands that edit or draw a package's channels:
// promote, deprecate and graph.
func newCatalogAuthorCommands(o *options) []*cobra.Command {
	return []*cobra.Command{newCatalogPromoteCommand(o), newCatalogDeprecateCommand(o), newCatalogGraphCommand(o)}
}

func newCatalogPromoteCommand(o *options) *cobra.Command {
	var to, skipRange string
	cmd := &cobra.Command{
		Use:   "promote DIR PACKAGE VERSION --to CHANNEL",
		Short: "Add a bundle the catalog has to another channel, computing its upgrade edge (authors)",
		Long: `Add the bundle VERSION (a version or a bundle name) of PACKAGE, already in the file-based catalog
DIR, to channel --to, created when missing. As with 'catalog add-bundle', the new entry replaces the
channel's head, which must be older; --skip-range (default: the CSV's olm.skipRange annotation, as the
bundle's olm.csv.metadata records it) lets it skip a range of versions. A bundle already in the
channel changes nothing. Only the package's file is rewritten, and the catalog is validated as
catalogd validates it; on error nothing changes.`,
		Example: `  kubectl olmv1 catalog promote ./catalog my-operator 1.2.0 --to stable
  kubectl olmv1 catalog promote ./catalog my-operator 1.2.0 --to stable --skip-range ">=1.0.0 <1.2.0"`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, pkg := args[0], args[1]
			file, cfg, err := loadPackageFile(cmd.Context(), dir, pkg)
			if err != nil {
				return err
			}
			res, err := fbcedit.Promote(cfg, pkg, args[2], fbcedit.PromoteOptions{Channel: to, SkipRange: skipRange})
			if err != nil {
				return err
			}
			if res.AlreadyInChannel {
				if o.Output != "table" {
					return o.Print(res, nil)
				}
				fmt.Fprintf(o.Out, "%s (version %s) is already in channel %s of package %s; nothing changed\n", res.Bundle, res.Version, to, pkg)
				return nil
			}
			v, err := writeValidated(cmd.Context(), dir, file, cfg)
			if err != nil {
				return err
			}
			if o.Output != "table" {
				return o.Print(res, nil)
			}
			created := ""
			if res.Channel.Created {
				created = " (new channel)"
			}
			fmt.Fprintf(o.Out, "promoted %s (version %s) of package %s in %s\n", res.Bundle, res.Version, pkg, filepath.Join(dir, file))
			fmt.Fprintf(o.Out, "  channel %s%s: %s\n", res.Channel.Channel, created, channelEdge(res.Channel))
			fmt.Fprintf(o.Out, "catalog valid: %d package(s), %d channel(s), %d bundle(s), hash %s\n", v.Packages, v.Channels, v.Bundles, v.Hash)
			return nil
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the channel to add the bundle to (required)")
	cmd.Flags().StringVar(&skipRange, "skip-range", "", `semver range of versions the new entry skips, e.g. ">=1.0.0 <1.2.0"`)
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

func newCatalogDeprecateCommand(o *options) *cobra.Command {
	var opts fbcedit.DeprecateOptions
	cmd := &cobra.Command{
		Use:   "deprecate DIR PACKAGE [--channel CHANNEL | --bundle VERSION] --message MESSAGE",
		Short: "Deprecate a package, a channel or a bundle in a catalog (olm.deprecations) (authors)",
		Long: `Write an entry of the olm.deprecations blob of PACKAGE in the file-based catalog DIR (the blob is
created when missing): the whole package, one channel (--channel) or one bundle (--bundle, a version
or a bundle name), with a message that tells users what to do instead. An entry for the same
reference gets the new message. Unknown channels and bundles are refused. Only the package's file
is rewritten, and the catalog is validated as catalogd validates it; on error nothing changes.`,
		Example: `  kubectl olmv1 catalog deprecate ./catalog my-operator --bundle 1.0.0 --message "1.0.0 loses data on upgrade; install 1.0.1"
  kubectl olmv1 catalog deprecate ./catalog my-operator --channel alpha --message "alpha is no longer updated; use stable"
  kubectl olmv1 catalog deprecate ./catalog my-operator --message "my-operator is end of life; use my-operator-ng"`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, pkg := args[0], args[1]
			file, cfg, err := loadPackageFile(cmd.Context(), dir, pkg)
			if err != nil {
				return err
			}
			res, err := fbcedit.Deprecate(cfg, pkg, opts)
			if err != nil {
				return err
			}
			if res.Action != "unchanged" {
				if _, err := writeValidated(cmd.Context(), dir, file, cfg); err != nil {
					return err
				}
			}
			if o.Output != "table" {
				return o.Print(res, nil)
			}
			what := "package " + pkg
			if res.Reference.Name != "" {
				what = fmt.Sprintf("%s %s of package %s", map[string]string{declcfg.SchemaChannel: "channel", declcfg.SchemaBundle: "bundle"}[res.Reference.Schema], res.Reference.Name, pkg)
			}
			switch res.Action {
			case "unchanged":
				fmt.Fprintf(o.Out, "%s is already deprecated with this message; nothing changed\n", what)
			case "updated":
				fmt.Fprintf(o.Out, "updated the deprecation message of %s in %s\n", what, filepath.Join(dir, file))
			default:
				fmt.Fprintf(o.Out, "deprecated %s in %s\n", what, filepath.Join(dir, file))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.Channel, "channel", "", "deprecate this channel")
	cmd.Flags().StringVar(&opts.Bundle, "bundle", "", "deprecate this bundle (a version or a bundle name)")
	cmd.Flags().StringVar(&opts.Message, "message", "", "what users should do instead (required)")
	_ = cmd.MarkFlagRequired("message")
	cmd.MarkFlagsMutuallyExclusive("channel", "bundle")
	return cmd
}

func newCatalogGraphCommand(o *options) *cobra.Command {
	var insecure bool
	cmd := &cobra.Command{
		Use:   "graph (DIR | IMAGE) PACKAGE",
		Short: "Draw a package's upgrade graph: channels, heads, edges, deprecations (authors)",
		Long: `Draw the upgrade graph of PACKAGE in a file-based catalog directory, or in a catalog image (its
/configs directory): every bundle, every upgrade edge of every channel (replaces, skips, and skipRange
expanded to the bundles of the same channel it covers), the default channel, the channel heads and
the olm.deprecations entries.

-o svg draws the graph itself (no Graphviz needed): one row per bundle, newest at the top, one lane
per channel. -o mermaid (the default) prints a 'graph LR' flowchart for Markdown, -o dot a Graphviz
digraph, -o json|yaml the graph's model.`,
		Example: `  kubectl olmv1 catalog graph ./catalog my-operator -o svg > my-operator.svg
  kubectl olmv1 catalog graph ./catalog my-operator -o mermaid
  kubectl olmv1 catalog graph quay.io/me/my-catalog:latest my-operator -o dot | dot -Tpng > graph.png`,
		Args: cobra.ExactArgs(2),
		// -o takes the graph formats here instead of table, yaml and json.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			switch o.Output {
			case "table":
				o.Output = "mermaid"
			case "svg", "mermaid", "dot", "json", "yaml":
			default:
				return fmt.Errorf("--output %q: use svg, mermaid, dot, json or yaml", o.Output)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadGraphPackage(cmd.Context(), args[0], args[1], insecure)
			if err != nil {
				return err
			}
			g, err := graph.Build(cfg, args[1])
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			switch o.Output {
			case "svg":
				return graph.WriteSVG(o.Out, g)
			case "dot":
				return graph.WriteDOT(o.Out, g)
			case "mermaid":
				return graph.WriteMermaid(o.Out, g)
			}
			return o.Print(g, nil)
		},
	}
	cmd.Flags().BoolVar(&insecure, "insecure", false, "use plain HTTP to pull the catalog image")
	return cmd
}

// loadGraphPackage reads the blobs of package pkg from src: a catalog directory, or else a catalog
// image whose catalog is under /configs.
func loadGraphPackage(ctx context.Context, src, pkg string, insecure bool) (*declcfg.DeclarativeConfig, error) {
	dir := src
	if st, err := os.Stat(src); err != nil || !st.IsDir() {
		if err == nil {
			return nil, fmt.Errorf("%s is a file: pass the catalog directory that holds it, or a catalog image", src)
		}
		pulled, remove, perr := pull.ToDir(ctx, src, insecure)
		if perr != nil {
			return nil, fmt.Errorf("%s is not a directory, and as a catalog image: %w", src, perr)
		}
		defer remove()
		dir = filepath.Join(pulled, filepath.FromSlash(imagebuild.CatalogConfigsDir))
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("catalog image %s has no %s directory (the catalog images catalogd serves keep their file-based catalog there)", src, imagebuild.CatalogConfigsDir)
		}
	}
	return loadPackageBlobs(ctx, dir, pkg)
}

// loadPackageBlobs reads the blobs of package pkg from every file of catalog directory dir.
func loadPackageBlobs(ctx context.Context, dir, pkg string) (*declcfg.DeclarativeConfig, error) {
	if err := checkAliases(dir); err != nil {
		return nil, err
	}
	var (
		mu    sync.Mutex
		metas []*declcfg.Meta
	)
	err := declcfg.WalkMetasFS(ctx, os.DirFS(dir), func(path string, m *declcfg.Meta, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(dir, path), err)
		}
		if (m.Schema == declcfg.SchemaPackage && m.Name == pkg) || (m.Schema != declcfg.SchemaPackage && m.Package == pkg) {
			mu.Lock()
			metas = append(metas, m)
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(metas) == 0 {
		return nil, fmt.Errorf("%s has no package %s (no blob names it; check the package name)", dir, pkg)
	}
	return declcfg.LoadSlice(metas)
}
