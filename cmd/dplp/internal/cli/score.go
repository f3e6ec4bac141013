package cli

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/internal/progress"
	"github.com/dplp/dplp/score"
	"github.com/spf13/cobra"
)

// queryFlags select query nodes by label or all of them.
type queryFlags struct {
	labels []string
	all    bool
}

func (q *queryFlags) register(cmd *cobra.Command, name string) {
	cmd.Flags().StringSliceVar(&q.labels, name, nil, "query node label (repeatable, or comma separated)")
	cmd.Flags().BoolVar(&q.all, "all", false, "every node with at least one candidate")
}

// resolve returns the selected query nodes: the labels given, in their
// order, or with --all every node with a candidate, in node order or, with
// byLabel, in label order (see graph.Graph.ByLabel).
func (q *queryFlags) resolve(g *graph.Graph, name string, byLabel bool) ([]int32, error) {
	switch {
	case q.all && len(q.labels) > 0:
		return nil, fmt.Errorf("give either --%s or --all, not both", name)
	case q.all:
		var out []int32
		if byLabel {
			out = g.ByLabel()
		} else {
			out = make([]int32, g.N())
			for u := range out {
				out[u] = int32(u)
			}
		}
		return slices.DeleteFunc(out, func(u int32) bool { return g.Degree(u) >= g.N()-1 }), nil
	case len(q.labels) == 0:
		return nil, fmt.Errorf("give --%s LABEL (repeatable) or --all", name)
	}
	seen := make(map[int32]bool)
	out := make([]int32, 0, len(q.labels))
	for _, l := range q.labels {
		id, ok := g.ID(l)
		if !ok {
			return nil, fmt.Errorf("--%s %q: no such node in the graph", name, l)
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out, nil
}

// scoreOptions holds the flag values of the score command.
type scoreOptions struct {
	path, kind, format string
	top                int
	qf                 queryFlags
	pf                 protFlags
	predf              predFlags
}

func newScoreCmd() *cobra.Command {
	o := &scoreOptions{}
	cmd := &cobra.Command{
		Use:   "score --graph FILE --score S (--query LABEL ... | --all) [flags]",
		Short: "Score queries against all their candidates (non-private)",
		Long: `For each query node, scores every candidate (non-neighbour) with the chosen
base score and prints the top-N by score, with s, the zero-sensitivity public
score s_pub (privacy-model §10) and the query's sensitivity Delta_s and score
bound S_max (privacy-model §4). Protection marks (--protected or --sigma) matter
for s_pub and Delta_s; without them nothing is protected. Embedding scores
(node2vec, deepwalk, line, gcn, prune, struc2vec) train the embedding and a
logistic link classifier on the graph; file:PATH reads "u,v,score" lines with
scores in [--lo, --hi]. Such scores lie in a known range, so Delta_s = S_max =
hi - lo, and they have no public part (s_pub = 0).
Columns: query, rank, candidate, s, s_pub, delta_s, s_max.`,
		Args: cobra.NoArgs,
		RunE: checked(o.validate, o.run),
	}
	o.register(cmd)
	return cmd
}

func (o *scoreOptions) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.path, "graph", "", "edge list file")
	f.StringVar(&o.kind, "score", "", "base score: cn, aa, ra, jc, pa, node2vec, deepwalk, line, gcn, prune, struc2vec or file:PATH")
	f.IntVar(&o.top, "top", 10, "candidates printed per query (>= 1)")
	f.StringVar(&o.format, "format", "csv", "output format: csv or jsonl")
	o.qf.register(cmd, "query")
	o.pf.register(cmd, "seed")
	o.predf.register(cmd)
}

func (o *scoreOptions) validate() error {
	if o.top < 1 {
		return fmt.Errorf("--top must be >= 1, got %d", o.top)
	}
	if o.format != formatCSV && o.format != formatJSONL {
		return fmt.Errorf("--format must be csv or jsonl, got %q", o.format)
	}
	return nil
}

func (o *scoreOptions) run(cmd *cobra.Command) error {
	g, prot, err := loadGraphMarks(cmd, o.path, &o.pf, true)
	if err != nil {
		return err
	}
	queries, err := o.qf.resolve(g, "query", false)
	if err != nil {
		return err
	}
	sc, err := o.predf.fit(cmdContext(cmd), o.kind, g, prot)
	if err != nil {
		return err
	}
	bar := progress.New(int64(len(queries)), "scoring")
	tops, err := sc.TopCandidatesAll(queries, o.top, func() { bar.Add(1) })
	bar.Finish()
	if err != nil {
		return err
	}
	return writeScores(newPrinter(cmd.OutOrStdout(), o.format), g, sc.Name(), tops)
}

// scoreCand and scoreLine are the JSON lines of score --format jsonl.
type scoreCand struct {
	Candidate string  `json:"candidate"`
	S         float64 `json:"s"`
	SPub      float64 `json:"s_pub"`
}

type scoreLine struct {
	Query      string      `json:"query"`
	Score      string      `json:"score"`
	DeltaS     float64     `json:"delta_s"`
	SMax       float64     `json:"s_max"`
	Candidates int         `json:"candidates"`
	Top        []scoreCand `json:"top"`
}

// writeScores prints each query's top candidates: a CSV row per candidate,
// or a JSON line per query.
func writeScores(p *printer, g *graph.Graph, name string, tops []score.Top) error {
	ff := func(x float64) string { return strconv.FormatFloat(x, 'g', 10, 64) }
	if p.format == formatCSV {
		p.row("query", "rank", "candidate", "s", "s_pub", "delta_s", "s_max")
	}
	for _, q := range tops {
		if p.format == formatCSV {
			for i, c := range q.Best {
				p.row(g.Label(q.U), strconv.Itoa(i+1), g.Label(c.V), ff(c.S), ff(c.Pub), ff(q.DeltaS), ff(q.SMax))
			}
			continue
		}
		l := scoreLine{Query: g.Label(q.U), Score: name, DeltaS: q.DeltaS, SMax: q.SMax, Candidates: q.Candidates}
		for _, c := range q.Best {
			l.Top = append(l.Top, scoreCand{g.Label(c.V), c.S, c.Pub})
		}
		if err := p.value(l); err != nil {
			return err
		}
	}
	return p.flush()
}
