package cli

import (
	"fmt"

	"github.com/dplp/dplp/internal/buildinfo"
	"github.com/spf13/cobra"
)

func newVersionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version [--json]",
		Short: "Print the module version, VCS revision and commit time of this binary",
		Long: `Prints what binary this is, from the build information the Go toolchain embeds:
module version, VCS revision (with +modified when the work tree had uncommitted
changes), commit time and Go version. Binaries built with go build or go install
inside a git checkout carry the revision; go run does not stamp it ("unknown").
dplp serve logs the same line at start and exports it as dplp_build_info.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in := buildinfo.Get()
			if asJSON {
				return printJSON(cmd.OutOrStdout(), in)
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), in.String())
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (module, version, revision, commit_time, modified, go_version)")
	return cmd
}
