package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/dplp/dplp/snapshot"
	"github.com/spf13/cobra"
)

func newConvertCmd() *cobra.Command {
	var path, out string
	var pf protFlags
	cmd := &cobra.Command{
		Use:   "convert --graph FILE [--protected FILE | --sigma X ...] --out G.dplpg",
		Short: "Write a graph and its protection marks as a binary snapshot",
		Long: `Reads a graph (an edge list, or a snapshot) and writes a binary snapshot: the
graph's CSR arrays, its labels, what building it merged and dropped, and, when
given, protection marks (--protected FILE, or synthetic with --sigma; without
either, the marks stored in an input snapshot are kept). Every command that
takes --graph accepts the snapshot (recognised by its magic bytes, whatever its
name) and loads it in one read; when no --protected or --sigma is given, the
stored marks are used. Synthetic marks (--sigma) are recorded as synthetic in
the file, and deployment commands (recommend, serve) refuse them as they refuse
--sigma. The node universe (--nodes, and every label of --protected) is kept:
users without edges are nodes of the snapshot. The file is versioned and checksummed (CRC-32C); a
corrupted, truncated or other-version file is an error. The output is
replaced atomically.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return fmt.Errorf("--out FILE is required")
			}
			if path != "" {
				if a, b := filepath.Clean(path), filepath.Clean(out); a == b {
					return fmt.Errorf("--out must differ from --graph")
				}
			}
			if st, err := os.Stat(out); err == nil && !st.Mode().IsRegular() {
				return fmt.Errorf("--out %s exists and is not a regular file", out)
			}
			d, err := loadData(cmd, path, &pf)
			if err != nil {
				return err
			}
			g := d.Graph
			marks, err := pf.loadOptional(cmd, d)
			if err != nil {
				return err
			}
			snap := &snapshot.Snapshot{Graph: g, Marks: marks, Build: d.Report.BuildStats, SyntheticMarks: marks != nil && pf.synthetic(d)}
			if err := snapshot.WriteFile(out, snap); err != nil {
				return fmt.Errorf("writing %s: %w", out, err)
			}
			var size int64
			if st, err := os.Stat(out); err == nil {
				size = st.Size()
			}
			what := "no protection marks"
			if marks != nil {
				what = fmt.Sprintf("%d protected pairs", marks.Len())
				if snap.SyntheticMarks {
					what += " (synthetic: recorded as such; recommend and serve refuse them)"
				}
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s: %d nodes, %d edges, %s (%d bytes)\n", out, g.N(), g.M(), what, size)
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "graph", "", "edge list file (whitespace or comma separated; .gz/.zst ok) or snapshot")
	cmd.Flags().StringVar(&out, "out", "", "snapshot file to write (conventionally .dplpg)")
	pf.register(cmd, "protect-seed")
	return cmd
}
