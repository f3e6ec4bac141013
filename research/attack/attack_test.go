package attack

import (
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/research/gen"
	"github.com/dplp/dplp/score"
)

// testGraph is a 300-node latent-space graph (mean degree 10) with 30% of
// its edges and 1% of the non-edges protected.
func testGraph(t testing.TB) (*graph.Graph, *protect.Set) {
	t.Helper()
	r, err := gen.RadiusForMeanDegree(300, 2, 10)
	if err != nil {
		t.Fatal(err)
	}
	lg, err := gen.Latent(300, 2, r, randx.Seeded(7))
	if err != nil {
		t.Fatal(err)
	}
	p, err := protect.Synthetic(lg.Graph, 0.3, 0.01, randx.Seeded(8))
	if err != nil {
		t.Fatal(err)
	}
	return lg.Graph, p
}

func run(t testing.TB, g *graph.Graph, p *protect.Set, cfg Config) *Result {
	t.Helper()
	res, err := Run(g, p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s %s/%s eps %g K %d L %d: tpr %.3f fpr %.3f acc %.3f eps_lb %.3f claim %v (%s) target %v",
		res.Attack, res.Method, res.Calibration, cfg.Eps, cfg.K, res.Lists, res.TPR, res.FPR, res.Accuracy,
		res.EpsLowerBound, res.Claimed(), res.ClaimNote, res.Target)
	return res
}

// provenMethods are the mechanisms with a proven guarantee under the
// rigorous calibration.
var provenMethods = []calib.Method{calib.Exponential, calib.LaplacePeeling}

func base(at Kind, m calib.Method, cal calib.Calibration, eps float64, k, lists int) Config {
	return Config{Attack: at, Method: m, Calibration: cal, Score: score.CN, Eps: eps, K: k, Lists: lists, Trials: 300, Seed: 1}
}

// (a) Without noise, and with the reference calibration, the attacks win
// almost always: eps_lb is far above the claim.
func TestNonPrivateAndReferenceBroken(t *testing.T) {
	g, p := testGraph(t)
	// Perfect separation on 300 trials gives eps_lb about 3.7.
	for _, at := range []Kind{Triad, Sybil, NoNoise} {
		res := run(t, g, p, base(at, calib.NonPrivate, calib.Rigorous, 0.1, 5, 1))
		if res.Accuracy < 0.95 || res.EpsLowerBound < 2.5 || res.EpsClaimed != nil {
			t.Errorf("%v non-private: accuracy %.3f, eps_lb %.3f, claim %v; want >= 0.95, >= 2.5, none", at, res.Accuracy, res.EpsLowerBound, res.EpsClaimed)
		}
	}
	for _, m := range []calib.Method{calib.Exponential, calib.Laplace} {
		for _, at := range []Kind{NoNoise, Sybil} {
			res := run(t, g, p, base(at, m, calib.Reference, 0.1, 5, 1))
			if res.Accuracy < 0.95 || res.EpsLowerBound < 2*res.Claimed() || !res.ExceedsClaim || res.ClaimProven {
				t.Errorf("%v %v reference: accuracy %.3f, eps_lb %.3f vs claim %.3g (exceeds %v, proven %v); want the claim refuted",
					at, m, res.Accuracy, res.EpsLowerBound, res.Claimed(), res.ExceedsClaim, res.ClaimProven)
			}
		}
	}
}

// (b) The rigorous calibration's measured loss stays within its claim, in
// the same settings where (c) catches a mis-calibrated release.
func TestRigorousWithinClaim(t *testing.T) {
	g, p := testGraph(t)
	for _, m := range provenMethods {
		for _, at := range []Kind{Triad, Sybil, NoNoise} {
			for _, eps := range []float64{0.05, 0.2, 1} {
				res := run(t, g, p, base(at, m, calib.Rigorous, eps, 2, 1))
				if !res.ClaimProven || res.EpsLowerBound > res.Claimed() || res.ExceedsClaim {
					t.Errorf("%v %v eps %g: eps_lb %.3f > claim %.3g (proven %v)", at, m, eps, res.EpsLowerBound, res.Claimed(), res.ClaimProven)
				}
			}
		}
	}
}

// (c) A release whose sensitivity is scaled down by 100 (test-only hook) is
// caught: eps_lb exceeds the claim.
func TestMiscalibrationCaught(t *testing.T) {
	g, p := testGraph(t)
	for _, m := range provenMethods {
		for _, at := range []Kind{Triad, Sybil} {
			for _, eps := range []float64{0.05, 0.2} {
				cfg := base(at, m, calib.Rigorous, eps, 2, 1)
				cfg.Trials = 400
				cfg.deltaScale = 0.01
				res := run(t, g, p, cfg)
				if !res.ExceedsClaim || res.EpsLowerBound <= res.Claimed() {
					t.Errorf("%v %v eps %g with Delta/100: eps_lb %.3f not above claim %.3g", at, m, eps, res.EpsLowerBound, res.Claimed())
				}
			}
		}
	}
}

