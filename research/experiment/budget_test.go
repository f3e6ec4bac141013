package experiment

import (
	"context"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dplp/dplp/accountant"
)

func TestParseBudget(t *testing.T) {
	for _, c := range []struct {
		in, want string
	}{
		{"pure:3", "pure:3"},
		{" PURE : 0.5 ", "pure:0.5"},
		{"approx:3,1e-6", "approx:3,1e-06"},
		{"Approx:1, 0.001", "approx:1,0.001"},
	} {
		b, err := ParseBudget(c.in)
		if err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		if b.String() != c.want {
			t.Fatalf("%q: got %s, want %s", c.in, b, c.want)
		}
		if b2, err := ParseBudget(b.String()); err != nil || b2 != b {
			t.Fatalf("%q: canonical form does not read back: %v %v", c.in, b2, err)
		}
	}
	for _, c := range []struct{ in, msg string }{
		{"3", "want pure:EPS"},
		{"renyi:3", "unknown kind"},
		{"pure:NaN", "not a finite number"},
		{"pure:Inf", "not a finite number"},
		{"pure:x", "not a finite number"},
		{"pure:0", "must be > 0"},
		{"pure:-1", "must be > 0"},
		{"pure:1,1e-6", "pure takes one number"},
		{"approx:3", "approx takes two numbers"},
		{"approx:3,1e-6,2", "approx takes two numbers"},
		{"approx:3,0", "delta 0 must be in (0, 1)"},
		{"approx:3,1", "must be in (0, 1)"},
		{"approx:3,-1e-6", "must be in (0, 1)"},
		{"approx:3,Inf", "not a finite number"},
		{"approx:inf,1e-6", "not a finite number"},
	} {
		if _, err := ParseBudget(c.in); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Fatalf("%q: error %v, want one containing %q", c.in, err, c.msg)
		}
	}
}

func TestBudgetEpsPerPick(t *testing.T) {
	for _, k := range []int{1, 10, 30} {
		b, _ := ParseBudget("pure:3")
		e, err := b.EpsPerPick(k)
		if err != nil || e != 3/float64(k) {
			t.Fatalf("pure:3 at k %d: %v %v", k, e, err)
		}
		b, _ = ParseBudget("approx:3,1e-6")
		e, err = b.EpsPerPick(k)
		want, werr := accountant.MaxEpsPerPick(3, 1e-6, 1, k)
		if err != nil || werr != nil || e != want {
			t.Fatalf("approx:3,1e-6 at k %d: %v %v, accountant %v %v", k, e, err, want, werr)
		}
		// The derived eps_p spends the budget: (3, 1e-6)-DP, and not
		// below pure composition.
		got, err := accountant.Release{Lists: 1, K: k, EpsP: e}.ApproxEps(1e-6)
		if err != nil || got > 3*(1+1e-9) || e < 3/float64(k) {
			t.Fatalf("k %d: eps_p %v gives (%v, 1e-6)-DP (%v)", k, e, got, err)
		}
		if k == 30 && !(e > 2*3/float64(k)) {
			t.Fatalf("k 30: approx eps_p %v should be well above the pure %v", e, 3/float64(k))
		}
	}
	if _, err := (Budget{Kind: "pure", Eps: 1}).EpsPerPick(0); err == nil {
		t.Fatal("k 0 accepted")
	}
}

