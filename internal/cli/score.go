package cli

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"runtime"
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

func (q *queryFlags) resolve(g *graph.Graph, name string) ([]int32, error) {
	switch {
	case q.all && len(q.labels) > 0:
		return nil, fmt.Errorf("give either --%s or --all, not both", name)
	case q.all:
		out := make([]int32, 0, g.N())
		for u := 0; u < g.N(); u++ {
			if g.Degree(int32(u)) < g.N()-1 {
				out = append(out, int32(u))
			}
		}
		return out, nil
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

type scoredCand struct {
	v      int32
	s, pub float64
}

type queryTop struct {
	u            int32
	deltaS, sMax float64
	cands        int
	top          []scoredCand
}

// topCandidates picks the n best candidates of r by s (then s_pub, then id),
// filling from the zero block in id order when needed.
func topCandidates(w *score.Worker, r *score.Result, n int, idx []int, zero []int32) ([]scoredCand, []int, []int32) {
	idx = idx[:0]
	for i := range r.Cands {
		idx = append(idx, i)
	}
	slices.SortFunc(idx, func(a, b int) int {
		switch {
		case r.S[a] != r.S[b]:
			if r.S[a] > r.S[b] {
				return -1
			}
			return 1
		case r.Pub[a] != r.Pub[b]:
			if r.Pub[a] > r.Pub[b] {
				return -1
			}
			return 1
		}
		return int(r.Cands[a]) - int(r.Cands[b])
	})
	out := make([]scoredCand, 0, min(n, r.NumCandidates()))
	for _, i := range idx {
		if len(out) == n {
			return out, idx, zero
		}
		out = append(out, scoredCand{r.Cands[i], r.S[i], r.Pub[i]})
	}
	if len(out) < n && r.Zero > 0 {
		zero = w.ZeroCands(zero[:0])
		for _, v := range zero {
			if len(out) == n {
				break
			}
			out = append(out, scoredCand{v, 0, 0})
		}
	}
	return out, idx, zero
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd)
		},
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
	if o.format != "csv" && o.format != "jsonl" {
		return fmt.Errorf("--format must be csv or jsonl, got %q", o.format)
	}
	return nil
}

func (o *scoreOptions) run(cmd *cobra.Command) error {
	g, prot, err := loadGraphMarks(cmd, o.path, &o.pf, true)
	if err != nil {
		return err
	}
	queries, err := o.qf.resolve(g, "query")
	if err != nil {
		return err
	}
	sc, err := o.predf.fit(o.kind, g, prot)
	if err != nil {
		return err
	}
	results, err := scoreTops(sc, queries, o.top)
	if err != nil {
		return err
	}
	return writeScores(cmd, g, sc.Name(), o.format, results)
}

// scoreTops scores every query against all its candidates on all cores and
// keeps each query's top candidates, in query order.
func scoreTops(sc *score.Scorer, queries []int32, top int) ([]queryTop, error) {
	pos := make(map[int32]int, len(queries))
	for i, u := range queries {
		pos[u] = i
	}
	results := make([]queryTop, len(queries))
	bar := progress.New(int64(len(queries)), "scoring")
	type scratch struct {
		idx  []int
		zero []int32
	}
	scr := make([]scratch, runtime.GOMAXPROCS(0))
	err := sc.EachWorker(queries, func(worker int, w *score.Worker, r *score.Result) {
		s := &scr[worker]
		var t []scoredCand
		t, s.idx, s.zero = topCandidates(w, r, top, s.idx, s.zero)
		results[pos[r.U]] = queryTop{r.U, r.DeltaS, r.SMax, r.NumCandidates(), t}
		bar.Add(1)
	})
	bar.Finish()
	return results, err
}

func writeScores(cmd *cobra.Command, g *graph.Graph, name, format string, results []queryTop) error {
	bw := bufio.NewWriter(cmd.OutOrStdout())
	ff := func(x float64) string { return strconv.FormatFloat(x, 'g', 10, 64) }
	if format == "csv" {
		cw := csv.NewWriter(bw)
		cw.Write([]string{"query", "rank", "candidate", "s", "s_pub", "delta_s", "s_max"})
		for _, q := range results {
			for i, c := range q.top {
				cw.Write([]string{g.Label(q.u), strconv.Itoa(i + 1), g.Label(c.v), ff(c.s), ff(c.pub), ff(q.deltaS), ff(q.sMax)})
			}
		}
		cw.Flush()
		if err := cw.Error(); err != nil {
			return err
		}
		return bw.Flush()
	}
	enc := json.NewEncoder(bw)
	type cand struct {
		Candidate string  `json:"candidate"`
		S         float64 `json:"s"`
		SPub      float64 `json:"s_pub"`
	}
	type row struct {
		Query      string  `json:"query"`
		Score      string  `json:"score"`
		DeltaS     float64 `json:"delta_s"`
		SMax       float64 `json:"s_max"`
		Candidates int     `json:"candidates"`
		Top        []cand  `json:"top"`
	}
	for _, q := range results {
		r := row{Query: g.Label(q.u), Score: name, DeltaS: q.deltaS, SMax: q.sMax, Candidates: q.cands}
		for _, c := range q.top {
			r.Top = append(r.Top, cand{g.Label(c.v), c.s, c.pub})
		}
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return bw.Flush()
}
