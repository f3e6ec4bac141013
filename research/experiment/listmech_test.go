package experiment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplp/dplp/graph"
)

// TestListMethodsRun: a pair- and party-unit grid with the list-level
// methods writes rows with unit, eps_list and gap_recovered; dplp-list
// costs eps or 0 per list whatever K, perturb-once its one-time cost;
// public-only and non-private have gap 0 and 1; a rerun is fully cached.
func TestListMethodsRun(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.Graphs = []string{tinyGraph(t, dir, "latent", 250, 4)}
	cfg.Scores = []string{"cn", "aa"}
	cfg.Units = []string{"pair", "party"}
	cfg.Methods = []string{"public-only", "nonprivate", "dplp-list", "perturb-once"}
	cfg.Eps = []float64{0.5, 4}
	cfg.K = []int{5, 20}
	cfg.Sigma = []float64{0.45}
	out := filepath.Join(dir, "out")
	if err := Run(context.Background(), cfg, out, nil); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadResults(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 * 2 * 4 * 2 * 2; len(rows) != want {
		t.Fatalf("%d rows, want %d", len(rows), want)
	}
	for _, r := range rows {
		if r.Unit != "pair" && r.Unit != "party" {
			t.Fatalf("row without unit: %+v", r)
		}
		switch r.Method {
		case "public-only", "nonprivate":
			if r.GapRecovered == nil {
				t.Fatalf("%s: no gap", r.Method)
			}
			want := 0.0
			if r.Method == "nonprivate" {
				want = 1
			}
			if *r.GapRecovered != want {
				t.Errorf("%s gap %v, want %v", r.Method, *r.GapRecovered, want)
			}
		case "dplp-list":
			if r.EpsList == nil || *r.EpsList < 0 || *r.EpsList > r.Eps+1e-12 || r.Combine == nil || r.ListFit == nil {
				t.Fatalf("dplp-list row: %+v", r)
			}
			if r.Combine.W > 0 && *r.EpsList == 0 {
				t.Errorf("dplp-list reads the evidence but charged 0: %+v", r)
			}
		case "perturb-once":
			if r.EpsList == nil || (r.Unit == "pair" && *r.EpsList != r.Eps) || (r.Unit == "party" && *r.EpsList < r.Eps) {
				t.Fatalf("perturb-once cost: %+v", r)
			}
		}
	}
	// The same cell at K = 5 and K = 20 is charged the same (one charge
	// per list, independent of K) when the combination is the same.
	cost := map[string]float64{}
	for _, r := range rows {
		if r.Method == "dplp-list" && r.Combine.W > 0 {
			key := r.Score + r.Unit + fmtF(r.Eps)
			if c, ok := cost[key]; ok && math.Abs(c-*r.EpsList) > 1e-12 && *r.EpsList != 0 && c != 0 {
				t.Errorf("%s: list cost depends on K: %v vs %v", key, c, *r.EpsList)
			}
			cost[key] = *r.EpsList
		}
	}
	var lines []string
	cfg2 := cfg
	if err := run(context.Background(), cfg2, out, logTo(&lines), countingNone(t)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(lines, "\n"), "0 to run") {
		t.Errorf("rerun was not fully cached: %v", lines)
	}
}

// logTo collects log lines.
type lineLog struct{ lines *[]string }

func (l lineLog) Write(p []byte) (int, error) {
	*l.lines = append(*l.lines, string(p))
	return len(p), nil
}

func logTo(lines *[]string) lineLog { return lineLog{lines} }

// countingNone returns hooks that fail the test if anything is evaluated.
func countingNone(t *testing.T) hooks {
	h := defaultHooks()
	h.load = func(string) (*graph.Graph, error) {
		t.Error("a cached run loaded a graph")
		return nil, errors.New("no load expected")
	}
	return h
}

// TestListMethodsValidate: the list-level methods refuse the reference
// protocol and calibration, budgets and embeddings; units must parse.
func TestListMethodsValidate(t *testing.T) {
	dir := t.TempDir()
	g := tinyGraph(t, dir, "g", 60, 1)
	base := func() Config {
		c := DefaultConfig()
		c.Graphs = []string{g}
		c.Methods = []string{"public-only", "dplp-list"}
		return c
	}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		ok   bool
	}{
		{"ok", func(*Config) {}, true},
		{"pair", func(c *Config) { c.Units = []string{"pair", "party"} }, true},
		{"bad-unit", func(c *Config) { c.Units = []string{"edge"} }, false},
		{"dup-unit", func(c *Config) { c.Units = []string{"pair", "PAIR"} }, false},
		{"reference-protocol", func(c *Config) { c.Protocols = []string{"reference"} }, false},
		{"reference-calibration", func(c *Config) { c.Calibrations = []string{"reference"}; c.Protocols = []string{"reference"} }, false},
		{"budget", func(c *Config) { c.Eps = nil; c.Budgets = []string{"pure:1"} }, false},
		{"embedding", func(c *Config) { c.Scores = []string{"node2vec"} }, false},
		{"perturb-once", func(c *Config) { c.Methods = []string{"perturb-once"} }, true},
	} {
		c := base()
		tc.mod(&c)
		err := c.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v", tc.name, err)
		}
	}
}