// TestBudgetConfig: budgets in a configuration file (the --budget flag:
// cmd/dplp/internal/cli/expflags_test.go).
func TestBudgetConfig(t *testing.T) {
	dir := t.TempDir()
	g := tinyGraph(t, dir, "alpha", 50, 1)
	path := filepath.Join(dir, "c.json")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"graphs": ["alpha.txt"], "budgets": ["pure:3", "approx:3,1e-6"]}`)
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil || len(cfg.Eps) != 0 || len(cfg.Budgets) != 2 || cfg.Graphs[0] != g {
		t.Fatalf("config %+v: %v", cfg, err)
	}
	write(`{"graphs": ["alpha.txt"], "eps": [0.1], "budgets": ["pure:3"]}`)
	if cfg, err = LoadConfig(path); err == nil {
		err = cfg.Validate()
	}
	if err == nil || !strings.Contains(err.Error(), "not both") {
		t.Fatalf("eps and budgets in a file: %v", err)
	}
}

// TestBudgetRun runs a small grid with budgets: every cell records its
// budget and the derived eps_p; budget-free methods share one evaluation
// across budgets, the others are keyed by the budget; the summary has one
// table per budget; a rerun is fully cached.
func TestBudgetRun(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig(tinyGraph(t, dir, "alpha", 80, 1))
	cfg.Scores = []string{"aa"}
	cfg.Methods = []string{"nonprivate", "public-only", "exponential", "dplp", "dplp-pub"}
	cfg.Eps = nil
	cfg.Budgets = []string{"pure:3", "approx:3,1e-6"}
	cfg.K = []int{5, 10}
	out := filepath.Join(dir, "out")
	var evals, trains atomic.Int64
	if err := run(context.Background(), cfg, out, nil, counting(&evals, &trains)); err != nil {
		t.Fatal(err)
	}
	// 2 eps-free methods x 2 k x 2 seeds, plus 3 private methods x 2
	// budgets x 2 k x 2 seeds.
	if want := int64(2*2*2 + 3*2*2*2); evals.Load() != want {
		t.Fatalf("%d evaluations, want %d", evals.Load(), want)
	}
	rows, err := ReadResults(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if want := 5 * 2 * 2 * 2; len(rows) != want {
		t.Fatalf("%d rows, want %d", len(rows), want)
	}
	for _, r := range rows {
		b, err := ParseBudget(r.Budget)
		if err != nil || b.String() != r.Budget {
			t.Fatalf("row budget %q: %v", r.Budget, err)
		}
		want, _ := b.EpsPerPick(r.K)
		if r.Eps != want {
			t.Fatalf("row %s %s k %d: eps %v, want %v", r.Method, r.Budget, r.K, r.Eps, want)
		}
		if r.Method == "exponential" && (r.EpsSpent == nil || math.Abs(*r.EpsSpent-float64(r.K)*r.Eps) > 1e-9*float64(r.K)) {
			t.Fatalf("exponential eps_spent %v, want K x eps_p %v", r.EpsSpent, float64(r.K)*r.Eps)
		}
	}
	f, err := os.Open(filepath.Join(out, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if h := recs[0]; slices.Index(h, "budget") < 0 || recs[1][slices.Index(h, "budget")] != rows[0].Budget {
		t.Fatalf("csv header %v, first row %v", h, recs[1])
	}
	sum, err := os.ReadFile(filepath.Join(out, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"budget pure:3 per list (eps_p = 0.6 per pick)", "budget approx:3,1e-06 per list",
		"at most the budget"} {
		if !strings.Contains(string(sum), s) {
			t.Fatalf("summary lacks %q:\n%s", s, sum)
		}
	}
	// The budget is in the key of private cells only.
	p, _ := cfg.parse(true)
	cells, _ := p.expand()
	for _, c := range cells {
		k := p.key(c, "")
		if (k.Budget == "") != c.method.epsFree() {
			t.Fatalf("%s: key budget %q", c.method.name, k.Budget)
		}
	}
	evals.Store(0)
	if err := run(context.Background(), cfg, out, nil, counting(&evals, &trains)); err != nil {
		t.Fatal(err)
	}
	if evals.Load() != 0 {
		t.Fatalf("rerun evaluated %d cells", evals.Load())
	}
	// A pure budget deriving the same eps_p as an --eps value is a
	// different cell (the key holds the budget).
	c0 := cells[len(cells)-1]
	c1 := c0
	c1.budget = ""
	if hashKey(p.key(c0, "")) == hashKey(p.key(c1, "")) {
		t.Fatal("budget not in the cache key")
	}
}