func TestReproducibleAcrossGOMAXPROCS(t *testing.T) {
	g, p := testGraph(t)
	cfg := base(Triad, calib.Exponential, calib.Rigorous, 0.5, 3, 2)
	cfg.deltaScale = 0.1 // a setting where decisions vary from trial to trial
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	a := run(t, g, p, cfg)
	runtime.GOMAXPROCS(4)
	b := run(t, g, p, cfg)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("results differ between GOMAXPROCS 1 and 4:\n%+v\n%+v", a, b)
	}
	cfg.Seed = 2
	if c := run(t, g, p, cfg); reflect.DeepEqual(a, c) {
		t.Errorf("seed has no effect")
	}
}

func TestOnePairAndScores(t *testing.T) {
	g, p := testGraph(t)
	for _, k := range score.Kinds() {
		cfg := base(NoNoise, calib.Exponential, calib.Reference, 0.1, 5, 1)
		cfg.Score, cfg.OnePair = k, true
		res := run(t, g, p, cfg)
		if len(res.Target.Pairs) != 1 {
			t.Errorf("%v: one-pair secret has %d pairs", k, len(res.Target.Pairs))
		}
		if k == score.CN && res.Accuracy < 0.95 {
			t.Errorf("CN one-pair no-noise attack: accuracy %.3f", res.Accuracy)
		}
	}
}

