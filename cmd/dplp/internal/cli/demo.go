package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/ledger"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/release"
	"github.com/dplp/dplp/research/evaluate"
	"github.com/dplp/dplp/research/gen"
	"github.com/dplp/dplp/research/protocol"
	"github.com/dplp/dplp/score"
	"github.com/spf13/cobra"
)

// demoMethod is one row of the demo's table.
type demoMethod struct {
	name    string // JSON key
	label   string
	cfg     calib.Config
	variant string // DPLP family: trained transform
}

// demoOptions holds the flag values of the demo command and, after validate,
// the parsed score.
type demoOptions struct {
	n, dim, k, epochs int
	meanDeg, sigma    float64
	eps               float64
	seed              uint64
	kind              string
	users             int
	asJSON            bool

	sk score.Kind
}

// demoResult is one method's figures in the demo.
type demoResult struct {
	AUC       float64 `json:"auc_at_k"`
	Precision float64 `json:"precision_at_k"`
	NDCG      float64 `json:"ndcg_at_k"`
	Guarantee string  `json:"guarantee"`
}

func newDemoCmd() *cobra.Command {
	o := &demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run DPLP and its baselines end to end on a synthetic graph",
		Long: `Generates a latent-space graph (paper Section 5) with protected pairs, holds
out 20% of each query's neighbours (removed from the graph) and 20% of its
non-neighbours as test pairs (clean protocol), trains DPLP's transform on the
public graph, and prints AUC@K (the paper's metric), P@K and NDCG@K for the
non-private base score, the public-only ranking, DPLP, DPLP-Lin, DPLP-pub, and
the exponential, Laplace and staircase baselines at eps_p and K, all with the
rigorous calibration; then a few users' private recommendations. Everything is
seeded (--seed) and reproducible; no files are needed. --json prints one object
{"seconds", "eps", "k", "methods": {NAME: {"auc_at_k", "precision_at_k", ...}}}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			start := time.Now()
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd, start)
		},
	}
	o.register(cmd)
	return cmd
}

func (o *demoOptions) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.IntVar(&o.n, "n", 2000, "nodes of the latent-space graph")
	f.IntVar(&o.dim, "dim", 2, "latent dimension")
	f.Float64Var(&o.meanDeg, "mean-degree", 20, "target mean degree")
	f.Float64Var(&o.sigma, "sigma", 0.3, "fraction of edges protected")
	f.Float64Var(&o.eps, "eps", 0.1, "eps_p per pick")
	f.IntVar(&o.k, "k", 30, "list length K")
	f.IntVar(&o.epochs, "epochs", 30, "maximum training epochs")
	f.StringVar(&o.kind, "score", "aa", "base score")
	f.IntVar(&o.users, "users", 3, "users whose private recommendations are printed")
	f.Uint64Var(&o.seed, "seed", 1, "seed of everything (the demo is an experiment)")
	f.BoolVar(&o.asJSON, "json", false, "print one JSON object")
}

func (o *demoOptions) validate() error {
	var err error
	if o.sk, err = score.ParseKind(o.kind); err != nil {
		return err
	}
	if err := checkEps("eps", o.eps, o.k); err != nil {
		return err
	}
	if err := checkFrac("sigma", o.sigma); err != nil {
		return err
	}
	if o.k < 1 || o.epochs < 1 || o.users < 0 {
		return fmt.Errorf("--k and --epochs must be >= 1 and --users >= 0")
	}
	return nil
}

// demoMethods lists the demo's rows for base score sk.
func demoMethods(sk score.Kind) []demoMethod {
	return []demoMethod{
		{"nonprivate", "non-private " + sk.String(), calib.Config{Method: calib.NonPrivate}, ""},
		{"public-only", "public-only " + sk.String(), calib.Config{Method: calib.PublicOnly}, ""},
		{"dplp", "DPLP", calib.Config{Method: calib.Exponential}, "dplp"},
		{"dplp-lin", "DPLP-Lin", calib.Config{Method: calib.Exponential}, "lin"},
		{"dplp-pub", "DPLP-pub", calib.Config{Method: calib.Exponential}, "dplp-pub"},
		{"exponential", "Exponential", calib.Config{Method: calib.Exponential}, ""},
		{"laplace", "Laplace", calib.Config{Method: calib.Laplace}, ""},
		{"staircase", "Staircase", calib.Config{Method: calib.Staircase}, ""},
	}
}

// split generates the seeded latent-space graph and its clean-protocol split.
func (o *demoOptions) split(errw io.Writer) (*gen.LatentGraph, *protocol.Split, error) {
	rad, err := gen.RadiusForMeanDegree(o.n, o.dim, o.meanDeg)
	if err != nil {
		return nil, nil, err
	}
	lg, err := gen.Latent(o.n, o.dim, rad, randx.Derive(o.seed, 1))
	if err != nil {
		return nil, nil, err
	}
	pc := protocol.DefaultConfig()
	pc.Sigma = o.sigma
	split, err := protocol.Build(lg.Graph, pc, randx.Derive(o.seed, 2))
	if err != nil {
		return nil, nil, err
	}
	if !o.asJSON {
		fmt.Fprintf(errw, "randomness: %s\n", randx.Source{Seeded: true, Seed: o.seed})
		fmt.Fprintf(errw, "latent-space graph: %d nodes, %d edges, dim %d; sigma %g of edges protected (%d pairs); %d queries\n",
			lg.N(), lg.M(), o.dim, o.sigma, split.Prot.Len(), len(split.Queries))
	}
	return lg, split, nil
}

func (o *demoOptions) run(cmd *cobra.Command, start time.Time) error {
	errw := cmd.ErrOrStderr()
	lg, split, err := o.split(errw)
	if err != nil {
		return err
	}
	methods := demoMethods(o.sk)
	results := map[string]demoResult{}
	var recModel calib.Transform
	for _, m := range methods {
		r, tr, err := o.evalMethod(m, split, errw)
		if err != nil {
			return err
		}
		if m.name == "dplp-pub" {
			recModel = tr
		}
		results[m.name] = r
	}
	secs := time.Since(start).Seconds()
	if o.asJSON {
		ms := map[string]demoResult{}
		for _, m := range methods {
			ms[m.name] = results[m.name]
		}
		return printJSON(cmd.OutOrStdout(), map[string]any{"seconds": secs, "eps": o.eps, "k": o.k, "sigma": o.sigma, "score": o.sk.String(), "seed": o.seed, "methods": ms})
	}
	out := cmd.OutOrStdout()
	if err := o.printTable(newPrinter(out, formatTable), lg.N(), len(split.Queries), methods, results); err != nil {
		return err
	}
	if o.users > 0 && recModel != nil {
		if err := demoRecommend(cmd, split, recModel, o.k, o.users, o.seed); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "run time %.1f s\n", time.Since(start).Seconds())
	return nil
}

// evalMethod trains m's transform if it has one and evaluates m on split; it
// returns the figures and the trained transform (nil without one).
func (o *demoOptions) evalMethod(m demoMethod, split *protocol.Split, errw io.Writer) (demoResult, calib.Transform, error) {
	m.cfg.Kind, m.cfg.Eps = o.sk, o.eps
	if m.variant != "" {
		t0 := time.Now()
		tr, sum, err := evaluate.TrainTransform(split, o.sk, m.variant, o.eps, evaluate.TrainOptions{Epochs: o.epochs}, o.seed)
		if err != nil {
			return demoResult{}, nil, err
		}
		if !o.asJSON {
			fmt.Fprintf(errw, "trained %s: %d queries, best epoch %d of %d, held-out AUC %.3f, %.1f s\n",
				m.label, sum.TrainQueries, sum.BestEpoch, sum.Epochs, sum.HeldOutAUC, time.Since(t0).Seconds())
		}
		m.cfg.Transform = tr
	}
	res, err := evaluate.Run(split, m.cfg, o.k, randx.Derive(o.seed, 3).Uint64())
	if err != nil {
		return demoResult{}, nil, err
	}
	gs := demoGuarantee(m.cfg, o.k, o.eps, res.EpsSpent)
	return demoResult{res.Mean.AUC, res.Mean.Precision, res.Mean.NDCG, gs}, m.cfg.Transform, nil
}

// demoGuarantee describes the privacy of one list of cfg at length k.
func demoGuarantee(cfg calib.Config, k int, eps, spent float64) string {
	g, proven := cfg.Guarantee(k)
	gs := fmt.Sprintf("%.4g-DP per list", g)
	switch {
	case math.IsInf(g, 1):
		gs = "none"
	case !proven:
		gs = fmt.Sprintf("none proven (K=1: %.4g-DP)", 2*eps)
	case spent < g-1e-9:
		// Lexicographic DPLP-pub: random picks only are charged.
		gs = fmt.Sprintf("<= %.4g-DP per list (mean %.2g charged)", g, spent)
	}
	return gs
}

// printTable prints the demo's heading and table of methods.
func (o *demoOptions) printTable(p *printer, nodes, queries int, methods []demoMethod, results map[string]demoResult) error {
	p.line("DPLP demo: %s on a %d-node latent-space graph, sigma %g, eps_p %g, K %d, rigorous calibration, clean protocol (%d test queries)",
		o.sk, nodes, o.sigma, o.eps, o.k, queries)
	k := fmt.Sprint(o.k)
	p.row("method", "AUC@"+k, "P@"+k, "NDCG@"+k, "privacy of one list")
	for _, m := range methods {
		r := results[m.name]
		p.row(m.label, fmt.Sprintf("%.3f", r.AUC), fmt.Sprintf("%.3f", r.Precision), fmt.Sprintf("%.3f", r.NDCG), r.Guarantee)
	}
	return p.flush()
}

// demoRecommend prints private top-K lists for a few users over all their
// candidates (deployment) with the DPLP-pub model, through the release path
// with an embedded SQLite ledger in a temporary directory (every list is
// charged before it is printed), marking held-out true edges with '*'.
func demoRecommend(cmd *cobra.Command, s *protocol.Split, tr calib.Transform, k, users int, seed uint64) error {
	m, ok := tr.(*model.Model)
	if !ok {
		return fmt.Errorf("demo: the DPLP-pub transform is not a compiled model")
	}
	o := cmd.OutOrStdout()
	dir, err := os.MkdirTemp("", "dplp-demo-ledger")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	st, err := ledger.Open(ctx, "sqlite:"+filepath.Join(dir, "ledger.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	rec, err := release.New(m, s.Test, s.Prot, release.WithStore(st), release.WithSeed(seed))
	if err != nil {
		return err
	}
	step := max(1, len(s.Queries)/users)
	var qis []int
	var ids []int32
	for i := 0; i < users && i*step < len(s.Queries); i++ {
		qis = append(qis, i*step)
		ids = append(ids, s.Queries[i*step])
	}
	show := min(k, 10)
	fmt.Fprintf(o, "private recommendations (DPLP-pub, all non-neighbours as candidates, charged to an embedded SQLite ledger before printing; first %d of %d shown, * = a held-out true edge):\n", show, k)
	return rec.Stream(ctx, ids, k, func(i int, r release.Result) error {
		qi := qis[i]
		var b strings.Builder
		hits := 0
		for j, l := range r.List {
			v, _ := s.Test.ID(l)
			if s.Label(qi, v) {
				hits++
			}
			if j >= show {
				continue
			}
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(l)
			if s.Label(qi, v) {
				b.WriteByte('*')
			}
		}
		u := ids[i]
		fmt.Fprintf(o, "  user %s (degree %d, Delta_f %.3g, charged %.4g): %s  [%d of %d held-out edges in the top %d]\n",
			r.User, s.Test.Degree(u), r.Delta, r.Cost, b.String(), hits, len(s.TestPos[qi]), k)
		return nil
	})
}
