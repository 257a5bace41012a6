package author

import (
	"fmt"
	"os"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/olmv1/olmv1/catalogd/pkg/fbcvalidate"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/command"
	"github.com/olmv1/olmv1/operator-controller/internal/cli/output"
)

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
					return &command.SilentError{Err: err}
				}
				return err
			}
			return o.Print(res, func() *output.Table {
				t := output.NewTable("CATALOG", "VALID", "PACKAGES", "CHANNELS", "BUNDLES", "HASH")
				t.Add(args[0], "true", fmt.Sprint(res.Packages), fmt.Sprint(res.Channels), fmt.Sprint(res.Bundles), res.Hash)
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
