package author

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/olmv1/olmv1/operator-controller/internal/cli/bundlegen"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/command"
)

// newBundleGenerateCommand is `bundle generate`: a registry+v1 bundle from plain manifests.
func newBundleGenerateCommand(o *options) *cobra.Command {
	var (
		opts              bundlegen.Options
		icon, output, chk string
	)
	cmd := &cobra.Command{
		Use:   "generate DIR",
		Short: "Generate a registry+v1 bundle (CSV, CRDs, annotations) from plain manifests or a kustomize overlay",
		Long: `Generate a registry+v1 bundle from the manifests an operator's build produces: DIR is a
directory of YAML files, or a kustomize overlay (built in-process and offline when DIR holds a
kustomization.yaml).

The ClusterServiceVersion is written from the manifests: Deployments become its install strategy;
Roles and ClusterRoles bound to the manifests' ServiceAccounts become permissions (RoleBindings) and
clusterPermissions (ClusterRoleBindings); CRDs are owned (every served version), and custom
resources of them become the alm-examples annotation; webhook configurations and CRD conversion
webhooks served by a Service that selects a Deployment become webhookdefinitions; every container
image is a relatedImage. Other objects are copied into manifests/ when registry+v1 supports their
kind, and refused otherwise. Warnings (bindings to other subjects, dropped Namespaces ...) go to stderr.

The output is deterministic, so the bundle can be committed and checked in CI with --check DIR,
which writes nothing, prints a diff and exits 1 when the committed bundle differs. Rendering the
bundle (kubectl olmv1 bundle render) gives back the input's Deployments and RBAC.`,
		Example: `  kubectl olmv1 bundle generate ./config/manifests --package my-operator --version 1.2.0 --channels stable --output ./bundle
  kubectl olmv1 bundle generate ./config/default --package my-operator --version 1.2.0 --channels stable,candidate \
      --default-channel stable --icon logo.svg --install-modes OwnNamespace --requires-gvk cert-manager.io/v1/Certificate \
      --requires-package etcd:'>=0.9.0 <1.0.0' --output ./bundle
  kubectl olmv1 bundle generate ./config/default --package my-operator --version 1.2.0 --channels stable --check ./bundle`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if icon != "" {
				data, err := os.ReadFile(icon)
				if err != nil {
					return fmt.Errorf("--icon: %w", err)
				}
				opts.Icon = data
			}
			res, err := bundlegen.Generate(args[0], opts)
			if err != nil {
				return err
			}
			for _, w := range res.Warnings {
				fmt.Fprintln(o.ErrOut, "warning:", w)
			}
			if chk != "" {
				equal, err := res.Check(chk, o.Out)
				if err != nil {
					return err
				}
				if !equal {
					return &command.SilentError{Err: fmt.Errorf("the bundle in %s is not what generate writes", chk)}
				}
				fmt.Fprintf(o.ErrOut, "%s is up to date\n", chk)
				return nil
			}
			removed, err := res.Write(output)
			for _, p := range removed {
				fmt.Fprintf(o.ErrOut, "removed %s\n", p)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(o.ErrOut, "wrote %d files to %s\n", len(res.Files), output)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Package, "package", "", "the package name (required)")
	f.StringVar(&opts.Version, "version", "", "the bundle's semantic version (required); the CSV is named <package>.v<version>")
	f.StringSliceVar(&opts.Channels, "channels", nil, "the channels of the bundle, comma-separated (required)")
	f.StringVar(&opts.DefaultChannel, "default-channel", "", "the package's default channel, one of --channels (default: the only channel)")
	f.StringVar(&icon, "icon", "", "an SVG, PNG, JPEG or GIF file for the CSV's icon")
	f.StringSliceVar(&opts.InstallModes, "install-modes", bundlegen.DefaultInstallModes, "the supported install modes: AllNamespaces, OwnNamespace, SingleNamespace, MultiNamespace")
	f.StringVar(&opts.MinKubeVersion, "min-kube-version", "", "the CSV's minKubeVersion, e.g. 1.27.0")
	f.StringArrayVar(&opts.RequiresGVK, "requires-gvk", nil, "an API another bundle must provide, group/version/Kind (repeatable); written to metadata/dependencies.yaml")
	f.StringArrayVar(&opts.RequiresPackage, "requires-package", nil, "a package that must be installed, name:range, e.g. etcd:'>=0.9.0 <1.0.0' (repeatable); written to metadata/dependencies.yaml")
	f.StringVar(&output, "output", "bundle", "the directory to write the bundle to; stale files of its manifests/ and metadata/ are removed")
	f.StringVar(&chk, "check", "", "write nothing: compare with the bundle committed in this directory, print a diff and exit 1 when it differs")
	return cmd
}
