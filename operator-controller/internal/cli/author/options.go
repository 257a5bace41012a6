// Package author holds kubectl-olmv1's commands for operator authors: they work on local
// directories and registries (no cluster, no container engine), except bundle test, which starts a
// cluster of its own: bundle validate|push|render|generate|test|verify and catalog
// init|add-bundle|render|validate|push|promote|deprecate|graph.
package author

import (
	"github.com/spf13/cobra"

	"github.com/olmv1/olmv1/operator-controller/internal/cli/command"
)

// options are the shared options, with the methods of the author commands.
type options struct{ *command.Options }

// BundleCommands are the subcommands of `bundle`.
func BundleCommands(shared *command.Options) []*cobra.Command {
	o := &options{shared}
	return []*cobra.Command{newBundleValidateCommand(o), newBundlePushCommand(o), newBundleRenderCommand(o),
		newBundleGenerateCommand(o), newBundleTestCommand(o), newBundleVerifyCommand(o)}
}

// CatalogCommands are the author subcommands of `catalog` (the user ones, add and list, talk to a
// cluster and live in package cli).
func CatalogCommands(shared *command.Options) []*cobra.Command {
	o := &options{shared}
	return append([]*cobra.Command{newCatalogInitCommand(o), newCatalogAddBundleCommand(o), newCatalogRenderCommand(o),
		newCatalogValidateCommand(o), newCatalogPushCommand(o)}, newCatalogAuthorCommands(o)...)
}
