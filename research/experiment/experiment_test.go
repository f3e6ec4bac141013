package experiment

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/internal/atomicfile"
	"github.com/dplp/dplp/predict"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/research/evaluate"
	"github.com/dplp/dplp/research/gen"
	"github.com/dplp/dplp/research/protocol"
	"github.com/dplp/dplp/score"
)

// tinyGraph writes a small latent-space graph to dir/name.txt.
func tinyGraph(t testing.TB, dir, name string, n int, seed uint64) string {
	t.Helper()
	r, err := gen.RadiusForMeanDegree(n, 2, 10)
	if err != nil {
		t.Fatal(err)
	}
	lg, err := gen.Latent(n, 2, r, randx.Seeded(seed))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name+".txt")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := gen.WriteEdgeList(f, lg.Graph); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// counting returns hooks that count evaluations and trainings; training is
// replaced by a power transform (fast and deterministic). Both check that
// they get the scorer of the right graph: the test graph for evaluation,
// the public training graph for training.
func counting(evals, trains *atomic.Int64) hooks {
	h := defaultHooks()
	h.eval = func(s *protocol.Split, sc *score.Scorer, cfg calib.Config, k int, seed uint64) (evaluate.Result, error) {
		evals.Add(1)
		if sc.Graph() != s.Test {
			return evaluate.Result{}, errors.New("evaluation scorer does not score the test graph")
		}
		return evaluate.RunScorer(s, sc, cfg, k, seed)
	}
	h.train = func(s *protocol.Split, sc *score.Scorer, _, _ string, _ float64, _ evaluate.TrainOptions, _ uint64) (calib.Transform, evaluate.TrainSummary, error) {
		trains.Add(1)
		if sc.Graph() != s.Train {
			return nil, evaluate.TrainSummary{}, errors.New("training scorer does not score the training graph")
		}
		return powerTransform{2}, evaluate.TrainSummary{Epochs: 1, BestEpoch: 1, HeldOutAUC: 0.5}, nil
	}
	return h
}

func smallConfig(graphs ...string) Config {
	c := DefaultConfig()
	c.Graphs = graphs
	c.Scores = []string{"aa", "cn"}
	c.Methods = []string{"nonprivate", "public-only", "dplp", "dplp-lin", "exponential", "laplace", "staircase"}
	c.Eps = []float64{0.1, 1}
	c.K = []int{5}
	c.Seeds = 2
	return c
}

