package cli

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/score"
	"github.com/spf13/cobra"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the speed of scoring and sampling",
	}
	cmd.AddCommand(newBenchScoreCmd())
	return cmd
}

// pickQueries resolves --queries all|N: all nodes with a candidate, or the
// first N of them in id order.
func pickQueries(g *graph.Graph, spec string) ([]int32, error) {
	var all []int32
	for u := 0; u < g.N(); u++ {
		if g.Degree(int32(u)) < g.N()-1 {
			all = append(all, int32(u))
		}
	}
	if spec == "all" {
		return all, nil
	}
	n, err := strconv.Atoi(spec)
	if err != nil || n < 1 {
		return nil, fmt.Errorf("--queries must be all or a whole number >= 1, got %q", spec)
	}
	return all[:min(n, len(all))], nil
}

func printBench(cmd *cobra.Command, asJSON bool, keys []string, vals map[string]any) error {
	out := cmd.OutOrStdout()
	if asJSON {
		return json.NewEncoder(out).Encode(vals)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	for _, k := range keys {
		if x, ok := vals[k].(float64); ok {
			fmt.Fprintf(tw, "%s\t%.6g\n", k, x)
			continue
		}
		fmt.Fprintf(tw, "%s\t%v\n", k, vals[k])
	}
	return tw.Flush()
}

func newBenchScoreCmd() *cobra.Command {
	var (
		path, kind, qspec string
		asJSON            bool
		pf                protFlags
	)
	cmd := &cobra.Command{
		Use:   "score --graph FILE --score S [--queries all|N] [--json]",
		Short: "Time scoring of queries against all their candidates",
		Long: `Times the scoring of the chosen queries against all their candidates (every
non-neighbour, including those whose score is 0) with s, s_pub, Delta_s and
S_max, on all cores. Graph loading is not timed. Prints queries,
candidate_pairs, wedges, seconds and pairs_per_second (JSON keys exactly these).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			k, err := score.ParseKind(kind)
			if err != nil {
				return err
			}
			g, _, err := loadGraph(cmd, path)
			if err != nil {
				return err
			}
			prot, err := pf.load(g, true)
			if err != nil {
				return err
			}
			queries, err := pickQueries(g, qspec)
			if err != nil {
				return err
			}
			sc, err := score.New(g, prot, k)
			if err != nil {
				return err
			}
			nw := runtime.GOMAXPROCS(0)
			pairs := make([]int64, nw*8) // padded per-worker counters
			wedges := make([]int64, nw*8)
			// Warm the worker pool (accumulator allocation is not scoring).
			if err := sc.Each(queries[:min(len(queries), nw)], func(int, *score.Result) {}); err != nil {
				return err
			}
			start := time.Now()
			err = sc.Each(queries, func(w int, r *score.Result) {
				pairs[w*8] += int64(r.NumCandidates())
				wedges[w*8] += r.Wedges
			})
			secs := time.Since(start).Seconds()
			if err != nil {
				return err
			}
			var tp, tw int64
			for i := 0; i < nw; i++ {
				tp += pairs[i*8]
				tw += wedges[i*8]
			}
			return printBench(cmd, asJSON, []string{"queries", "candidate_pairs", "wedges", "seconds", "pairs_per_second"},
				map[string]any{"queries": len(queries), "candidate_pairs": tp, "wedges": tw, "seconds": secs, "pairs_per_second": float64(tp) / secs})
		},
	}
	f := cmd.Flags()
	f.StringVar(&path, "graph", "", "edge list file")
	f.StringVar(&kind, "score", "", "base score: cn, aa, ra, jc or pa")
	f.StringVar(&qspec, "queries", "all", "all, or the number of queries (the first N nodes with candidates)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	pf.register(cmd, "protect-seed")
	return cmd
}
