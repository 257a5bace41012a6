// Package cli implements kubectl-olmv1, the kubectl plugin for OLM v1 users and operator authors.
//
// Author commands (package author) work on local directories and registries (no cluster, no
// container engine): bundle validate|push|render|generate|test, catalog
// init|add-bundle|render|validate|push|promote|deprecate|graph. User commands (this package) talk to the
// cluster of the current kubeconfig: catalog add|list|pause|resume, search, install, status, approve,
// upgrade, pause, resume, uninstall. install --dry-run and upgrade --preview print what would change
// and change nothing (package preview computes the plan; output prints tables, YAML and JSON).
//
// Validation runs the controllers' own code: catalogd/pkg/fbcvalidate (catalogd's catalog
// validation) and rukpak/pkg/bundlevalidate (rukpak's bundle conversion plus operator-framework/api's
// validators). Images are built and pushed with rukpak/pkg/imagebuild.
package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/olmv1/olmv1/operator-controller/internal/cli/author"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/command"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/migrate"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/output"
)

// Streams are where a command reads and writes.
type Streams = command.Streams

// IsSilent reports whether err was already explained to the user: main exits non-zero without
// printing it again.
func IsSilent(err error) bool { return command.IsSilent(err) }

// options are the shared options, with the methods of the commands of this package.
type options struct{ *command.Options }

// NewRootCommand returns the kubectl-olmv1 command tree.
func NewRootCommand(streams Streams) *cobra.Command {
	return newRootCommand(&options{&command.Options{Streams: streams, PollInterval: 500 * time.Millisecond}})
}

func newRootCommand(o *options) *cobra.Command {
	streams := o.Streams
	root := &cobra.Command{
		Use:   "kubectl-olmv1",
		Short: "Install operators with OLM v1, and validate, build and publish bundles and catalogs",
		Long: `kubectl olmv1 is the command line of OLM v1.

Cluster users add catalogs, search them, and install, watch, upgrade, approve, pause, resume and
uninstall operators (and pause and resume catalogs); install --dry-run and upgrade --preview show
what would change first.
Operator authors validate bundles with the code rukpak runs, maintain file-based catalogs whose
upgrade edges are computed for them, and build and push bundle and catalog images without a
container engine (registry credentials come from the docker config file).`,
		Example: `  # Publish a bundle and a catalog (no Docker needed)
  kubectl olmv1 bundle validate ./bundle
  kubectl olmv1 bundle push ./bundle quay.io/me/my-operator-bundle:v1.2.0
  kubectl olmv1 catalog add-bundle ./catalog ./bundle --image quay.io/me/my-operator-bundle:v1.2.0
  kubectl olmv1 catalog push ./catalog quay.io/me/my-catalog:latest

  # Install from it
  kubectl olmv1 catalog add my-catalog quay.io/me/my-catalog:latest --poll 10m
  kubectl olmv1 search my-operator
  kubectl olmv1 install my-operator --version ">=1.0.0 <2.0.0" --wait`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// kubectl runs the plugin as `kubectl olmv1`; usage lines say so.
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl olmv1"},
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	pf := root.PersistentFlags()
	pf.StringVarP(&o.Output, "output", "o", "table", "output format: table, yaml or json")
	pf.StringVar(&o.Kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	pf.StringVar(&o.Context, "context", "", "the kubeconfig context to use")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return output.Check(o.Output) }

	bundle := &cobra.Command{Use: "bundle", Short: "Validate and publish operator bundles (authors)"}
	bundle.AddCommand(author.BundleCommands(o.Options)...)

	catalog := &cobra.Command{Use: "catalog", Short: "Build, validate and publish file-based catalogs (authors); add, list, pause and resume Catalogs on the cluster (users)"}
	catalog.AddCommand(author.CatalogCommands(o.Options)...)
	catalog.AddCommand(newCatalogAddCommand(o), newCatalogListCommand(o),
		newPauseCommand(o, pausableCatalog, true), newPauseCommand(o, pausableCatalog, false))

	root.AddCommand(bundle, catalog, newSearchCommand(o), newInstallCommand(o), newStatusCommand(o),
		newApproveCommand(o), newUpgradeCommand(o), newUninstallCommand(o),
		newPauseCommand(o, pausableOperator, true), newPauseCommand(o, pausableOperator, false))
	root.AddCommand(migrate.NewCommand(o.Options))
	return root
}

// Execute runs the command tree with args and returns the error to exit with.
func Execute(ctx context.Context, streams Streams, args []string) error {
	root := NewRootCommand(streams)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}
