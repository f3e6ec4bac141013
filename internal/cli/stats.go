package cli

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func newStatsCmd() *cobra.Command {
	var path string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats --graph FILE [--json]",
		Short: "Print graph statistics",
		Long: `Reads an edge list as an undirected simple graph and prints nodes, edges,
duplicates_merged, self_loops_dropped, max_degree, mean_degree, triangles and
transitivity (3 x triangles / connected triples). With --json the output is one
JSON object with exactly those keys.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			g, rep, err := loadGraph(cmd, path)
			if err != nil {
				return err
			}
			s := g.Summary(rep.BuildStats)
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				return enc.Encode(s)
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintf(tw, "nodes\t%d\n", s.Nodes)
			fmt.Fprintf(tw, "edges\t%d\n", s.Edges)
			fmt.Fprintf(tw, "duplicates_merged\t%d\n", s.DuplicatesMerged)
			fmt.Fprintf(tw, "self_loops_dropped\t%d\n", s.SelfLoopsDropped)
			fmt.Fprintf(tw, "max_degree\t%d\n", s.MaxDegree)
			fmt.Fprintf(tw, "mean_degree\t%.4f\n", s.MeanDegree)
			fmt.Fprintf(tw, "triangles\t%d\n", s.Triangles)
			fmt.Fprintf(tw, "transitivity\t%.4f\n", s.Transitivity)
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&path, "graph", "", "edge list file (whitespace or comma separated; .gz/.zst ok)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}
