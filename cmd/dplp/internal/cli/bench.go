package cli

import (
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/release"
	"github.com/dplp/dplp/score"
	"github.com/spf13/cobra"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the speed of scoring, sampling, serving and charging, and the host they run on",
	}
	cmd.AddCommand(newBenchScoreCmd(), newBenchSampleCmd(), newBenchServeCmd(), newBenchChargeCmd(), newBenchHostCmd())
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

// benchScorer loads the graph and marks of a bench command and prepares
// the scorer and the chosen queries (untimed set-up).
func benchScorer(cmd *cobra.Command, path string, pf *protFlags, qspec string, k score.Kind) (*score.Scorer, []int32, error) {
	g, prot, err := loadGraphMarks(cmd, path, pf, true)
	if err != nil {
		return nil, nil, err
	}
	queries, err := pickQueries(g, qspec)
	if err != nil {
		return nil, nil, err
	}
	sc, err := score.New(g, prot, k)
	return sc, queries, err
}

// startCPUProfile starts a CPU profile written to path (nothing when path
// is empty); stop ends it and closes the file.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func printBench(cmd *cobra.Command, asJSON bool, keys []string, vals map[string]any) error {
	if asJSON {
		return printJSON(cmd.OutOrStdout(), vals)
	}
	p := newPrinter(cmd.OutOrStdout(), formatTable)
	for _, k := range keys {
		if x, ok := vals[k].(float64); ok {
			p.row(k, fmt.Sprintf("%.6g", x))
			continue
		}
		p.row(k, fmt.Sprint(vals[k]))
	}
	return p.flush()
}

// benchScoreOptions holds the flag values of bench score and, after
// validate, the parsed score.
type benchScoreOptions struct {
	path, kind, qspec string
	rounds            int
	asJSON, baseline  bool
	pf                protFlags

	sk score.Kind
}

func newBenchScoreCmd() *cobra.Command {
	o := &benchScoreOptions{}
	cmd := &cobra.Command{
		Use:   "score --graph FILE --score S [--queries all|N] [--rounds N] [--baseline=false] [--json]",
		Short: "Time scoring of queries against all their candidates",
		Long: `Times the scoring of the chosen queries against all their candidates (every
non-neighbour, including those whose score is 0) with s, s_pub, Delta_s and
S_max, on all cores. Graph loading is not timed. Prints queries,
candidate_pairs, wedges, seconds, pairs_per_second and wedges_per_second.

Unless --baseline=false, the same run also measures, on the scorer's own CSR
and the same cores:
  bare_cn_seconds, bare_cn_wedges_per_second
      a bare common-neighbours wedge loop over the same queries (a dense
      counter, a first-touch list, counts read back and cleared; no result,
      no public count, no exclusion of u's neighbours);
  vs_bare_cn
      bare_cn_seconds / seconds: the scorer's speed as a fraction of the bare
      loop's on the same queries (1 = as fast, above 1 = faster); for CN, AA,
      RA and JC, which enumerate the same wedges, the ratio of the wedge rates
      (PA enumerates none: its wedges_per_second is 0);
  stream_reads_per_second, adjacency_bytes
      neighbour ids read per second by a sequential read of the whole
      adjacency (adjacency_bytes long; repeated for at least 0.2 s). Every
      wedge reads one neighbour id, so this is the rate the wedge loops would
      reach if reading neighbours were all they did. When the adjacency fits
      in the caches it is cache bandwidth, not main memory's;
  bandwidth_fraction, bare_cn_bandwidth_fraction
      wedges_per_second (resp. bare_cn_wedges_per_second) /
      stream_reads_per_second: the share of that sequential rate the wedge
      loop achieves; the rest is lost to random access (the scatter into the
      per-candidate accumulators and the jumps between neighbour lists).

Times are wall times, and on a shared machine they vary from run to run.
--rounds N repeats the measurement N times, alternating which of the scorer
and the bare loop goes first, and reports medians: of the times (rates are
computed from them) and, for vs_bare_cn, of the rounds' own ratios.
JSON: one object with these keys (the first five are those of earlier
versions) and rounds.`,
		Args: cobra.NoArgs,
		RunE: checked(o.validate, o.run),
	}
	o.register(cmd)
	return cmd
}

