package endtoend

import (
	"bufio"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/ledger"
	"github.com/dplp/dplp/mech"
	"github.com/dplp/dplp/mech/exact"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/release"
	"github.com/dplp/dplp/score"
	"github.com/dplp/dplp/snapshot"
	"github.com/dplp/dplp/train/deploy"
)

func small() Config {
	c := Default()
	c.Graphs, c.Toggles, c.MaxK = 1, 4, 2
	c.Kinds = []score.Kind{score.CN, score.RA}
	c.Variants = []string{"dplp"}
	return c
}

// The deployed pipeline passes for every variant and both samplers, and
// every check ran.
func TestEndToEndPasses(t *testing.T) {
	type tc struct{ variant, sampler string }
	var cases []tc
	for _, v := range []string{"dplp", "lin", "umnn", "dplp-pub"} {
		cases = append(cases, tc{v, SamplerAuto})
	}
	cases = append(cases, tc{"dplp-pub", SamplerFloat})
	for _, c := range cases {
		t.Run(c.variant+"/"+c.sampler, func(t *testing.T) {
			cfg := small()
			cfg.Variants, cfg.Sampler = []string{c.variant}, c.sampler
			// The bounded predictors do not depend on the variant's family:
			// dplp and dplp-pub with the deployed sampler cover them (CI's
			// audit runs cover every variant with them too).
			if testing.Short() || c.sampler != SamplerAuto || (c.variant != "dplp" && c.variant != "dplp-pub") {
				cfg.Bounded = false
			}
			rep, err := Run(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Passed() {
				t.Fatalf("%+v", rep)
			}
			if rep.NoisyCases == 0 || rep.UtilityChecks == 0 || rep.Trainings < 10 || rep.RepresentationChecks == 0 ||
				rep.NeighbourLoads == 0 || rep.ReserveChecks == 0 || rep.TrainingInvariance != "checked" {
				t.Fatalf("audit covered nothing: %+v", rep)
			}
			if (c.variant == "dplp-pub") != (rep.LexCases > 0) {
				t.Fatalf("variant %s: %d lexicographic cases", c.variant, rep.LexCases)
			}
			want := SamplerExact
			if c.sampler == SamplerFloat {
				want = SamplerFloat
			}
			if rep.Sampler != want {
				t.Fatalf("sampler %q, want %q", rep.Sampler, want)
			}
		})
	}
}

// The default run covers every triad score, both variant families, K <= 3,
// the deployed (exact) sampler and every check.
func TestDefaultCoverage(t *testing.T) {
	d := Default()
	for _, k := range score.Kinds() {
		if !slices.Contains(d.Kinds, k) {
			t.Errorf("default misses score %s", k)
		}
	}
	for _, v := range []string{"dplp", "dplp-pub"} {
		if !slices.Contains(d.Variants, v) {
			t.Errorf("default misses variant %s", v)
		}
	}
	if d.MaxK != 3 || !d.Representations || !d.Reserve || !d.Families || !d.Bounded || d.Sampler != SamplerAuto {
		t.Errorf("default %+v", d)
	}
	if s, err := resolveSampler(&d); err != nil || s != SamplerExact {
		t.Errorf("default sampler %q, %v; want exact (deployment's)", s, err)
	}
}

// Invalid configurations are errors, not panics.
func TestConfigErrors(t *testing.T) {
	for name, mod := range map[string]func(*Config){
		"k0":        func(c *Config) { c.MaxK = 0 },
		"k4":        func(c *Config) { c.MaxK = 4 },
		"eps":       func(c *Config) { c.Eps = math.Inf(1) },
		"variant":   func(c *Config) { c.Variants = []string{"nope"} },
		"novariant": func(c *Config) { c.Variants = nil },
		"sampler":   func(c *Config) { c.Sampler = "gumbel" },
		"refexact":  func(c *Config) { c.Calibration, c.Sampler = calib.Reference, SamplerExact },
	} {
		cfg := small()
		mod(&cfg)
		if _, err := Run(cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// The authors' calibration fails: users without protected edges of their
// own get the exact top-K.
func TestEndToEndReferenceFails(t *testing.T) {
	cfg := small()
	cfg.Calibration = calib.Reference
	rep, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Passed() || rep.Violations == 0 || rep.Sampler != SamplerFloat {
		t.Fatalf("reference calibration passed: %+v", rep)
	}
}

// A training path that reads the full graph (protected edges put back into
// the training graph) fails: the model changes between neighbours.
func TestEndToEndLeakyTrainingFails(t *testing.T) {
	cfg := small()
	cfg.Kinds = []score.Kind{score.CN}
	cfg.Train = func(kind score.Kind) TrainFunc {
		return func(g *graph.Graph, p *protect.Set) (*model.Model, error) {
			pr, err := deploy.Sample(g, p, deploy.SampleConfig{NegPerQuery: 40}, randx.Derive(1, 0x666974))
			if err != nil {
				return nil, err
			}
			tr := pr.Train
			pr.Train = g.Without(func(u, v int32) bool { return !tr.HasEdge(u, v) && !p.Has(u, v) })
			sc, err := score.New(pr.Train, pr.Marks, kind)
			if err != nil {
				return nil, err
			}
			m, _, err := deploy.Model(context.Background(), pr, sc, kind.String(), "dplp", 0.5, LastEpoch(2), 1)
			return m, err
		}
	}
	rep, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Passed() || rep.ModelChanges == 0 {
		t.Fatalf("leaky training passed: %+v", rep)
	}
}

// firstAppearance is the loader before canonical numbering: ids in order of
// first appearance (edge list, then marks, then node list), no
// canonicalization.
func firstAppearance(in snapshot.Inputs) (*snapshot.Dataset, error) {
	ids := map[string]int32{}
	var labels []string
	id := func(l string) int32 {
		if i, ok := ids[l]; ok {
			return i
		}
		ids[l] = int32(len(labels))
		labels = append(labels, l)
		return ids[l]
	}
	pairs := func(r interface{ Read([]byte) (int, error) }) []graph.Edge {
		var out []graph.Edge
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 2 {
				out = append(out, graph.Edge{U: id(f[0]), V: id(f[1])})
			} else if len(f) == 1 {
				id(f[0])
			}
		}
		return out
	}
	edges := pairs(in.Edges)
	var marks []graph.Edge
	if in.Marks != nil {
		marks = pairs(in.Marks)
	}
	if in.Nodes != nil {
		pairs(in.Nodes)
	}
	g, _, err := graph.FromEdges(len(labels), edges, labels)
	if err != nil {
		return nil, err
	}
	p, err := protect.New(len(labels), marks)
	if err != nil {
		return nil, err
	}
	return &snapshot.Dataset{Graph: g, Marks: p}, nil
}

// Negative control: numbering by first appearance fails the representation
// checks (and the neighbour loads, whose ids shift when a first appearance
// is removed).
func TestFirstAppearanceLoaderFails(t *testing.T) {
	cfg := small()
	cfg.Kinds, cfg.Bounded = []score.Kind{score.CN}, false
	cfg.Load = firstAppearance
	rep, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Passed() || rep.RepresentationViolations == 0 || rep.RepresentationChecks == 0 {
		t.Fatalf("a first-appearance loader passed: %+v", rep)
	}
	// The same configuration with the deployment loader passes.
	cfg.Load = nil
	if rep, err = Run(cfg); err != nil || !rep.Passed() || rep.RepresentationViolations != 0 {
		t.Fatalf("deployment loader: %v %+v", err, rep)
	}
}

// A toggled text that removes a node's first appearance and only edge
// loads, with the deployment loader, as G with that edge toggled under the
// same ids; the first-appearance loader renumbers.
func TestNeighbourTextKeepsIds(t *testing.T) {
	fams, err := families(randx.Derive(3, 4))
	if err != nil {
		t.Fatal(err)
	}
	var in instance
	for _, f := range fams {
		if f.name == "only-edges-protected" {
			in = f
		}
	}
	if in.g == nil {
		t.Fatal("family missing")
	}
	tx := writeText(in, randx.Derive(5, 6))
	if !tx.hasFirst || !loner(in.g, in.p, tx.first[0]) || in.g.Degree(tx.first[0]) != 1 {
		t.Fatalf("first line %v is not a loner's only edge", tx.first)
	}
	for _, tc := range []struct {
		name string
		load Loader
		same bool
	}{{"snapshot.Read", snapshot.Read, true}, {"first appearance", firstAppearance, false}} {
		d, err := tc.load(tx.inputs("g"))
		if err != nil {
			t.Fatal(err)
		}
		if err := encodes(in, tx.labels, d.Graph, d.Marks); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		g := d.Graph
		w, _ := g.ID(tx.labels[tx.first[0]])
		x, _ := g.ID(tx.labels[tx.first[1]])
		want, err := protect.Toggle(g, w, []int32{x})
		if err != nil {
			t.Fatal(err)
		}
		d2, err := tc.load(tx.toggled(g.Label(w), []string{g.Label(x)}).inputs("g2"))
		if err != nil {
			t.Fatalf("%s: G' fails to load: %v", tc.name, err)
		}
		if got := sameGraph(d2.Graph, want) && sameMarks(d2.Marks, d.Marks); got != tc.same {
			t.Fatalf("%s: G' under G's ids: %v, want %v", tc.name, got, tc.same)
		}
	}
}

// The representations encode the same graph, and differ as text.
func TestRepresentationsEncodeTheGraph(t *testing.T) {
	g, p, err := randomInstance(randx.Derive(9, 9), 18, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	in := instance{"r", g, p}
	tx := writeText(in, randx.Derive(1, 2))
	first := func(t *text) string { return t.edges[0][0] }
	seen := map[string]bool{first(tx): true}
	for _, rv := range tx.representations(randx.Derive(3, 3)) {
		d, err := snapshot.Read(rv.t.inputs(rv.name))
		if err != nil {
			t.Fatal(err)
		}
		if err := encodes(in, tx.labels, d.Graph, d.Marks); err != nil {
			t.Fatalf("%s: %v", rv.name, err)
		}
		seen[first(rv.t)] = true
	}
	if len(seen) < 3 {
		t.Fatalf("the representations start with only %d distinct labels", len(seen))
	}
}

// The exact sampler's list probabilities (plain and lexicographic) are a
// distribution, and the lexicographic ones match the sampler's frequencies.
func TestExactListProbabilities(t *testing.T) {
	vals := []float64{0.9, 0.5, 0.5, 0.2, 0.1, 0}
	pub := []float64{2, 1, 1, 1, 0, 0}
	s, err := exact.New(0.7, 0.3, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k := 1; k <= 3; k++ {
		lists := allLists(len(vals), k)
		for _, lex := range []bool{false, true} {
			var lp []float64
			if lex {
				lp, err = exactLexLogProbs(s, pub, vals, lists)
			} else {
				lp, err = s.ListLogProbs(vals, lists)
			}
			if err != nil {
				t.Fatal(err)
			}
			sum := 0.0
			for _, x := range lp {
				sum += math.Exp(x)
			}
			if math.Abs(sum-1) > 1e-9 {
				t.Fatalf("k=%d lex=%v: probabilities sum to %g", k, lex, sum)
			}
			if lex && !math.IsInf(lp[slices.IndexFunc(lists, func(l []int) bool { return l[0] != 0 })], -1) {
				t.Fatalf("a list not starting with the top public score is possible")
			}
		}
	}
	// Frequencies of the deployed lexicographic exact sampler (calib) at K=3.
	lists := allLists(len(vals), 3)
	lp, err := exactLexLogProbs(s, pub, vals, lists)
	if err != nil {
		t.Fatal(err)
	}
	idx := map[[3]int]int{}
	for i, l := range lists {
		idx[[3]int{l[0], l[1], l[2]}] = i
	}
	u := &mech.Utilities{Vals: vals}
	r := rand.New(rand.NewPCG(1, 2))
	const draws = 20000
	counts := make([]int, len(lists))
	for range draws {
		got, err := exactLex(u, pub, 3, r)
		if err != nil {
			t.Fatal(err)
		}
		counts[idx[[3]int{got[0], got[1], got[2]}]]++
	}
	for i, c := range counts {
		p := math.Exp(lp[i])
		sd := math.Sqrt(draws * p * (1 - p))
		if math.Abs(float64(c)-draws*p) > 5*sd+3 {
			t.Fatalf("list %v: %d draws, expected %.1f", lists[i], c, draws*p)
		}
	}
}

// exactLex samples the lexicographic mechanism with the exact sampler as
// a release does (calib.Plan.SampleWithPub with ExactSampler).
func exactLex(u *mech.Utilities, pub []float64, k int, r *rand.Rand) ([]int, error) {
	cc := calib.Config{Method: calib.Exponential, Calibration: calib.Rigorous, Eps: 0.7, Lexicographic: true, ExactSampler: true}
	plan := cc.Plan(calib.Query{DeltaS: 0.3, SMax: 1})
	if plan.Delta != 0.3 || !plan.Lexicographic() {
		return nil, errors.New("unexpected plan")
	}
	return plan.SampleWithPub(u, pub, k, r, nil)
}

// The re-serve check passes with the deployment Recommender and fails
// (negative control) when the "private" path is seeded, i.e. re-serves
// the seeded lists.
func TestReserveCheck(t *testing.T) {
	g, p, err := randomInstance(randx.Derive(2, 2), 16, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	m, err := DeployTrain(score.AA, "dplp", 0.5, 2, 1)(g, p)
	if err != nil {
		t.Fatal(err)
	}
	users := sortedLabels(g)
	for _, tc := range []struct {
		name   string
		seeded bool // the "private" path re-uses the seed (negative control)
		fail   bool
	}{{"private", false, false}, {"seeded-as-private", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st, err := ledger.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "l.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			mk := func(opts ...release.Option) (*release.Recommender, error) { return release.New(m, g, p, opts...) }
			seeded := func(opts ...release.Option) (*release.Recommender, error) {
				return mk(append(opts, release.WithSeed(1))...)
			}
			private := mk
			if tc.seeded {
				private = seeded
			}
			checks, viol, first, err := reserveCheck(ctx, st, seeded, private, users, 2)
			if err != nil {
				t.Fatal(err)
			}
			if checks != int64(len(users)+1) || (viol > 0) != tc.fail {
				t.Fatalf("checks %d, violations %d (%s); want failure %v", checks, viol, first, tc.fail)
			}
			if !tc.fail {
				// The re-serve layer is live: a second private request is
				// re-served the private lists, free.
				r, err := mk(release.WithStore(st))
				if err != nil {
					t.Fatal(err)
				}
				res, err := r.Recommend(ctx, users, 2)
				if err != nil {
					t.Fatal(err)
				}
				for _, x := range res {
					if x.Fresh || x.Seeded || x.Cost != 0 {
						t.Fatalf("user %s: not re-served privately: %+v", x.User, x)
					}
				}
			}
		})
	}
}

// --model: the given model is audited (its score, variant, eps_p), training
// invariance is reported as not run, and mismatches are refused.
func TestModelAudit(t *testing.T) {
	g, p, err := randomInstance(randx.Derive(4, 4), 18, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	m, err := DeployTrain(score.JC, "dplp-pub", 0.25, 2, 3)(g, p)
	if err != nil {
		t.Fatal(err)
	}
	cfg := small()
	cfg.Model, cfg.Eps = m, 0
	rep, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Passed() || rep.Trainings != 0 || rep.TrainingInvariance == "checked" || rep.Eps != 0.25 ||
		rep.Variant != "dplp-pub" || rep.LexCases == 0 || rep.Model == "" || rep.RepresentationChecks == 0 {
		t.Fatalf("%+v", rep)
	}
	bad := small()
	bad.Model, bad.Eps = m, 0.5
	if _, err := Run(bad); err == nil || !strings.Contains(err.Error(), "eps_p") {
		t.Fatalf("eps mismatch accepted: %v", err)
	}
	emb := *m
	emb.Score = "node2vec"
	bad.Model, bad.Eps = &emb, 0
	if _, err := Run(bad); err == nil || !strings.Contains(err.Error(), "triad") {
		t.Fatalf("embedding model accepted: %v", err)
	}
}
