package experiment

import (
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/research/evaluate"
	"github.com/dplp/dplp/research/protocol"
	"github.com/dplp/dplp/research/refdplp"
	"github.com/dplp/dplp/score"
)

// The authors' noise is used for dplp, dplp-lin and dplp-umnn under the
// reference calibration only (which itself exists only with the reference
// protocol): every other pairing, and dplp-pub always, is refused it.
func TestRefMethodOnlyUnderReferenceCalibration(t *testing.T) {
	for _, name := range []string{"dplp", "dplp-lin", "dplp-umnn", "dplp-pub", "exponential", "nonprivate", "power:2"} {
		m, err := parseMethod(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, cal := range []calib.Calibration{calib.Rigorous, calib.Reference} {
			for _, prot := range []protocol.Kind{protocol.Clean, protocol.Reference, protocol.Deployment} {
				c := cell{method: m, cal: cal, prot: prot, eps: 0.1, k: 30}
				got, ok := refMethod(c)
				want := cal == calib.Reference && prot == protocol.Reference && (name == "dplp" || name == "dplp-lin" || name == "dplp-umnn")
				if ok != want {
					t.Errorf("%s %s/%s: authors' noise %v, want %v", name, prot, cal, ok, want)
				}
				if ok && got.String() != name {
					t.Errorf("%s: method %s", name, got)
				}
				p := &plan{cfg: Config{}, datasets: []string{"g"}}
				if k := p.key(c, ""); (k.RefNoise != "") != want {
					t.Errorf("%s %s/%s: cache key ref_noise %q", name, prot, cal, k.RefNoise)
				}
			}
		}
	}
}

// End to end on a small synthetic graph: under the reference protocol with
// both calibrations, the reference-calibrated dplp, dplp-lin and dplp-umnn
// rows are the authors' DPLP, labelled (noise column, summary) and audited
// (eps_eff), never through our trainer or release; the rigorous rows and
// dplp-pub are not; a rerun is fully cached.
func TestRefDPLPRows(t *testing.T) {
	dir := t.TempDir()
	cfg := DefaultConfig()
	cfg.Graphs = []string{tinyGraph(t, dir, "g", 150, 3)}
	cfg.Scores = []string{"aa"}
	cfg.Methods = []string{"nonprivate", "dplp", "dplp-lin", "dplp-umnn", "dplp-pub", "exponential"}
	cfg.Protocols = []string{"reference"}
	cfg.Calibrations = []string{"rigorous", "reference"}
	cfg.Eps = []float64{0.5}
	cfg.K = []int{10}
	cfg.Epochs = 3
	out := filepath.Join(dir, "out")
	var evals, trains atomic.Int64
	h := counting(&evals, &trains)
	var refEvals atomic.Int64
	eval := h.eval
	h.eval = func(s *protocol.Split, sc *score.Scorer, c calib.Config, k int, seed uint64) (evaluate.Result, error) {
		if c.Calibration == calib.Reference {
			refEvals.Add(1)
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
	if len(rows) != 6*2 { // 6 methods x 2 calibrations
		t.Fatalf("%d rows, want 12", len(rows))
	}
	var ref int
	for _, r := range rows {
		authors := r.Calibration == "reference" && slices.Contains([]string{"dplp", "dplp-lin", "dplp-umnn"}, r.Method)
		if !authors {
			if r.Noise != "" || r.EpsEffMedian != nil || r.EpsEffMax != nil || r.NoiseMultiplier != nil {
				t.Fatalf("row %s/%s carries the authors' noise label: %+v", r.Method, r.Calibration, r)
			}
			continue
		}
		ref++
		if r.Noise != RefNoiseNote || !strings.Contains(r.Noise, "NO privacy guarantee") {
			t.Fatalf("%s row not labelled: %q", r.Method, r.Noise)
		}
		if r.EpsEffMedian == nil || r.EpsEffMax == nil || r.NoiseMultiplier == nil || *r.EpsEffMax < *r.EpsEffMedian || *r.EpsEffMedian < 0 {
			t.Fatalf("%s row without a consistent audit: %+v", r.Method, r.Result)
		}
		if r.Queries <= 0 || r.AUC < 0 || r.AUC > 1 || r.EpsSpent != nil || r.TrainSeconds <= 0 || r.ROCAUC == nil {
			t.Fatalf("bad %s row %+v", r.Method, r.Result)
		}
		if r.Method == "dplp" && *r.NoiseMultiplier >= 0 {
			t.Fatalf("dplp multiplier %v: the sum of the raw Lin parameters starts at -16900", *r.NoiseMultiplier)
		}
	}
	if ref != 3 {
		t.Fatalf("%d rows with the authors' noise, want 3", ref)
	}
	// Our trainer ran for dplp, dplp-lin, dplp-umnn under the rigorous
	// calibration and for dplp-pub under both; the reference calibration's
	// own evaluation path only saw exponential.
	if n := trains.Load(); n != 5 {
		t.Fatalf("%d trainings by our trainer, want 5", n)
	}
	if n := refEvals.Load(); n != 1 {
		t.Fatalf("%d reference-calibrated releases through calib, want 1 (exponential)", n)
	}
	sum, _ := os.ReadFile(filepath.Join(out, "summary.md"))
	for _, want := range []string{calib.Warning, "the authors' own DPLP re-implemented", "Effective eps per pick of the authors' DPLP noise",
		"- g AA: dplp median "} {
		if !strings.Contains(string(sum), want) {
			t.Fatalf("summary lacks %q:\n%s", want, sum)
		}
	}
	if strings.Contains(string(sum), "DPLP-family methods are trained with the authors' data choices but released with the rigorous") {
		t.Fatal("summary keeps the old note")
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
	col := slices.Index(recs[0], "noise")
	var labelled int
	for _, rec := range recs[1:] {
		if rec[col] == RefNoiseNote {
			labelled++
		}
	}
	if col < 0 || labelled != 3 {
		t.Fatalf("csv noise column %d labels %d rows, want 3", col, labelled)
	}

	// Rerun: everything cached, the same rows.
	evals.Store(0)
	trains.Store(0)
	if err := run(context.Background(), cfg, out, nil, h); err != nil {
		t.Fatal(err)
	}
	again, _ := ReadResults(filepath.Join(out, "results.json"))
	if evals.Load() != 0 || trains.Load() != 0 || len(again) != len(rows) {
		t.Fatalf("rerun evaluated %d and trained %d", evals.Load(), trains.Load())
	}
	for i := range rows {
		if rows[i].AUC != again[i].AUC || rows[i].Noise != again[i].Noise {
			t.Fatalf("rerun row %d differs", i)
		}
	}
}

// refConfig keeps the authors' epochs unless Config.Epochs is set, and
// shares one noise seed across eps_p and methods of a split.
func TestRefConfig(t *testing.T) {
	dplp, _ := parseMethod("dplp")
	lin, _ := parseMethod("dplp-lin")
	r := &runner{p: &plan{datasets: []string{"g"}}}
	a := r.refConfig(cell{method: dplp, eps: 0.1, cal: calib.Reference, prot: protocol.Reference})
	b := r.refConfig(cell{method: lin, eps: 0.5, cal: calib.Reference, prot: protocol.Reference})
	def := refdplp.DefaultConfig(0.1)
	if a.LinEpochs != def.LinEpochs || a.DPLPEpochs != def.DPLPEpochs || a.Seed != b.Seed || b.Eps != 0.5 {
		t.Fatalf("configs %+v, %+v", a, b)
	}
	c := r.refConfig(cell{method: dplp, eps: 0.1, seed: 1, cal: calib.Reference, prot: protocol.Reference})
	if c.Seed == a.Seed {
		t.Fatal("two seeds share a noise table")
	}
	r.p.cfg.Epochs = 1
	if d := r.refConfig(cell{method: dplp, eps: 0.1}); d.LinEpochs != 2 || d.DPLPEpochs != 1 {
		t.Fatalf("epochs override: %+v", d)
	}
}
