package author

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/olmv1/olmv1/catalogd/pkg/fbcvalidate"
	"github.com/olmv1/olmv1/rukpak/pkg/imagebuild"
)

func newCatalogPushCommand(o *options) *cobra.Command {
	var insecure bool
	var signKey string
	cmd := &cobra.Command{
		Use:   "push DIR IMAGE",
		Short: "Validate a file-based catalog, build its image (content under /configs) and push it (authors)",
		Long: `Validate DIR as catalogd does, build the catalog image (DIR's content under /configs, with the
operators.operatorframework.io.index.configs.v1=/configs label) and push it. Registry credentials come
from the docker config file. Prints the pushed digest reference. With --sign-key the pushed digest is
then signed, in cosign's format, for Catalogs with spec.source.image.verify.`,
		Example: `  kubectl olmv1 catalog push ./catalog quay.io/me/my-catalog:latest
  kubectl olmv1 catalog push ./catalog localhost:5000/my-catalog:latest --insecure
  kubectl olmv1 catalog push ./catalog quay.io/me/my-catalog:latest --sign-key signing.key`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			key, err := readSignKey(signKey)
			if err != nil {
				return err
			}
			if _, err := fbcvalidate.Validate(cmd.Context(), os.DirFS(args[0])); err != nil {
				return fmt.Errorf("catalog %s is invalid, not pushed: %w", args[0], err)
			}
			img, err := imagebuild.CatalogImage(args[0])
			if err != nil {
				return err
			}
			return o.push(cmd, img, args[1], insecure, key, "catalog")
		},
	}
	cmd.Flags().BoolVar(&insecure, "insecure", false, "use plain HTTP to talk to the registry")
	cmd.Flags().StringVar(&signKey, "sign-key", "", signKeyUsage)
	return cmd
}
