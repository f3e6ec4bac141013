package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplp/dplp/randx"
)

func TestRankLoss(t *testing.T) {
	d := []float64{1, 3, 2, 5}
	cases := []struct {
		picks []int
		want  float64
	}{
		{[]int{0, 2, 1, 3}, 0}, // increasing distances: no inversion
		{[]int{3, 1}, 2},       // 5 before 3
		{[]int{3, 1, 2, 0}, 2 + 3 + 4 + 1 + 2 + 1},
		{[]int{1}, 0},
	}
	for _, c := range cases {
		if got := rankLoss(d, c.picks); got != c.want {
			t.Errorf("rankLoss(%v) = %v, want %v", c.picks, got, c.want)
		}
	}
}

// TestUniformLimits checks the closed forms used for the eps_p -> 0 limits
// against brute force: the mean pairwise gap behind rank_loss_uniform.
func TestUniformLimits(t *testing.T) {
	r := randx.Seeded(3)
	for trial := 0; trial < 50; trial++ {
		m := 2 + r.IntN(30)
		d := make([]float64, m)
		for i := range d {
			d[i] = math.Floor(r.Float64()*10) / 4 // ties on purpose
		}
		var brute float64
		for a := range d {
			for b := range d {
				if a != b && d[a] > d[b] {
					brute += d[a] - d[b]
				}
			}
		}
		brute /= float64(m * (m - 1))
		gap := meanPairGap(d)
		if math.Abs(gap-brute) > 1e-12 {
			t.Fatalf("pair gap %v, brute force %v", gap, brute)
		}
	}
}

func tinyTheory() TheoryConfig {
	return TheoryConfig{Nodes: []int{80, 160}, BaseNodes: 160, Dim: 2, MeanDegree: 8, Scores: []string{"cn", "jc"},
		Eps: []float64{1e-4, 1, 1e5}, BaseEps: 1, K: []int{2, 5}, BaseK: 5, Sigma: 0.3, Queries: 30, Draws: 40, Seeds: 2}
}

func TestTheory(t *testing.T) {
	dir := t.TempDir()
	tc := tinyTheory()
	cfg := Config{Theory: &tc}
	var log bytes.Buffer
	if err := Run(context.Background(), cfg, dir, &log); err != nil {
		t.Fatal(err)
	}
	var rows []TheoryRow
	data, err := os.ReadFile(filepath.Join(dir, "theory.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rows); err != nil {
		t.Fatal(err)
	}
	// Points: 3 eps + 2 K + 2 nodes, minus the shared (160, eps 1, K 5)
	// counted three times: 5, for 2 scores and 2 seeds.
	if len(rows) != 5*2*2 {
		t.Fatalf("%d rows, want 20", len(rows))
	}
	for _, r := range rows {
		if r.RelLoss < -1e-9 || r.RankLoss < 0 || r.RelLossEps0 < -1e-9 || r.Queries == 0 {
			t.Fatalf("bad row %+v", r)
		}
		switch r.Eps {
		case 1e5: // exact top-K in the limit
			if r.RelLoss > 0.05*r.RelLossEps0+1e-9 {
				t.Errorf("eps->inf: L_rel %v not ~0 (limit at 0: %v)", r.RelLoss, r.RelLossEps0)
			}
			if math.Abs(r.RankLoss-r.RankLossNonpri) > 0.1*r.RankLossUnif+1e-9 {
				t.Errorf("eps->inf: R %v vs non-private %v", r.RankLoss, r.RankLossNonpri)
			}
		case 1e-4: // uniform in the limit: Monte Carlo within a loose band
			if math.Abs(r.RelLoss-r.RelLossEps0) > 0.25*r.RelLossEps0+1e-9 {
				t.Errorf("eps->0: L_rel %v vs exact limit %v", r.RelLoss, r.RelLossEps0)
			}
			if math.Abs(r.RankLoss-r.RankLossUnif) > 0.25*r.RankLossUnif+1e-9 {
				t.Errorf("eps->0: R %v vs uniform %v", r.RankLoss, r.RankLossUnif)
			}
		}
	}
	sum, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
	for _, want := range []string{"Verdict (machine-generated)", "**CN.**", "**JC.**", "eps_p -> infinity", "| eps_p | L_rel"} {
		if !strings.Contains(string(sum), want) {
			t.Fatalf("summary lacks %q", want)
		}
	}
	for _, name := range []string{"theory_rel_loss_vs_eps_cn", "theory_rank_loss_vs_eps_jc", "theory_rank_loss_vs_k", "theory_rank_loss_vs_nodes"} {
		for _, ext := range []string{".png", ".svg"} {
			if st, err := os.Stat(filepath.Join(dir, "plots", name+ext)); err != nil || st.Size() == 0 {
				t.Fatalf("plot %s%s: %v", name, ext, err)
			}
		}
	}
	// Rerun: everything cached, same output.
	log.Reset()
	if err := Run(context.Background(), cfg, dir, &log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "20 cached, 0 to run") {
		t.Fatalf("rerun not cached: %s", log.String())
	}
	again, _ := os.ReadFile(filepath.Join(dir, "theory.json"))
	if !bytes.Equal(data, again) {
		t.Fatal("theory.json changed on a cached rerun")
	}
}

func TestTheoryValidate(t *testing.T) {
	mods := []func(*TheoryConfig){
		func(c *TheoryConfig) { c.Nodes = []int{5} },
		func(c *TheoryConfig) { c.Dim = 0 },
		func(c *TheoryConfig) { c.Eps = []float64{-1} },
		func(c *TheoryConfig) { c.K = []int{0} },
		func(c *TheoryConfig) { c.Sigma = 2 },
		func(c *TheoryConfig) { c.Scores = []string{"zz"} },
		func(c *TheoryConfig) { c.MeanDegree = 1000 },
		func(c *TheoryConfig) { c.Draws = 0 },
	}
	for i, m := range mods {
		c := tinyTheory()
		m(&c)
		if err := c.validate(); err == nil {
			t.Errorf("case %d accepted", i)
		}
	}
	c := tinyTheory()
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	p, err := Preset("theory", "")
	if err != nil || p.Theory == nil || p.Validate() != nil {
		t.Fatalf("theory preset: %v", err)
	}
}