func (o *benchScoreOptions) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.path, "graph", "", "edge list file")
	f.StringVar(&o.kind, "score", "", "base score: cn, aa, ra, jc or pa")
	f.StringVar(&o.qspec, "queries", "all", "all, or the number of queries (the first N nodes with candidates)")
	f.IntVar(&o.rounds, "rounds", 1, "repeat the measurement this many times (>= 1) and report medians")
	f.BoolVar(&o.baseline, "baseline", true, "also time a bare CN wedge loop and a sequential read of the adjacency (about doubles the run)")
	f.BoolVar(&o.asJSON, "json", false, "print one JSON object")
	o.pf.register(cmd, "protect-seed")
}

func (o *benchScoreOptions) validate() error {
	if o.rounds < 1 {
		return fmt.Errorf("--rounds must be >= 1, got %d", o.rounds)
	}
	var err error
	o.sk, err = score.ParseKind(o.kind)
	return err
}

// benchMedian is the median of xs (not empty); it sorts xs.
func benchMedian(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

func (o *benchScoreOptions) run(cmd *cobra.Command) error {
	sc, queries, err := benchScorer(cmd, o.path, &o.pf, o.qspec, o.sk)
	if err != nil {
		return err
	}
	var t score.Throughput
	var secs, bareSecs, ratios, streams []float64
	var bareWedges, reads int64
	for r := range o.rounds {
		bare := func() {
			var sec float64
			bareWedges, sec = sc.BareCN(queries)
			bareSecs = append(bareSecs, sec)
		}
		if o.baseline && r%2 == 1 {
			bare()
		}
		if t, err = sc.Time(queries); err != nil {
			return err
		}
		secs = append(secs, t.Seconds)
		if o.baseline && r%2 == 0 {
			bare()
		}
		if o.baseline {
			ratios = append(ratios, bareSecs[r]/t.Seconds) // same wedges: the ratio of the rates
			var sec float64
			reads, sec = sc.StreamReads(0.2)
			streams = append(streams, sec)
		}
	}
	t.Seconds = benchMedian(secs)
	wps := float64(t.Wedges) / t.Seconds
	keys := []string{"queries", "candidate_pairs", "wedges", "seconds", "pairs_per_second", "wedges_per_second"}
	vals := map[string]any{"queries": t.Queries, "candidate_pairs": t.CandidatePairs, "wedges": t.Wedges, "seconds": t.Seconds,
		"pairs_per_second": float64(t.CandidatePairs) / t.Seconds, "wedges_per_second": wps}
	if o.baseline {
		bsec := benchMedian(bareSecs)
		bps, rps := float64(bareWedges)/bsec, float64(reads)/benchMedian(streams)
		keys = append(keys, "bare_cn_seconds", "bare_cn_wedges_per_second", "vs_bare_cn",
			"stream_reads_per_second", "adjacency_bytes", "bandwidth_fraction", "bare_cn_bandwidth_fraction")
		vals["bare_cn_seconds"] = bsec
		vals["bare_cn_wedges_per_second"] = bps
		vals["vs_bare_cn"] = benchMedian(ratios)
		vals["stream_reads_per_second"] = rps
		vals["adjacency_bytes"] = 4 * len(sc.Graph().Adj)
		vals["bandwidth_fraction"] = wps / rps
		vals["bare_cn_bandwidth_fraction"] = bps / rps
	}
	keys = append(keys, "rounds")
	vals["rounds"] = o.rounds
	return printBench(cmd, o.asJSON, keys, vals)
}

// benchSampleOptions holds the flag values of bench sample and, after
// validate, the parsed score and calibration.
type benchSampleOptions struct {
	path, kind, method, qspec string
	sampler, modelPath        string
	cpuProfile                string
	k                         int
	eps                       float64
	seed                      uint64
	asJSON, crypto            bool
	pf                        protFlags

	sk    score.Kind
	cfg   calib.Config
	model *model.Model
}

func newBenchSampleCmd() *cobra.Command {
	o := &benchSampleOptions{}
	cmd := &cobra.Command{
		Use:   "sample --graph FILE --score S [--k 30] [--eps 0.1] [--json]",
		Short: "Time private top-K release for all queries against all their candidates",
		Long: `Times the whole release pipeline for the chosen queries on all cores: scoring
every candidate (non-neighbour), calibrating to Delta_s(u), building utilities
and sampling a top-K list with the chosen mechanism (default: exponential
mechanism as Gumbel top-K, with the zero-score candidates handled as one block).
Graph loading is not timed. Prints queries, candidates, seconds and
candidates_per_second (JSON keys exactly these). Seeded (--seed): a benchmark,
not a deployment. --crypto draws the noise as a deployment does (crypto-seeded,
the path of dplp recommend and dplp serve without a seed, which reads the
candidates in place on large graphs); the lists are still discarded.

--model FILE times a trained model's release path instead of a --method (the
model's score; --score may be omitted): with a dplp-list model, one Laplace
release of the private evidence per list and the fitted combination, which is
how a list-level release compares with a per-pick one in the same run.`,
		Args: cobra.NoArgs,
		RunE: checked(o.validate, o.run),
	}
	o.register(cmd)
	return cmd
}

func (o *benchSampleOptions) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.path, "graph", "", "edge list file")
	f.StringVar(&o.kind, "score", "", "base score: cn, aa, ra, jc or pa")
	f.StringVar(&o.method, "method", "exponential", "mechanism: exponential, laplace, laplace-peeling, staircase, nonprivate, public-only")
	f.IntVar(&o.k, "k", 30, "list length K (>= 1)")
	f.Float64Var(&o.eps, "eps", 0.1, "eps_p per pick (> 0)")
	f.StringVar(&o.qspec, "queries", "all", "all, or the number of queries")
	f.StringVar(&o.sampler, "sampler", "float", "float (Gumbel keys) or exact (base-2 mechanism, integer arithmetic; exponential only)")
	f.Uint64Var(&o.seed, "seed", 1, "noise seed")
	f.BoolVar(&o.crypto, "crypto", false, "crypto-seeded noise, the deployment path (instead of --seed; the lists are discarded)")
	f.BoolVar(&o.asJSON, "json", false, "print one JSON object")
	f.StringVar(&o.modelPath, "model", "", "time this trained model's release path (triad scores) instead of --method")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the timed release (go tool pprof) to this file")
	o.pf.register(cmd, "protect-seed")
}

