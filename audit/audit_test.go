package audit

import (
	"testing"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/score"
)

func TestDefaultCalibrationPasses(t *testing.T) {
	cfg := Default()
	if testing.Short() {
		cfg.Graphs = 3
	}
	rep, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rep.Rows {
		t.Logf("%-16s K=%d cases=%d worst=%.4f bound=%.4f violations=%d", row.Method, row.K, row.Cases, row.Worst, row.Bound, row.Violations)
	}
	if !rep.Passed() {
		t.Fatalf("audit failed: violations=%d score=%d chi=%d worst=%+v", rep.Violations, rep.ScoreViolations, rep.ChiFailures, rep.Worst)
	}
	if rep.Cases == 0 || rep.ScoreChecks == 0 || len(rep.Chi) == 0 {
		t.Fatal("audit checked nothing")
	}
}

// seededRows counts the seeded samplers' chi-square rows and their
// failures.
func seededRows(rep *Report) (rows, failed int) {
	for _, c := range rep.Chi {
		if c.Method == SeededWalkMethod || c.Method == SeededKeyedMethod {
			rows++
			if !(c.P >= chiAlpha) {
				failed++
			}
		}
	}
	return rows, failed
}

// The seeded samplers' rows pass with the default audit, and their
// negative control (the walk's draws given to the ids in ascending order)
// fails.
func TestSeededSamplerRows(t *testing.T) {
	cfg := Default()
	cfg.Graphs = 1
	cfg.Methods = []calib.Method{calib.Exponential}
	cfg.Kinds = []score.Kind{score.AA, score.CN}
	cfg.ChiSamples = 10000
	rep, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rows, failed := seededRows(rep); rows == 0 || failed > 0 {
		t.Fatalf("seeded sampler rows: %d, %d failed", rows, failed)
	}
	walkInIDOrder = true
	defer func() { walkInIDOrder = false }()
	rep, err = Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rows, failed := seededRows(rep); rows == 0 || failed == 0 {
		t.Fatalf("walk in id order: %d seeded rows, none failed: the negative control cannot fail", rows)
	}
}

func TestReferenceCalibrationFails(t *testing.T) {
	cfg := Default()
	cfg.Calibration = calib.Reference
	cfg.Graphs = 3
	cfg.ChiSamples = 0
	cfg.Methods = []calib.Method{calib.Exponential, calib.Laplace, calib.Staircase}
	rep, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Violations == 0 {
		t.Fatalf("reference calibration passed the audit: worst %v bound %v", rep.WorstLogRatio, rep.Bound)
	}
	t.Logf("reference: %d violations of %d cases, worst %v", rep.Violations, rep.Cases, rep.WorstLogRatio)
}

// brokenTransform claims half the true sensitivity: the audit must catch it.
type brokenTransform struct{}

func (brokenTransform) Utility(s, _, _ float64) float64 { return s }
func (brokenTransform) Delta(d, _ float64) float64      { return d / 4 }

func TestBrokenCalibrationFails(t *testing.T) {
	cfg := Default()
	cfg.Graphs = 4
	cfg.ChiSamples = 0
	cfg.Eps = 1
	cfg.Methods = []calib.Method{calib.Exponential}
	cfg.Transforms = map[score.Kind]calib.Transform{score.CN: brokenTransform{}}
	cfg.Label = "broken"
	rep, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Violations == 0 {
		t.Fatalf("under-calibrated noise passed: worst %v bound %v", rep.WorstLogRatio, rep.Bound)
	}
}

// TestRunPairUnit: per-pick mechanisms calibrated for the pair unit pass
// the exact audit over single-pair neighbours, and fail it (the negative
// control) over party neighbours, where one party's several pairs move
// scores by more than the pair-unit bound.
func TestRunPairUnit(t *testing.T) {
	cfg := Default()
	cfg.Graphs = 6
	cfg.ChiSamples = 0
	cfg.Kinds = []score.Kind{score.CN, score.AA}
	cfg.Methods = []calib.Method{calib.Exponential, calib.Laplace}
	cfg.Unit = privunit.Pair
	rep, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Passed() || rep.Cases == 0 || rep.Unit != "pair" || rep.Neighbours != "pair" {
		t.Fatalf("pair calibration over pair neighbours: %d cases, %d violations, %d score violations (%s/%s)", rep.Cases, rep.Violations, rep.ScoreViolations, rep.Unit, rep.Neighbours)
	}
	cfg.Neighbours, cfg.NeighboursSet = privunit.Party, true
	bad, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if bad.Violations == 0 {
		t.Fatal("pair calibration audited against party neighbours: no violation (the negative control is not caught)")
	}
	if bad.ScoreViolations != 0 {
		t.Fatalf("score checks failed under party neighbours: %d", bad.ScoreViolations)
	}
}
