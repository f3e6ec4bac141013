package cli

import (
	"fmt"
	"strconv"

	"github.com/dplp/dplp/graph"
	"github.com/spf13/cobra"
)

// statsOptions holds the flag values of the stats command.
type statsOptions struct {
	path   string
	asJSON bool
}

func newStatsCmd() *cobra.Command {
	o := &statsOptions{}
	cmd := &cobra.Command{
		Use:   "stats --graph FILE [--json]",
		Short: "Print graph statistics",
		Long: `Reads an edge list as an undirected simple graph and prints nodes, edges,
duplicates_merged, self_loops_dropped, max_degree, mean_degree, triangles and
transitivity (3 x triangles / connected triples). With --json the output is one
JSON object with exactly those keys.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	cmd.Flags().StringVar(&o.path, "graph", "", "edge list file (whitespace or comma separated; .gz/.zst ok)")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print one JSON object")
	return cmd
}

func (o *statsOptions) run(cmd *cobra.Command) error {
	g, rep, err := loadGraph(cmd, o.path)
	if err != nil {
		return err
	}
	s := g.Summary(rep.BuildStats)
	if o.asJSON {
		return printJSON(cmd.OutOrStdout(), s)
	}
	return printStats(newPrinter(cmd.OutOrStdout(), formatTable), s)
}

// printStats prints the statistics as a two-column table.
func printStats(p *printer, s graph.Stats) error {
	d := func(x int64) string { return strconv.FormatInt(x, 10) }
	f := func(x float64) string { return fmt.Sprintf("%.4f", x) }
	p.row("nodes", d(int64(s.Nodes)))
	p.row("edges", d(s.Edges))
	p.row("duplicates_merged", d(s.DuplicatesMerged))
	p.row("self_loops_dropped", d(s.SelfLoopsDropped))
	p.row("max_degree", d(int64(s.MaxDegree)))
	p.row("mean_degree", f(s.MeanDegree))
	p.row("triangles", d(s.Triangles))
	p.row("transitivity", f(s.Transitivity))
	return p.flush()
}