func TestExpandCounts(t *testing.T) {
	dir := t.TempDir()
	a, b := tinyGraph(t, dir, "a", 60, 1), tinyGraph(t, dir, "b", 60, 2)
	cases := []struct {
		name string
		mod  func(*Config)
	}{
		{"default", func(*Config) {}},
		{"both calibrations and protocols", func(c *Config) {
			c.Calibrations = []string{"rigorous", "reference"}
			c.Protocols = []string{"clean", "reference", "deployment"}
		}},
		{"sigma and k grids", func(c *Config) {
			c.Sigma = []float64{0, 0.3, 0.5}
			c.K = []int{1, 10}
			c.Methods = append(c.Methods, "power:0.5", "power:2", "laplace-peeling")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := smallConfig(a, b)
			tc.mod(&c)
			p, err := c.parse(true)
			if err != nil {
				t.Fatal(err)
			}
			cells, skipped := p.expand()
			// Brute force: count the combinations directly.
			var want, wantSkip int
			units := map[cellKey]bool{}
			for range c.Graphs {
				for range c.Scores {
					for range c.Methods {
						for _, cal := range c.Calibrations {
							for _, prot := range c.Protocols {
								n := len(c.Eps) * len(c.Sigma) * len(c.K) * c.Seeds
								if cal == "reference" && prot != "reference" {
									wantSkip += n
								} else {
									want += n
								}
							}
						}
					}
				}
			}
			if len(cells) != want || skipped != wantSkip {
				t.Fatalf("cells %d skipped %d, want %d and %d", len(cells), skipped, want, wantSkip)
			}
			seen := map[cell]bool{}
			for _, cl := range cells {
				if seen[cl] {
					t.Fatalf("duplicate cell %+v", cl)
				}
				seen[cl] = true
				units[p.key(cl, "sha")] = true
			}
			// Units: eps-free methods share across eps and calibration,
			// power methods across calibration.
			wantUnits := 0
			for _, m := range p.methods {
				for _, prot := range p.prots {
					cals := 0
					for _, cal := range p.cals {
						if validCombo(cal, prot) {
							cals++
						}
					}
					switch {
					case m.epsFree():
						cals = min(cals, 1) * 1
						wantUnits += cals * len(c.Sigma) * len(c.K) * c.Seeds
					case m.power > 0:
						wantUnits += min(cals, 1) * len(c.Eps) * len(c.Sigma) * len(c.K) * c.Seeds
					default:
						wantUnits += cals * len(c.Eps) * len(c.Sigma) * len(c.K) * c.Seeds
					}
				}
			}
			wantUnits *= len(c.Graphs) * len(c.Scores)
			if len(units) != wantUnits {
				t.Fatalf("%d distinct units, want %d", len(units), wantUnits)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	g := tinyGraph(t, dir, "g", 40, 1)
	cases := []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Graphs = nil }, "no graphs"},
		{func(c *Config) { c.Graphs = []string{filepath.Join(dir, "missing.txt")} }, "missing.txt"},
		{func(c *Config) { c.Graphs = []string{g, g} }, "same dataset name"},
		{func(c *Config) { c.Eps = []float64{0} }, "eps 0"},
		{func(c *Config) { c.Eps = []float64{math.Inf(1)} }, "eps +Inf"},
		{func(c *Config) { c.Eps = nil }, "no eps"},
		{func(c *Config) { c.Eps = []float64{1e-320} }, "eps 1e-320"}, // 2/eps = +Inf: NaN training losses
		{func(c *Config) { c.Eps = []float64{1e308} }, "eps 1e+308"},  // K x eps overflows
		{func(c *Config) { c.Eps = []float64{math.NaN()} }, "eps NaN"},
		{func(c *Config) { c.Methods = []string{"lin", "dplp-lin"} }, "same method dplp-lin"},
		{func(c *Config) { c.Theory = &TheoryConfig{Eps: []float64{1e-320}} }, "theory: eps 1e-320"},
		{func(c *Config) { c.K = []int{0} }, "k 0"},
		{func(c *Config) { c.Sigma = []float64{1.5} }, "sigma 1.5"},
		{func(c *Config) { c.Sigma = []float64{-0.1} }, "sigma -0.1"},
		{func(c *Config) { c.Seeds = 0 }, "seeds 0"},
		{func(c *Config) { c.Scores = []string{"xx"} }, "unknown score"},
		{func(c *Config) { c.Methods = []string{"magic"} }, "unknown method"},
		{func(c *Config) { c.Methods = []string{"power:-1"} }, "power must be"},
		{func(c *Config) { c.Methods = []string{"dplp", "DPLP"} }, "listed twice"},
		{func(c *Config) { c.Protocols = []string{"weird"} }, "unknown kind"},
		{func(c *Config) { c.Calibrations = []string{"loose"} }, "unknown calibration"},
		{func(c *Config) { c.Protocols = []string{"reference"}; c.NonEdgeFrac = 0.1 }, "never protects non-edges"},
		{func(c *Config) { c.MaxNegatives = -1 }, "max negatives"},
		{func(c *Config) { c.Epochs = -1 }, "epochs"},
		{func(c *Config) { c.Eps = []float64{0.1, 0.1} }, "repeat"},
		{func(c *Config) { c.Theory = &TheoryConfig{Dim: -1} }, "theory: dim"},
		{func(c *Config) { c.Scores = []string{"file:"} }, "needs a path"},
		{func(c *Config) { c.Scores = []string{"file:" + filepath.Join(dir, "nope.csv")} }, "nope.csv"},
		{func(c *Config) { c.Scores = []string{"file:a/s.csv", "file:b/s.csv"} }, "same display name"},
		{func(c *Config) { c.Scores = []string{"gcn", "GCN"} }, "listed twice"},
		{func(c *Config) { c.Predictor.Feature = "sum" }, "unknown feature"},
		{func(c *Config) { c.Predictor.Dim = -1 }, "dim -1"},
		{func(c *Config) { c.Predictor.Q = math.NaN() }, "node2vec"},
		{func(c *Config) { c.Predictor.Lo, c.Predictor.Hi = 1, 1 }, "file score range"},
	}
	for _, tc := range cases {
		c := DefaultConfig()
		c.Graphs = []string{g}
		tc.mod(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want error containing %q, got %v", tc.want, err)
		}
	}
	c := DefaultConfig()
	c.Graphs = []string{g}
	if err := c.Validate(); err != nil {
		t.Fatalf("valid config rejected: %v", err)
	}
	if err := Run(context.Background(), c, "", nil); err == nil {
		t.Fatal("empty output directory accepted")
	}
}

func TestDatasetName(t *testing.T) {
	for in, want := range map[string]string{"../shared/datasets/yeast.txt": "yeast", "a/b.edges.zst": "b",
		"pb": "pb", "x/y.txt.gz": "y", "/d/.hidden": ".hidden"} {
		if got := DatasetName(in); got != want {
			t.Errorf("DatasetName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseMethod(t *testing.T) {
	for in, want := range map[string]string{"DPLP": "dplp", "dplp-lin": "dplp-lin", "lin": "dplp-lin", "UMNN": "dplp-umnn",
		"dplp-umnn": "dplp-umnn", "dplp-pub": "dplp-pub", "Laplace-Peeling": "laplace-peeling",
		"power:2.0": "power:2", "power:0.50": "power:0.5", "public-only": "public-only", "nonprivate": "nonprivate"} {
		m, err := parseMethod(in)
		if err != nil || m.name != want {
			t.Errorf("parseMethod(%q) = %q, %v; want %q", in, m.name, err, want)
		}
	}
	for _, bad := range []string{"power:", "power:0", "power:NaN", "power:inf", "dplp-x", ""} {
		if _, err := parseMethod(bad); err == nil {
			t.Errorf("parseMethod(%q) accepted", bad)
		}
	}
}

// TestPowerDelta checks Delta of the power transform against a brute-force
// maximum over a fine grid of s (which includes the maximisers 0 and
// S_max - Delta_s), and that it is never exceeded.
func TestPowerDelta(t *testing.T) {
	r := randx.Seeded(7)
	as := []float64{0.1, 0.3, 0.5, 0.9, 1, 1.5, 2, 3, 7}
	for trial := 0; trial < 300; trial++ {
		a := as[trial%len(as)]
		if trial >= len(as)*10 {
			a = 0.05 + 5*r.Float64()
		}
		sMax := 0.5 + 50*r.Float64()
		deltaS := sMax * math.Pow(r.Float64(), 2) * 1.2 // sometimes >= sMax
		tr := powerTransform{a}
		d := tr.Delta(deltaS, sMax)
		var brute float64
		grid := []float64{0, math.Max(sMax-deltaS, 0), sMax}
		for i := 0; i <= 2000; i++ {
			grid = append(grid, sMax*float64(i)/2000)
		}
		for _, s := range grid {
			diff := tr.Utility(math.Min(s+deltaS, sMax), 0, sMax) - tr.Utility(s, 0, sMax)
			brute = math.Max(brute, diff)
		}
		if brute > d {
			t.Fatalf("a=%v sMax=%v deltaS=%v: brute force %v exceeds Delta %v", a, sMax, deltaS, brute, d)
		}
		if d-brute > 1e-9 {
			t.Fatalf("a=%v sMax=%v deltaS=%v: Delta %v not attained (brute force %v)", a, sMax, deltaS, d, brute)
		}
	}
	tr := powerTransform{2}
	if tr.Delta(0, 5) != 0 || tr.Delta(1, 0) != 0 || tr.Utility(3, 0, 0) != 0 {
		t.Fatal("degenerate cases must give 0")
	}
	if u := tr.Utility(7, 0, 5); u != 1 {
		t.Fatalf("utility not clamped: %v", u)
	}
	// Monotone in s.
	prev := -1.0
	for s := 0.0; s <= 5; s += 0.01 {
		u := powerTransform{0.3}.Utility(s, 0, 5)
		if u < prev {
			t.Fatalf("not monotone at %v", s)
		}
		prev = u
	}
}

// requiredKeys are the keys scripts rely on.
var requiredKeys = []string{"dataset", "score", "method", "calibration", "protocol", "eps", "sigma", "k", "seed",
	"auc_at_k", "precision_at_k", "recall_at_k", "ndcg_at_k", "map_at_k", "mrr", "hits_at_k", "queries"}

var extraKeys = []string{"roc_auc", "zero_noise_queries", "seconds", "train_seconds", "held_out_auc", "eps_spent", "unit", "eps_list", "gap_recovered"}

func TestRunCacheAndOutputs(t *testing.T) {
	dir := t.TempDir()
	a, b := tinyGraph(t, dir, "alpha", 80, 1), tinyGraph(t, dir, "beta", 70, 2)
	cfg := smallConfig(a, b)
	cfg.Methods = append(cfg.Methods, "power:0.5", "power:2")
	cfg.Sigma = []float64{0.2, 0.4}
	cfg.Scores = []string{"cn"} // fewer plots: rendering is slow under -race
	out := filepath.Join(dir, "out")
	var evals, trains atomic.Int64
	var log bytes.Buffer
	if err := run(context.Background(), cfg, out, &log, counting(&evals, &trains)); err != nil {
		t.Fatal(err)
	}
	p, _ := cfg.parse(true)
	cells, _ := p.expand()
	units := map[cellKey]bool{}
	for _, c := range cells {
		units[p.key(c, "")] = true
	}
	if int(evals.Load()) != len(units) {
		t.Fatalf("%d evaluations, want one per distinct unit: %d", evals.Load(), len(units))
	}
	// One transform per (dataset, score, variant, sigma, eps, seed).
	if want := 2 * 1 * 2 * 2 * 2 * 2; int(trains.Load()) != want {
		t.Fatalf("%d trainings, want %d", trains.Load(), want)
	}
	first, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}

	// Exact keys.
	var objs []map[string]json.RawMessage
	if err := json.Unmarshal(first, &objs); err != nil {
		t.Fatal(err)
	}
	if len(objs) != len(cells) {
		t.Fatalf("%d objects, want %d cells", len(objs), len(cells))
	}
	seen := map[string]bool{}
	for _, o := range objs {
		for _, k := range requiredKeys {
			if _, ok := o[k]; !ok {
				t.Fatalf("key %q missing in %v", k, o)
			}
		}
		for k := range o {
			if !slices.Contains(requiredKeys, k) && !slices.Contains(extraKeys, k) {
				t.Fatalf("unexpected key %q", k)
			}
		}
		id := string(o["dataset"]) + string(o["score"]) + string(o["method"]) + string(o["calibration"]) +
			string(o["protocol"]) + string(o["eps"]) + string(o["sigma"]) + string(o["k"]) + string(o["seed"])
		if seen[id] {
			t.Fatalf("duplicate row %s", id)
		}
		seen[id] = true
	}
	rows, err := ReadResults(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Queries <= 0 || r.AUC < 0 || r.AUC > 1 || r.Dataset != "alpha" && r.Dataset != "beta" {
			t.Fatalf("bad row %+v", r)
		}
		if r.Method == "nonprivate" && r.ROCAUC == nil {
			t.Fatalf("nonprivate row without roc_auc: %+v", r)
		}
		if strings.HasPrefix(r.Method, "dplp") && r.HeldOutAUC == nil {
			t.Fatalf("dplp row without training summary: %+v", r)
		}
	}
	// Eps-free methods are replicated across eps.
	for _, r := range rows {
		if r.Method != "nonprivate" || r.Eps != 0.1 {
			continue
		}
		for _, q := range rows {
			if q.Method == r.Method && q.Dataset == r.Dataset && q.Score == r.Score && q.Sigma == r.Sigma && q.Seed == r.Seed && q.AUC != r.AUC {
				t.Fatalf("nonprivate differs across eps: %+v vs %+v", r, q)
			}
		}
	}

	// CSV: header and one line per row.
	csvData, err := os.ReadFile(filepath.Join(out, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(csvData)), "\n")
	if len(lines) != len(rows)+1 || !strings.HasPrefix(lines[0], strings.Join(requiredKeys, ",")) {
		t.Fatalf("csv: %d lines, header %q", len(lines), lines[0])
	}

	// Summary: one table per (protocol, calibration, eps, sigma, k), rows
	// dataset x score, columns dataset, score and the methods.
	sum, err := os.ReadFile(filepath.Join(out, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	checkTables(t, string(sum), len(cfg.Eps)*len(cfg.Sigma)*len(cfg.K), 2*1, 2+len(cfg.Methods), true)

	// Plots: eps and sigma sweeps per dataset x score, power per score.
	for _, name := range []string{"auc_vs_eps_alpha_cn_clean_rigorous_sigma0.2_k5", "auc_vs_sigma_beta_cn_clean_rigorous_eps1_k5",
		"auc_vs_power_cn_clean_rigorous_eps0.1_sigma0.4_k5"} {
		for _, ext := range []string{".png", ".svg"} {
			st, err := os.Stat(filepath.Join(out, "plots", name+ext))
			if err != nil || st.Size() == 0 {
				t.Fatalf("plot %s%s: %v", name, ext, err)
			}
		}
	}
	if !strings.Contains(string(sum), "auc_vs_power_cn") {
		t.Fatal("summary does not list the plots")
	}

	// Second run: nothing to do, identical results.
	evals.Store(0)
	trains.Store(0)
	if err := run(context.Background(), cfg, out, &log, counting(&evals, &trains)); err != nil {
		t.Fatal(err)
	}
	if evals.Load() != 0 || trains.Load() != 0 {
		t.Fatalf("second run did work: %d evaluations, %d trainings", evals.Load(), trains.Load())
	}
	second, _ := os.ReadFile(filepath.Join(out, "results.json"))
	if !bytes.Equal(first, second) {
		t.Fatal("results.json changed on a fully cached rerun")
	}

	// Resume: remove some cache files; exactly those are recomputed, with
	// the same results (everything is seeded).
	files, _ := filepath.Glob(filepath.Join(out, "cache", "*.json"))
	if len(files) != len(units) {
		t.Fatalf("%d cache files, want %d", len(files), len(units))
	}
	for _, f := range files[:5] {
		os.Remove(f)
	}
	if err := run(context.Background(), cfg, out, &log, counting(&evals, &trains)); err != nil {
		t.Fatal(err)
	}
	if evals.Load() != 5 {
		t.Fatalf("resume ran %d evaluations, want 5", evals.Load())
	}
	third, _ := os.ReadFile(filepath.Join(out, "results.json"))
	if !sameMetrics(t, first, third) {
		t.Fatal("recomputed cells differ from the first run")
	}
}

// sameMetrics compares two results.json ignoring timings.
func sameMetrics(t *testing.T, a, b []byte) bool {
	var x, y []Row
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil || len(x) != len(y) {
		return false
	}
	for i := range x {
		x[i].Seconds, y[i].Seconds = 0, 0
		x[i].TrainSeconds, y[i].TrainSeconds = 0, 0
		xa, _ := json.Marshal(x[i])
		ya, _ := json.Marshal(y[i])
		if !bytes.Equal(xa, ya) {
			t.Logf("%s\n%s", xa, ya)
			return false
		}
	}
	return true
}

// checkTables checks the markdown tables of summary.md: count, rows and
// columns.
func checkTables(t *testing.T, md string, tables, rows, cols int, ci bool) {
	t.Helper()
	var got int
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "| dataset | score |") {
			continue
		}
		got++
		n := 0
		for j := i; j < len(lines) && strings.HasPrefix(lines[j], "|"); j++ {
			if c := strings.Count(lines[j], "|") - 1; c != cols {
				t.Fatalf("table line %q has %d columns, want %d", lines[j], c, cols)
			}
			n++
		}
		if n != rows+2 {
			t.Fatalf("table has %d body rows, want %d", n-2, rows)
		}
		// One seed has no interval: "mean ± n/a", never "± 0.000".
		if row := lines[i+2]; strings.Contains(row, "n/a") == ci || !strings.Contains(row, "±") {
			t.Fatalf("CI shown %v, want %v: %q", !ci, ci, lines[i+2])
		}
	}
	if got != tables {
		t.Fatalf("%d tables, want %d", got, tables)
	}
}

func TestInterruptResume(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig(tinyGraph(t, dir, "g", 80, 3))
	out := filepath.Join(dir, "out")
	var evals, trains atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	h := counting(&evals, &trains)
	inner := h.eval
	h.eval = func(s *protocol.Split, sc *score.Scorer, c calib.Config, k int, seed uint64) (evaluate.Result, error) {
		if evals.Load() == 6 {
			cancel()
		}
		return inner(s, sc, c, k, seed)
	}
	err := run(ctx, cfg, out, nil, h)
	if err == nil || !strings.Contains(err.Error(), "rerun to resume") {
		t.Fatalf("want an interruption error, got %v", err)
	}
	done := evals.Load()
	evals.Store(0)
	if err := run(context.Background(), cfg, out, nil, counting(&evals, &trains)); err != nil {
		t.Fatal(err)
	}
	p, _ := cfg.parse(true)
	cells, _ := p.expand()
	units := map[cellKey]bool{}
	for _, c := range cells {
		units[p.key(c, "")] = true
	}
	if int(done+evals.Load()) != len(units) {
		t.Fatalf("interrupted run did %d, resume %d; want %d in total", done, evals.Load(), len(units))
	}
}

func TestReferenceCalibration(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig(tinyGraph(t, dir, "g", 90, 4))
	cfg.Scores = []string{"cn"}
	cfg.Eps = []float64{0.5}
	cfg.Seeds = 1
	cfg.Protocols = []string{"clean", "reference"}
	cfg.Calibrations = []string{"rigorous", "reference"}
	out := filepath.Join(dir, "out")
	var evals, trains atomic.Int64
	var mu sync.Mutex // hooks run on concurrent workers
	var opts []evaluate.TrainOptions
	h := counting(&evals, &trains)
	inner := h.train
	h.train = func(s *protocol.Split, sc *score.Scorer, name, v string, e float64, o evaluate.TrainOptions, sd uint64) (calib.Transform, evaluate.TrainSummary, error) {
		mu.Lock()
		opts = append(opts, o)
		mu.Unlock()
		return inner(s, sc, name, v, e, o, sd)
	}
	var cals []calib.Calibration
	ev := h.eval
	h.eval = func(s *protocol.Split, sc *score.Scorer, c calib.Config, k int, seed uint64) (evaluate.Result, error) {
		if c.Transform != nil {
			mu.Lock()
			cals = append(cals, c.Calibration)
			mu.Unlock()
		}
		return ev(s, sc, c, k, seed)
	}
	if err := run(context.Background(), cfg, out, nil, h); err != nil {
		t.Fatal(err)
	}
	var ref int
	for _, o := range opts {
		if o.Reference {
			ref++
		}
	}
	// dplp and dplp-lin: clean/rigorous and reference/rigorous; under
	// reference/reference they are the authors' own (research/refdplp, see
	// refdplp_test.go), not our trainer.
	if len(opts) != 4 || ref != 0 {
		t.Fatalf("trainings %d (reference data %d), want 4 (0)", len(opts), ref)
	}
	for _, c := range cals {
		if c != calib.Rigorous {
			t.Fatal("a transform was released with the reference calibration")
		}
	}
	sum, _ := os.ReadFile(filepath.Join(out, "summary.md"))
	if !strings.Contains(string(sum), "does NOT meet") || !strings.Contains(string(sum), "skipped") {
		t.Fatal("summary lacks the reference-calibration warning or the skipped note")
	}
	checkTables(t, string(sum), 3, 1, 2+len(cfg.Methods), false)
}

// TestLoadConfig: configuration files and presets (the experiment
// command's flags over them: cmd/dplp/internal/cli/expflags_test.go).
func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	g := tinyGraph(t, dir, "g", 40, 1)
	path := filepath.Join(dir, "cfg.json")
	os.WriteFile(path, []byte(`{"graphs": ["g.txt"], "scores": ["cn"], "eps": [0.1, 0.5], "seeds": 2}`), 0o644)
	c, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.Graphs[0] != g || c.Seeds != 2 || len(c.Eps) != 2 || c.K[0] != 30 || len(c.Methods) != len(AllMethods) {
		t.Fatalf("loaded %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, []byte(`{"graphs": ["g.txt"], "epsilon": [0.1]}`), 0o644)
	if _, err := LoadConfig(path); err == nil || !strings.Contains(err.Error(), "epsilon") {
		t.Fatalf("unknown key accepted: %v", err)
	}

	os.WriteFile(path, []byte(`{"theory": {"nodes": [100, 200], "base_nodes": 100}}`), 0o644)
	c, err = LoadConfig(path)
	if err != nil || c.Theory == nil || c.Theory.Sigma != 0.3 || c.Theory.Dim != 2 || len(c.Theory.Nodes) != 2 || c.Validate() != nil {
		t.Fatalf("theory config: %+v, %v", c.Theory, err)
	}
	os.WriteFile(path, []byte(`{"theory": {"nodez": [100]}}`), 0o644)
	if _, err := LoadConfig(path); err == nil || !strings.Contains(err.Error(), "nodez") {
		t.Fatalf("unknown theory key accepted: %v", err)
	}
	p, err := Preset("table1", "")
	if err != nil || len(p.Graphs) != 5 || len(p.Scores) != 4 || p.Seeds != 3 || p.K[0] != 30 || p.Sigma[0] != 0.3 || p.Eps[0] != 0.1 {
		t.Fatalf("table1 preset %+v, %v", p, err)
	}
	p, err = Preset("table1-emb", "")
	if err != nil || len(p.Graphs) != 5 || !slices.Equal(p.Scores, predict.Embedding) || p.Seeds != 3 || p.K[0] != 30 ||
		p.Sigma[0] != 0.3 || p.Eps[0] != 0.1 || len(p.Methods) != len(AllMethods) {
		t.Fatalf("table1-emb preset %+v, %v", p, err)
	}
	if _, err := Preset("nope", ""); err == nil {
		t.Fatal("unknown preset accepted")
	}
}

// TestSmoke is the CI-sized experiment with the real trainer: one dataset,
// one score, two eps values, one seed, every method.
func TestSmoke(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.Graphs = []string{tinyGraph(t, dir, "latent", 300, 9)}
	cfg.Methods = append(slices.Clone(AllMethods), "power:1", "power:3")
	cfg.Eps = []float64{0.1, 1}
	cfg.K = []int{10}
	cfg.Epochs = 5
	out := filepath.Join(dir, "out")
	if err := Run(context.Background(), cfg, out, nil); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadResults(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(cfg.Methods)*2 {
		t.Fatalf("%d rows, want %d", len(rows), len(cfg.Methods)*2)
	}
	auc := map[string]float64{}
	for _, r := range rows {
		if r.Eps == 1 {
			auc[r.Method] = r.AUC
		}
	}
	// Sanity: the non-private ranking beats uniform-ish noise by a margin.
	if auc["nonprivate"] < auc["laplace"]+0.1 {
		t.Fatalf("nonprivate %v vs laplace %v", auc["nonprivate"], auc["laplace"])
	}
}

// BenchmarkSmokeRun times the CI smoke experiment (one dataset of 300
// nodes, one score, two eps values, one seed, every method, real training)
// from an empty cache.
func BenchmarkSmokeRun(b *testing.B) {
	dir := b.TempDir()
	cfg := DefaultConfig()
	cfg.Graphs = []string{tinyGraph(b, dir, "latent", 300, 9)}
	cfg.Eps = []float64{0.1, 1}
	for i := 0; b.Loop(); i++ {
		if err := Run(context.Background(), cfg, filepath.Join(dir, strconv.Itoa(i)), nil); err != nil {
			b.Fatal(err)
		}
	}
}

// TestEmbeddingPredictor runs a small grid with an embedding predictor
// (gcn, few epochs) next to a triad score, with the real fitting, trainer
// and evaluation: rows carry score "gcn"; every predictor is fitted once on
// the test graph per split, and once on the training graph only when a
// DPLP-family method trains, whose scorer is then that of the training
// graph; a rerun is fully cached and changed predictor options recompute.
func TestEmbeddingPredictor(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.Graphs = []string{tinyGraph(t, dir, "latent", 200, 5)}
	cfg.Scores = []string{"gcn", "cn"}
	cfg.Methods = []string{"nonprivate", "public-only", "dplp", "dplp-lin", "exponential", "power:2"}
	cfg.Calibrations = []string{"rigorous", "reference"}
	cfg.Protocols = []string{"clean", "reference"}
	cfg.Eps = []float64{1}
	cfg.K = []int{10}
	cfg.Epochs = 3
	cfg.Predictor = PredictorOptions{Dim: 16, Epochs: 20}
	out := filepath.Join(dir, "out")

	var mu sync.Mutex
	type fitted struct {
		name string
		g    *graph.Graph // kept alive, so pointers are never reused
	}
	var fits []fitted
	var trainNames []string
	var evals atomic.Int64
	var refKinds []score.Kind
	h := defaultHooks()
	fit := h.fit
	h.fit = func(ctx context.Context, spec predict.Spec, g *graph.Graph, p *protect.Set, opt predict.Options) (*score.Scorer, error) {
		sc, err := fit(ctx, spec, g, p, opt)
		mu.Lock()
		fits = append(fits, fitted{spec.Name, g})
		mu.Unlock()
		return sc, err
	}
	train := h.train
	h.train = func(s *protocol.Split, sc *score.Scorer, name, v string, e float64, o evaluate.TrainOptions, sd uint64) (calib.Transform, evaluate.TrainSummary, error) {
		if sc.Graph() != s.Train || sc.Name() != name && !strings.EqualFold(sc.Name(), name) {
			return nil, evaluate.TrainSummary{}, errors.New("training scorer is not the predictor's on the training graph")
		}
		mu.Lock()
		trainNames = append(trainNames, name)
		mu.Unlock()
		return train(s, sc, name, v, e, o, sd)
	}
	eval := h.eval
	h.eval = func(s *protocol.Split, sc *score.Scorer, c calib.Config, k int, seed uint64) (evaluate.Result, error) {
		evals.Add(1)
		if sc.Graph() != s.Test {
			return evaluate.Result{}, errors.New("evaluation scorer is not on the test graph")
		}
		if c.Calibration == calib.Reference {
			mu.Lock()
			refKinds = append(refKinds, c.Kind)
			mu.Unlock()
		}
		return eval(s, sc, c, k, seed)
	}
	if err := run(context.Background(), cfg, out, nil, h); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadResults(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	// 2 scores x 6 methods x (clean/rigorous, reference/rigorous, reference/reference).
	if len(rows) != 2*6*3 {
		t.Fatalf("%d rows, want %d", len(rows), 2*6*3)
	}
	var gcnRows int
	for _, r := range rows {
		if r.Score != "gcn" {
			continue
		}
		gcnRows++
		if r.Queries <= 0 || r.AUC < 0 || r.AUC > 1 {
			t.Fatalf("bad gcn row %+v", r)
		}
		if strings.HasPrefix(r.Method, "dplp") && r.HeldOutAUC == nil && (r.Noise == "" || r.EpsEffMedian == nil) {
			t.Fatalf("gcn dplp row without training summary: %+v", r)
		}
	}
	if gcnRows != 6*3 {
		t.Fatalf("%d gcn rows, want %d", gcnRows, 6*3)
	}
	// Two splits (clean, reference); in each, every predictor is fitted on
	// the test graph and on the training graph, once.
	seen := map[fitted]bool{}
	for _, f := range fits {
		if seen[f] {
			t.Fatalf("%s fitted twice on one graph", f.name)
		}
		seen[f] = true
	}
	if len(fits) != 2*2*2 {
		t.Fatalf("%d fits, want 8", len(fits))
	}
	// dplp and dplp-lin: clean/rigorous, reference/rigorous (reference/reference
	// is the authors' own, research/refdplp).
	if n := len(trainNames); n != 2*2*2 || slices.Index(trainNames, "gcn") < 0 {
		t.Fatalf("trainings %v", trainNames)
	}
	for _, k := range refKinds {
		if k != score.Bounded && k != score.CN {
			t.Fatalf("reference calibration with kind %v", k)
		}
	}
	if !slices.Contains(refKinds, score.Bounded) {
		t.Fatal("no reference-calibrated gcn cell")
	}
	sum, _ := os.ReadFile(filepath.Join(out, "summary.md"))
	if !strings.Contains(string(sum), "| latent | gcn |") || !strings.Contains(string(sum), "| latent | CN |") {
		t.Fatalf("summary lacks the gcn or CN row:\n%s", sum)
	}

	// Rerun: fully cached, nothing fitted.
	fits = nil
	evals.Store(0)
	if err := run(context.Background(), cfg, out, nil, h); err != nil {
		t.Fatal(err)
	}
	if evals.Load() != 0 || len(fits) != 0 {
		t.Fatalf("cached rerun evaluated %d cells, fitted %v", evals.Load(), fits)
	}
	// Changed embedding options recompute the gcn cells only, and without
	// DPLP-family methods the training graph is never fitted.
	cfg.Predictor.Dim = 8
	cfg.Methods = []string{"nonprivate", "exponential"}
	cfg.Calibrations, cfg.Protocols = []string{"rigorous"}, []string{"clean"}
	if err := run(context.Background(), cfg, out, nil, h); err != nil {
		t.Fatal(err)
	}
	if evals.Load() != 2 || len(fits) != 1 || fits[0].name != "gcn" {
		t.Fatalf("after changing dim: %d evaluations (want 2), fits %v (want one gcn test fit)", evals.Load(), fits)
	}
}

// TestPredictorKeys checks which predictor options enter a cell's cache
// key: none for triads; feature and dimension for embeddings, epochs only
// for gcn and prune, p and q only for node2vec; range and content for files.
func TestPredictorKeys(t *testing.T) {
	dir := t.TempDir()
	g := tinyGraph(t, dir, "g", 40, 1)
	keyOf := func(score string, o PredictorOptions) string {
		t.Helper()
		c := DefaultConfig()
		c.Graphs, c.Scores, c.Methods, c.Predictor = []string{g}, []string{score}, []string{"exponential"}, o
		p, err := c.parse(false)
		if err != nil {
			t.Fatal(err)
		}
		p.fileSHA = map[string]string{"s.csv": "sha-" + o.Feature}
		cells, _ := p.expand()
		return hashKey(p.key(cells[0], "sha"))
	}
	base := PredictorOptions{}
	cases := []struct {
		score string
		o     PredictorOptions
		same  bool
	}{
		{"aa", PredictorOptions{Dim: 8, Epochs: 3, Feature: "hadamard", P: 2, Lo: -1, Hi: 1}, true},
		{"gcn", PredictorOptions{Epochs: 3}, false},
		{"gcn", PredictorOptions{Dim: 8}, false},
		{"gcn", PredictorOptions{Feature: "absdiff"}, false},
		{"gcn", PredictorOptions{Feature: "hadamard"}, true}, // the default
		{"gcn", PredictorOptions{P: 2, Q: 3, Lo: 1, Hi: 2}, true},
		{"prune", PredictorOptions{Epochs: 3}, false},
		{"deepwalk", PredictorOptions{Epochs: 3, P: 2}, true},
		{"node2vec", PredictorOptions{Epochs: 3}, true},
		{"node2vec", PredictorOptions{Q: 0.5}, false},
		{"file:s.csv", PredictorOptions{Lo: -1, Hi: 1}, false},
		{"file:s.csv", PredictorOptions{Dim: 8, Epochs: 2}, true},
		{"file:s.csv", PredictorOptions{Feature: "hadamard"}, false}, // the stand-in file hash changes
	}
	for _, tc := range cases {
		if got := keyOf(tc.score, tc.o) == keyOf(tc.score, base); got != tc.same {
			t.Errorf("%s with %+v: same key %v, want %v", tc.score, tc.o, got, tc.same)
		}
	}
	if keyOf("gcn", base) == keyOf("line", base) {
		t.Error("gcn and line share a key")
	}
}

func TestPredictorNames(t *testing.T) {
	for in, want := range map[string][3]string{
		"AA":                 {"aa", "AA", "aa"},
		"node2vec":           {"node2vec", "node2vec", "node2vec"},
		"file:dir/My Sc.csv": {"file:dir/My Sc.csv", "file:My Sc.csv", "file_my_sc.csv"},
	} {
		spec, err := predict.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		pr := predictor{name: spec.Name, spec: spec}
		if got := [3]string{pr.name, pr.display(), pr.slug()}; got != want {
			t.Errorf("%q: name, display, slug %q, want %q", in, got, want)
		}
	}
}

// TestFilePredictor runs a score file as predictor: its rows carry
// "file:PATH", and editing the file invalidates the cached cells.
func TestFilePredictor(t *testing.T) {
	dir := t.TempDir()
	gp := tinyGraph(t, dir, "g", 80, 2)
	g, _, err := graph.ReadFile(gp)
	if err != nil {
		t.Fatal(err)
	}
	write := func(scale float64) {
		var b strings.Builder
		for u := int32(0); int(u) < g.N(); u++ {
			for v := u + 1; int(v) < g.N(); v++ {
				// A deterministic score in [0, 1] favouring close ids.
				fmt.Fprintf(&b, "%s,%s,%g\n", g.Label(u), g.Label(v), scale/(1+math.Abs(float64(u-v))))
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "scores.csv"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(1)
	cfgPath := filepath.Join(dir, "cfg.json")
	os.WriteFile(cfgPath, []byte(`{"graphs": ["g.txt"], "scores": ["file:scores.csv", "cn"], "methods": ["nonprivate", "exponential"], "k": [5]}`), 0o644)
	cfg, err := LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if want := "file:" + filepath.Join(dir, "scores.csv"); cfg.Scores[0] != want {
		t.Fatalf("score path %q, want %q", cfg.Scores[0], want)
	}
	out := filepath.Join(dir, "out")
	var evals, trains atomic.Int64
	if err := run(context.Background(), cfg, out, nil, counting(&evals, &trains)); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadResults(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || rows[0].Score != cfg.Scores[0] || rows[2].Score != "cn" {
		t.Fatalf("rows %+v", rows)
	}
	sum, _ := os.ReadFile(filepath.Join(out, "summary.md"))
	if !strings.Contains(string(sum), "| g | file:scores.csv |") {
		t.Fatalf("summary lacks the file row:\n%s", sum)
	}
	write(0.5)
	evals.Store(0)
	if err := run(context.Background(), cfg, out, nil, counting(&evals, &trains)); err != nil {
		t.Fatal(err)
	}
	if evals.Load() != 2 {
		t.Fatalf("after editing the score file: %d evaluations, want 2 (the file's cells)", evals.Load())
	}
}

// BenchmarkEmbeddingSmokeRun times the smoke experiment with the gcn
// predictor at its default settings (one 300-node dataset, every method,
// two eps values, one seed: two gcn fits and the DPLP trainings) from an
// empty cache.
func BenchmarkEmbeddingSmokeRun(b *testing.B) {
	dir := b.TempDir()
	cfg := DefaultConfig()
	cfg.Graphs = []string{tinyGraph(b, dir, "latent", 300, 9)}
	cfg.Scores = []string{"gcn"}
	cfg.Eps = []float64{0.1, 1}
	for i := 0; b.Loop(); i++ {
		if err := Run(context.Background(), cfg, filepath.Join(dir, strconv.Itoa(i)), nil); err != nil {
			b.Fatal(err)
		}
	}
}

// Output files are replaced atomically and only when regular: a symlink at
// results.json is refused (and stays), no temporary file is left behind, and
// results.csv prints measured values with 10 significant digits.
func TestOutputsRefuseNonRegularAndFormat(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig(tinyGraph(t, dir, "g", 60, 2))
	cfg.Seeds = 1
	out := filepath.Join(dir, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(dir, "victim.txt")
	os.WriteFile(victim, []byte("keep"), 0o644)
	link := filepath.Join(out, "results.json")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	err := Run(context.Background(), cfg, out, nil)
	if !errors.Is(err, atomicfile.ErrNotRegular) {
		t.Fatalf("results.json symlink: error %v, want ErrNotRegular", err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatal("symlink replaced")
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Fatalf("symlink target written: %q", b)
	}
	os.Remove(link)
	if err := Run(context.Background(), cfg, out, nil); err != nil {
		t.Fatal(err)
	}
	walkErr := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", p)
		}
		return err
	})
	if walkErr != nil {
		t.Fatal(walkErr)
	}
	data, err := os.ReadFile(filepath.Join(out, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs[1:] {
		for _, v := range r {
			if len(v) > 16 { // 10 significant digits plus sign, point and exponent
				t.Errorf("results.csv value %q is not short", v)
			}
		}
	}
	if got := fmtM(0.11249999999999985); got != "0.1125" {
		t.Errorf("fmtM = %q", got)
	}
	sum, _ := os.ReadFile(filepath.Join(out, "summary.md"))
	if !strings.Contains(string(sum), "± n/a") || strings.Contains(string(sum), "± 0.000 ") {
		t.Errorf("one-seed summary does not show n/a intervals")
	}
}
