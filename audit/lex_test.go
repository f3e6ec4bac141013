package audit

import (
	"testing"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/score"
)

// lexTransform is the lexicographic mechanism on the raw score: rank by
// s_pub, exponential mechanism on s within ties (Delta = Delta_s / div).
type lexTransform struct{ div float64 }

func (lexTransform) Utility(s, _, _ float64) float64 { return s }
func (t lexTransform) Delta(d, _ float64) float64    { return d / t.div }
func (lexTransform) Lexicographic() bool             { return true }

func lexConfig(div float64) Config {
	cfg := Default()
	cfg.Graphs = 4
	cfg.Eps = 1
	cfg.Methods = []calib.Method{calib.Exponential}
	cfg.Kinds = []score.Kind{score.CN, score.AA, score.JC}
	cfg.Transforms = map[score.Kind]calib.Transform{}
	for _, k := range cfg.Kinds {
		cfg.Transforms[k] = lexTransform{div}
	}
	cfg.Label = "lex"
	return cfg
}

// TestLexicographicAuditPasses: every list's log-ratio is within its own
// cost (random picks x eps_p), the cost is invariant, the sampler matches
// the exact lexicographic distribution, and some lists cost less than
// K x eps_p (picks fixed by the public scores are free).
func TestLexicographicAuditPasses(t *testing.T) {
	cfg := lexConfig(1)
	cfg.ChiSamples = 5000
	rep, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Passed() || rep.Cases == 0 || len(rep.Chi) == 0 {
		t.Fatalf("lexicographic audit: violations %d, score %d, chi %d, cases %d, worst %+v", rep.Violations, rep.ScoreViolations, rep.ChiFailures, rep.Cases, rep.Worst)
	}
	// Cheaper than K x eps_p somewhere: the worst case relative to its own
	// bound is reported; check directly that a free pick exists.
	g, p, _, err := randomGraph(&cfg, randx.Seeded(5))
	if err != nil {
		t.Fatal(err)
	}
	c := calib.Config{Method: calib.Exponential, Kind: score.CN, Eps: 1, Transform: lexTransform{1}}
	cheaper := false
	for u := int32(0); int(u) < g.N() && !cheaper; u++ {
		q, err := buildQuery(g, p, score.CN, u)
		if err != nil || len(q.cands) < 3 {
			continue
		}
		plan := c.Plan(q.info)
		if plan.Exact() {
			continue
		}
		b, _, err := listBound(3, &plan, &plan, q.pub, q.pub, 3)
		if err != nil {
			t.Fatal(err)
		}
		cheaper = b < 3
	}
	if !cheaper {
		t.Error("no list cheaper than K x eps_p: free picks are never used")
	}
}

// TestLexicographicAuditDetectsUnderCalibration: the per-list check has
// teeth: a Delta four times too small is caught.
func TestLexicographicAuditDetectsUnderCalibration(t *testing.T) {
	cfg := lexConfig(4)
	cfg.ChiSamples = 0
	rep, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Violations == 0 {
		t.Fatalf("under-calibrated lexicographic mechanism passed: worst %v bound %v", rep.WorstLogRatio, rep.Bound)
	}
}