func (o *benchSampleOptions) validate() error {
	if o.modelPath != "" {
		m, err := model.Load(o.modelPath)
		if err != nil {
			return err
		}
		if o.kind != "" && !strings.EqualFold(o.kind, m.Score) {
			return fmt.Errorf("--score %s differs from the model's score %s (%s)", o.kind, m.Score, o.modelPath)
		}
		o.kind, o.model = m.Score, m
	}
	sk, err := score.ParseKind(o.kind)
	if err != nil {
		return err
	}
	m, err := calib.ParseMethod(o.method)
	if err != nil {
		return err
	}
	if o.k < 1 {
		return fmt.Errorf("--k must be >= 1, got %d", o.k)
	}
	if err := checkEps("eps", o.eps, o.k); err != nil {
		return err
	}
	o.sk, o.cfg = sk, calib.Config{Method: m, Kind: sk, Eps: o.eps}
	return o.cfg.Validate()
}

func (o *benchSampleOptions) run(cmd *cobra.Command) error {
	if o.crypto && cmd.Flags().Changed("seed") {
		return fmt.Errorf("--crypto and --seed exclude each other (crypto-seeded noise has no seed)")
	}
	sc, queries, err := benchScorer(cmd, o.path, &o.pf, o.qspec, o.sk)
	if err != nil {
		return err
	}
	ropts := []release.Option{release.WithScorer(sc)}
	noise := randx.Source{Seeded: true, Seed: o.seed}
	if o.crypto {
		noise = randx.Source{}
		ropts = append(ropts, release.WithoutLedger()) // the lists are discarded: nothing is released
	} else {
		ropts = append(ropts, release.WithSeed(o.seed))
	}
	switch o.sampler {
	case "float":
	case "exact":
		ropts = append(ropts, release.WithExactSampler())
	default:
		return fmt.Errorf("--sampler must be float or exact, got %q", o.sampler)
	}
	var rec *release.Recommender
	if o.model != nil {
		rec, err = release.New(o.model, sc.Graph(), sc.Protection(), ropts...)
	} else {
		rec, err = release.NewMechanism(o.cfg, fmt.Sprintf("bench:%s:%s:eps=%g", o.cfg.Method, o.sk, o.eps), sc.Graph(), sc.Protection(), ropts...)
	}
	if err != nil {
		return err
	}
	stop, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		return err
	}
	defer stop()
	fmt.Fprintf(cmd.ErrOrStderr(), "noise: %s (per-user streams; no ledger: a benchmark, nothing is released)\n", noise)
	start := time.Now()
	var total int64
	err = rec.Stream(cmd.Context(), queries, o.k, func(_ int, r release.Result) error {
		total += int64(r.Candidates)
		return nil
	})
	secs := time.Since(start).Seconds()
	if err != nil {
		return err
	}
	return printBench(cmd, o.asJSON, []string{"queries", "candidates", "seconds", "candidates_per_second"},
		map[string]any{"queries": len(queries), "candidates": total, "seconds": secs, "candidates_per_second": float64(total) / secs})
}