// TestFillGaps: gap_recovered from the paired public-only and non-private
// rows; none when either is missing or they tie.
func TestFillGaps(t *testing.T) {
	row := func(m string, seed int, auc float64) Row {
		r := Row{Dataset: "d", Score: "cn", Method: m, Protocol: "clean", Sigma: 0.45, K: 30, Seed: seed}
		r.AUC = auc
		return r
	}
	rows := []Row{row("public-only", 0, 0.8), row("nonprivate", 0, 0.9), row("dplp-list", 0, 0.86),
		row("public-only", 1, 0.7), row("dplp-list", 1, 0.75), // no non-private for seed 1
		row("public-only", 2, 0.7), row("nonprivate", 2, 0.7), row("dplp-list", 2, 0.71)}
	fillGaps(rows)
	for i, want := range []float64{0, 1, 0.6, math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()} {
		g := rows[i].GapRecovered
		if math.IsNaN(want) != (g == nil) || (g != nil && math.Abs(*g-want) > 1e-12) {
			t.Errorf("row %d: gap %v, want %v", i, g, want)
		}
	}
}

// TestTopKMethodsRun: joint-em and oneshot-topk write rows with unit,
// eps_list (eps, or 0 for queries whose evidence bound is 0) and
// gap_recovered under both units and several K; at a very large eps under
// the pair unit they rank by the non-private score (up to tie-breaking);
// the validation rules of the list-level methods apply to them.
func TestTopKMethodsRun(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.Graphs = []string{tinyGraph(t, dir, "latent", 250, 4)}
	cfg.Scores = []string{"cn", "aa"}
	cfg.Units = []string{"pair", "party"}
	cfg.Methods = []string{"public-only", "nonprivate", "joint-em", "oneshot-topk"}
	cfg.Eps = []float64{0.5, 1e5}
	cfg.K = []int{5, 20}
	cfg.Sigma = []float64{0.45}
	out := filepath.Join(dir, "out")
	if err := Run(context.Background(), cfg, out, nil); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadResults(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	nonPrivate := map[string]float64{}
	for _, r := range rows {
		if r.Method == "nonprivate" {
			nonPrivate[r.Score+fmtF(float64(r.K))] = r.AUC
		}
	}
	var n int
	for _, r := range rows {
		if r.Method != "joint-em" && r.Method != "oneshot-topk" {
			continue
		}
		n++
		if r.Unit != "pair" && r.Unit != "party" || r.EpsList == nil || *r.EpsList < 0 || *r.EpsList > r.Eps*(1+1e-12) || r.GapRecovered == nil {
			t.Fatalf("%s row: %+v", r.Method, r)
		}
		if *r.EpsList == 0 {
			t.Errorf("%s: every query charged 0: %+v", r.Method, r)
		}
		if r.Eps == 1e5 && r.Unit == "pair" {
			if np := nonPrivate[r.Score+fmtF(float64(r.K))]; math.Abs(r.AUC-np) > 0.03 {
				t.Errorf("%s %s K=%d at eps 1e5: AUC@K %.4f, non-private %.4f", r.Method, r.Score, r.K, r.AUC, np)
			}
		}
	}
	if want := 2 * 2 * 2 * 2 * 2; n != want {
		t.Fatalf("%d joint-em/oneshot-topk rows, want %d", n, want)
	}
	for _, m := range []string{"joint-em", "oneshot-topk"} {
		c := DefaultConfig()
		c.Graphs = cfg.Graphs
		c.Methods = []string{m}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", m, err)
		}
		c.Protocols = []string{"reference"}
		if err := c.Validate(); err == nil {
			t.Errorf("%s accepted the reference protocol", m)
		}
	}
}

// TestPerPickPairUnit: per-pick mechanisms run under both units, each row
// carrying its unit; under the pair unit they are calibrated to the
// pair-unit per-candidate bound (1 for CN, below Delta_s(u)), so their
// lists differ from the party unit's and are at least as good on average,
// while non-private and public-only rows are the same under both units.
func TestPerPickPairUnit(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.Graphs = []string{tinyGraph(t, dir, "latent", 250, 4)}
	cfg.Scores = []string{"cn"}
	cfg.Units = []string{"party", "pair"}
	cfg.Methods = []string{"public-only", "nonprivate", "exponential", "laplace"}
	cfg.Eps = []float64{0.5}
	cfg.K = []int{10}
	cfg.Sigma = []float64{0.45}
	cfg.Seeds = 2
	out := filepath.Join(dir, "out")
	if err := Run(context.Background(), cfg, out, nil); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadResults(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	auc := map[string]float64{}
	for _, r := range rows {
		auc[fmt.Sprint(r.Method, "/", r.Unit, "/", r.Seed)] = r.AUC
	}
	var party, pair float64
	for _, m := range []string{"exponential", "laplace"} {
		for seed := range 2 {
			a, okA := auc[fmt.Sprint(m, "/party/", seed)]
			b, okB := auc[fmt.Sprint(m, "/pair/", seed)]
			if !okA || !okB {
				t.Fatalf("%s seed %d: missing a unit's row (%v)", m, seed, auc)
			}
			party += a
			pair += b
		}
	}
	// On this graph Delta_s(u) is several wedges and the pair bound 1: the
	// party-unit lists are near random, the pair-unit ones near the
	// non-private ranking (sums over four cells: about 0.6 against 3.8).
	if pair <= party+1 {
		t.Errorf("pair-unit per-pick lists (sum AUC %.4f) not clearly better than party-unit ones (%.4f): the pair calibration is not used", pair, party)
	}
	// ... and still noisy: as many queries released with noise as under
	// the party unit (a query has a protected pair that can move its
	// scores under one unit iff under the other), and fewer than all.
	zero := map[string]int{}
	for _, r := range rows {
		if r.Method == "exponential" {
			zero[r.Unit] += r.ZeroNoise
			if r.ZeroNoise >= r.Queries {
				t.Errorf("%s unit %s seed %d: every query released without noise", r.Method, r.Unit, r.Seed)
			}
		}
	}
	if zero["pair"] != zero["party"] {
		t.Errorf("noise-free queries: %d under pair, %d under party", zero["pair"], zero["party"])
	}

}