func TestValidation(t *testing.T) {
	g, p := testGraph(t)
	for _, cfg := range []Config{
		{Method: calib.Exponential, Eps: 0.1, K: 0, Trials: 10},
		{Method: calib.Exponential, Eps: 0, K: 2, Trials: 10},
		{Method: calib.Exponential, Eps: 0.1, K: 2, Trials: 1},
		{Method: calib.Exponential, Eps: 0.1, K: 2, Trials: 10, Lists: -1},
		{Attack: Kind(7), Method: calib.Exponential, Eps: 0.1, K: 2, Trials: 10},
		{Method: calib.Exponential, Eps: 0.1, K: 2, Trials: 10, Score: score.Bounded},
	} {
		if _, err := Run(g, p, cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
	if _, err := Run(g, protect.Empty(g.N()), base(Sybil, calib.Exponential, calib.Rigorous, 0.1, 2, 1)); err == nil {
		t.Error("sybil attack without protected pairs: no error")
	}
	if _, err := Run(g, protect.Empty(g.N()), base(Triad, calib.Exponential, calib.Rigorous, 0.1, 2, 1)); err == nil {
		t.Error("triad attack without protected pairs: no error")
	}
	for _, s := range []string{"triad", "Sybil", "no-noise"} {
		if _, err := ParseKind(s); err != nil {
			t.Error(err)
		}
	}
	if _, err := ParseKind("nonoise"); err == nil {
		t.Error("ParseKind accepted nonoise")
	}
}

// Reference values: the Clopper-Pearson endpoints computed from their
// definition (bisection on exact binomial tails: P(X >= x | lo) = 0.025,
// P(X <= x | hi) = 0.025), independent of the Beta quantile used here.
func TestClopperPearson(t *testing.T) {
	for _, c := range []struct {
		x, n   int
		lo, hi float64
	}{
		{5, 10, 0.1870860284, 0.8129139716},
		{0, 10, 0, 0.3084971078},
		{10, 10, 0.6915028922, 1},
		{3, 20, 0.0320709372, 0.3789268265},
		{37, 100, 0.2755665796, 0.4723516406},
		{1, 7, 0.0036102969, 0.5787231970},
		{150, 150, 0.9757074028, 1},
	} {
		lo, hi := ClopperPearson(c.x, c.n, 0.95)
		if math.Abs(lo-c.lo) > 1e-8 || math.Abs(hi-c.hi) > 1e-8 {
			t.Errorf("CP(%d, %d) = [%.10f, %.10f], want [%.10f, %.10f]", c.x, c.n, lo, hi, c.lo, c.hi)
		}
	}
	if lo, hi := ClopperPearson(0, 0, 0.95); lo != 0 || hi != 1 {
		t.Errorf("CP(0, 0) = [%v, %v]", lo, hi)
	}
}

func TestEpsLowerBound(t *testing.T) {
	// Perfect separation: TPR_lo = 0.025^(1/n1), FPR_hi = 1 - 0.025^(1/n0).
	lo := math.Pow(0.025, 1.0/150)
	want := math.Log(lo / (1 - lo))
	if got := EpsLowerBound(150, 150, 0, 150, 0.95); math.Abs(got-want) > 1e-9 {
		t.Errorf("perfect test: %v, want %v", got, want)
	}
	// The second bound, (1 - FPR_hi) / (1 - TPR_lo), is used when it is larger.
	b1 := EpsLowerBound(75, 150, 0, 150, 0.95)
	tprLo, _ := ClopperPearson(75, 150, 0.95)
	_, fprHi := ClopperPearson(0, 150, 0.95)
	if want := math.Max(math.Log(tprLo/fprHi), math.Log((1-fprHi)/(1-tprLo))); math.Abs(b1-want) > 1e-12 || b1 <= 0 {
		t.Errorf("bound %v, want %v > 0", b1, want)
	}
	if got := EpsLowerBound(50, 100, 50, 100, 0.95); got != 0 {
		t.Errorf("a coin flip gives eps_lb %v, want 0", got)
	}
	if got := EpsLowerBound(10, 0, 0, 10, 0.95); got != 0 {
		t.Errorf("no positives: %v", got)
	}
}

func TestChooseThreshold(t *testing.T) {
	t0 := []float64{-3, -2, -2, -1, 0.5}
	t1 := []float64{1, 2, 2, 3, 0.5}
	thr := chooseThreshold(t0, t1)
	if thr != 0.5 {
		t.Errorf("threshold %v, want 0.5 (separates all but the tie)", thr)
	}
}

// unitGraph is a small graph around the query 0 (neighbours 1 and 2): node
// 1 has protected pairs to the non-neighbours 3, 4, 5 (hub) or to 3 only
// (single). Returns the graph with every pair, the marks and the secret
// pairs of node 1.
func unitGraph(t *testing.T, hub bool) (*graph.Graph, *protect.Set, []graph.Edge) {
	t.Helper()
	secret := []graph.Edge{{U: 1, V: 3}}
	if hub {
		secret = append(secret, graph.Edge{U: 1, V: 4}, graph.Edge{U: 1, V: 5})
	}
	edges := append([]graph.Edge{{U: 0, V: 1}, {U: 0, V: 2}, {U: 2, V: 6}, {U: 6, V: 7}, {U: 3, V: 7}, {U: 4, V: 6}, {U: 5, V: 7}, {U: 2, V: 3}}, secret...)
	g, _, err := graph.FromEdges(8, edges, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := protect.New(8, secret)
	if err != nil {
		t.Fatal(err)
	}
	return g, p, secret
}

// TestUnitCalibration: the pair unit recalibrates dplp-list (its noise is
// L1(u) under the unit: smaller under the pair unit when one party has
// several pairs reaching u's evidence, equal when every party has one) and
// leaves the per-pick mechanisms' calibration unchanged (their party-unit
// Delta_s(u) already implies the pair-unit guarantee).
func TestUnitCalibration(t *testing.T) {
	for _, tc := range []struct {
		name          string
		hub           bool
		method        calib.Method
		list          bool
		kind          score.Kind
		party, pairL1 float64 // dplp-list: want L1(0) under each unit
		samePerPick   bool    // per-pick: plans equal under both units
	}{
		{name: "exponential/cn/hub", hub: true, method: calib.Exponential, kind: score.CN, samePerPick: true},
		{name: "exponential/aa/hub", hub: true, method: calib.Exponential, kind: score.AA, samePerPick: true},
		{name: "laplace-peeling/jc/hub", hub: true, method: calib.LaplacePeeling, kind: score.JC, samePerPick: true},
		{name: "laplace/cn/single", method: calib.Laplace, kind: score.CN, samePerPick: true},
		{name: "dplp-list/cn/hub", hub: true, list: true, kind: score.CN, party: 3, pairL1: 1},
		{name: "dplp-list/aa/hub", hub: true, list: true, kind: score.AA, party: 3, pairL1: 1}, // evidence: CN's
		{name: "dplp-list/jc/hub", hub: true, list: true, kind: score.JC, party: 1.5, pairL1: 0.5},
		{name: "dplp-list/cn/single", list: true, kind: score.CN, party: 1, pairL1: 1},
		{name: "dplp-list/jc/single", list: true, kind: score.JC, party: 0.5, pairL1: 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, p, secret := unitGraph(t, tc.hub)
			g0, g1, err := toggled(g, g.N(), g.EdgeList(), secret, nil)
			if err != nil {
				t.Fatal(err)
			}
			gm, err := newGame(g0, g1, p, tc.kind, []int32{0}, 3, secret, tc.list)
			if err != nil {
				t.Fatal(err)
			}
			var sims [2]*sim
			for i, u := range []privunit.Unit{privunit.Party, privunit.Pair} {
				cfg := Config{Method: tc.method, Score: tc.kind, Eps: 0.5, K: 2, Unit: u, DPLPList: tc.list, deltaScale: 1}
				sims[i] = newSim(gm, cfg.mechanism(), cfg.K)
			}
			if tc.list {
				for b := range 2 {
					if got := [2]float64{sims[0].lst.q[b][0].L1, sims[1].lst.q[b][0].L1}; got != [2]float64{tc.party, tc.pairL1} {
						t.Errorf("world %d: L1 party, pair = %v, want %v", b, got, [2]float64{tc.party, tc.pairL1})
					}
				}
				return
			}
			if same := reflect.DeepEqual(sims[0].plan, sims[1].plan); same != tc.samePerPick {
				t.Errorf("plans equal under both units: %v, want %v\nparty %+v\npair  %+v", same, tc.samePerPick, sims[0].plan, sims[1].plan)
			}
		})
	}
}

// TestUnitRun: a per-pick attack is the same game under both units (only
// the unit and the claim's note differ); dplp-list under the pair unit
// releases with less noise, is claimed eps per list for one pair and
// m x eps for a secret of m pairs (group privacy), and the attack measures
// more than eps against such a secret: the pair-unit eps alone would not
// protect the party. Both stay within their claims, and a dplp-list release
// with its L1 scaled down by 100 is caught.
func TestUnitRun(t *testing.T) {
	g, p := testGraph(t)
	party := run(t, g, p, base(Triad, calib.Exponential, calib.Rigorous, 0.5, 3, 1))
	cfg := base(Triad, calib.Exponential, calib.Rigorous, 0.5, 3, 1)
	cfg.Unit = privunit.Pair
	pair := run(t, g, p, cfg)
	if party.Unit != "" || pair.Unit != "pair" || !strings.Contains(pair.ClaimNote, "implies the pair-unit guarantee") {
		t.Errorf("units %q, %q; pair note %q", party.Unit, pair.Unit, pair.ClaimNote)
	}
	same := *pair
	same.Unit, same.ClaimNote = party.Unit, party.ClaimNote
	if !reflect.DeepEqual(party, &same) {
		t.Errorf("per-pick results differ between units beyond unit and note:\n%+v\n%+v", party, pair)
	}

	for _, tc := range []struct {
		unit    privunit.Unit
		onePair bool
	}{{privunit.Party, false}, {privunit.Pair, false}, {privunit.Party, true}, {privunit.Pair, true}} {
		cfg := base(Triad, 0, calib.Rigorous, 1, 5, 1)
		cfg.DPLPList, cfg.Unit, cfg.OnePair, cfg.HistLists = true, tc.unit, tc.onePair, 1000
		res := run(t, g, p, cfg)
		m := len(res.Target.Pairs)
		want := 1.0
		if tc.unit == privunit.Pair {
			want = float64(m)
		}
		if res.Method != DPLPList || res.Unit != tc.unit.String() || res.EpsP != 0 || res.EpsList != 1 || len(res.EvidenceL1) != 1 {
			t.Errorf("%v one-pair %v: result %+v", tc.unit, tc.onePair, res)
		}
		if l1 := res.EvidenceL1[0]; (tc.unit == privunit.Pair) != (l1 == 1) || l1 <= 0 {
			t.Errorf("%v: CN evidence L1 %v (pair unit: 1; party unit: the party's pairs, here more than 1)", tc.unit, l1)
		}
		if !res.ClaimProven || res.Claimed() != want || res.ExceedsClaim {
			t.Errorf("%v one-pair %v: claim %v (proven %v), want %v; eps_lb %.3f", tc.unit, tc.onePair, res.Claimed(), res.ClaimProven, want, res.EpsLowerBound)
		}
		if tc.unit == privunit.Pair && !tc.onePair && (m < 3 || res.EpsLowerBound <= cfg.Eps) {
			t.Errorf("pair unit, %d-pair secret: eps_lb %.3f should exceed the per-pair eps %g", m, res.EpsLowerBound, cfg.Eps)
		}
	}
	cfg = base(Sybil, 0, calib.Rigorous, 0.2, 2, 1)
	cfg.DPLPList, cfg.Unit, cfg.deltaScale = true, privunit.Pair, 0.01
	if res := run(t, g, p, cfg); !res.ExceedsClaim {
		t.Errorf("dplp-list with L1/100: eps_lb %.3f not above claim %.3g", res.EpsLowerBound, res.Claimed())
	}
	cfg.Calibration = calib.Reference
	if _, err := Run(g, p, cfg); err == nil {
		t.Error("dplp-list with the reference calibration: no error")
	}
}
