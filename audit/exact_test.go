package audit

import (
	"testing"
	"time"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/mech/exact"
)

func TestRunExactPasses(t *testing.T) {
	cfg := Default()
	start := time.Now()
	rep, err := RunExact(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Passed() || rep.Cases == 0 || len(rep.Chi) == 0 {
		t.Fatalf("exact audit failed: %+v", rep)
	}
	if rep.WorstLogRatio <= 0 || rep.WorstLogRatio > rep.Bound {
		t.Fatalf("worst %v bound %v", rep.WorstLogRatio, rep.Bound)
	}
	for _, r := range rep.Rows {
		if r.Method != ExactMethod || r.Worst > float64(r.K)*cfg.Eps {
			t.Fatalf("row %+v", r)
		}
	}
	if rows, failed := anonRows(rep); rows == 0 || failed > 0 {
		t.Fatalf("%d anonymous-block chi-square rows, %d failed", rows, failed)
	}
	t.Logf("%d cases, worst %.4f of bound %.4f, %d chi-square tests (min p %.3g), %v", rep.Cases, rep.WorstLogRatio, rep.Bound, len(rep.Chi), rep.MinChiP, time.Since(start))
}

func TestRunExactRefusesReference(t *testing.T) {
	cfg := Default()
	cfg.Calibration = calib.Reference
	if _, err := RunExact(cfg); err == nil {
		t.Fatal("reference calibration accepted")
	}
}

// TestExactRatioCheck: the exact check accepts a move of Delta and rejects
// a move of 9 Delta (on the listed candidate).
func TestExactRatioCheck(t *testing.T) {
	s, err := exact.New(0.5, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		b    []float64
		want bool
	}{{[]float64{0, 2, 1}, true}, {[]float64{1, 0, 2}, true}, {[]float64{0, 10, 1}, false}} {
		lists := [][]int{{1}, {1, 0}, {0, 2}}
		if !c.want {
			lists = lists[:1] // the K = 1 list of the moved candidate breaks eps
		}
		for _, l := range lists {
			ok, err := exactRatioOK(s, []float64{0, 1, 1}, c.b, l)
			if err != nil {
				t.Fatal(err)
			}
			if ok != c.want {
				t.Fatalf("%v list %v: %v", c.b, l, ok)
			}
		}
	}
}

// anonRows counts the chi-square rows of the anonymous-block path and
// those that failed.
func anonRows(rep *Report) (rows, failed int) {
	for _, c := range rep.Chi {
		if c.Method == ExactAnonMethod {
			rows++
			if !(c.P >= chiAlpha) {
				failed++
			}
		}
	}
	return rows, failed
}

// TestExactAnonRows: the negative control of the exact audit's
// anonymous-block rows (exponential-exact-lazy-anon, which pass in
// TestRunExactPasses): with the block picks left unmapped (the t-th pick
// taken as the block's t-th member) they fail.
func TestExactAnonRows(t *testing.T) {
	anonUnmapped = true
	defer func() { anonUnmapped = false }()
	cfg := Default()
	cfg.Graphs = 2 // the chi-square cases come from the first graphs' users
	rep, err := RunExact(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rows, failed := anonRows(rep); rows == 0 || failed == 0 {
		t.Fatalf("unmapped block picks: %d rows, none failed: the negative control cannot fail", rows)
	}
}
