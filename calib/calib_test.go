package calib

import (
	"math"
	"slices"
	"testing"

	"github.com/dplp/dplp/mech"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/score"
)

func TestRigorousPlans(t *testing.T) {
	q := Query{DeltaS: 3, SMax: 10}
	cases := []struct {
		m     Method
		scale float64
	}{
		{Exponential, 2 * 3 / 0.5}, {LaplacePeeling, 2 * 3 / 0.5}, {Laplace, 3 / 0.5}, {Staircase, 1}, {NonPrivate, 0}, {PublicOnly, 0},
	}
	for _, c := range cases {
		cfg := Config{Method: c.m, Kind: score.CN, Eps: 0.5}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		p := cfg.Plan(q)
		if p.Scale != c.scale {
			t.Fatalf("%v: scale %v want %v", c.m, p.Scale, c.scale)
		}
		if c.m == Staircase && (p.Stair.Delta != 3 || p.Stair.Eps != 0.5 || p.Stair.Gamma != mech.OptimalGamma(0.5)) {
			t.Fatalf("staircase params %+v", p.Stair)
		}
		if got := p.Utility(4, 2); c.m == PublicOnly && got != 2 || c.m != PublicOnly && got != 4 {
			t.Fatalf("%v utility %v", c.m, got)
		}
		// Zero sensitivity: exact, no division by zero.
		z := cfg.Plan(Query{DeltaS: 0, SMax: 10})
		if !z.Exact() || math.IsNaN(z.Scale) {
			t.Fatalf("%v: Delta 0 must give exact top-K", c.m)
		}
	}
}

func TestReferencePlans(t *testing.T) {
	cfg := Config{Method: Exponential, Calibration: Reference, Kind: score.CN, Eps: 0.1}
	p := cfg.Plan(Query{DeltaS: 5, SMax: 9, RefA: 3, RefMaxDeg: 7})
	if p.Scale != 2/0.1 || p.Utility(8, 0) != 2 { // 8 / (3+1)
		t.Fatalf("reference CN plan %+v utility %v", p, p.Utility(8, 0))
	}
	if p := cfg.Plan(Query{DeltaS: 5, SMax: 9, RefA: 1}); p.Utility(8, 0) != 8 {
		t.Fatal("a = 1 must not normalise CN (Delta <= 1.01)")
	}
	if p := cfg.Plan(Query{DeltaS: 5, SMax: 9, RefA: 0}); !p.Exact() {
		t.Fatal("reference gives no noise when a(u) = 0")
	}
	st := Config{Method: Staircase, Calibration: Reference, Kind: score.AA, Eps: 0.1}
	sp := st.Plan(Query{RefA: 2})
	if sp.Stair.Delta != 1/0.1 || sp.Stair.Gamma != mech.ReferenceGamma(0.1) {
		t.Fatalf("reference staircase %+v", sp.Stair)
	}
	if err := (&Config{Method: Exponential, Calibration: Reference, Eps: 1, Transform: fixed{}}).Validate(); err == nil {
		t.Fatal("reference with a transform accepted")
	}
	for _, eps := range []float64{0, -1, math.Inf(1), math.NaN()} {
		if err := (&Config{Method: Laplace, Eps: eps}).Validate(); err == nil {
			t.Fatalf("eps %v accepted", eps)
		}
	}
}

type fixed struct{}

func (fixed) Utility(s, pub, sMax float64) float64 { return 2*s + pub }
func (fixed) Delta(d, sMax float64) float64        { return 2 * d }

func TestTransformPlan(t *testing.T) {
	cfg := Config{Method: Exponential, Kind: score.AA, Eps: 1, Transform: fixed{}}
	p := cfg.Plan(Query{DeltaS: 1.5, SMax: 4})
	if p.Delta != 3 || p.Scale != 6 || p.Utility(1, 1) != 3 {
		t.Fatalf("transform plan %+v", p)
	}
	u := &mech.Utilities{Vals: []float64{1, 2, 3}, Blocks: []mech.Block{{Val: 0, Size: 100}}}
	list, err := p.Sample(u, 5, randx.Seeded(1), nil)
	if err != nil || len(list) != 5 {
		t.Fatalf("sample %v %v", list, err)
	}
}

func TestParse(t *testing.T) {
	for _, n := range []string{"exponential", "laplace", "laplace-peeling", "staircase", "nonprivate", "public-only"} {
		m, err := ParseMethod(n)
		if err != nil || m.String() != n {
			t.Fatalf("%s: %v %v", n, m, err)
		}
	}
	if _, err := ParseMethod("gauss"); err == nil {
		t.Fatal("unknown method accepted")
	}
	if c, err := ParseCalibration("reference"); err != nil || c != Reference {
		t.Fatal("reference")
	}
	if _, err := ParseCalibration("x"); err == nil {
		t.Fatal("unknown calibration accepted")
	}
	if e, ok := (&Config{Method: Laplace, Eps: 0.1}).Guarantee(1); e != 0.2 || !ok {
		t.Fatal("one-shot Laplace K=1 claims 2 eps")
	}
	if _, ok := (&Config{Method: Laplace, Eps: 0.1}).Guarantee(3); ok {
		t.Fatal("one-shot Laplace K>1 has no proof")
	}
}

// TestLexicographicPlan: the DPLP-pub plan ranks by s_pub, charges only
// random picks, refuses Sample without public scores and any other method.
func TestLexicographicPlan(t *testing.T) {
	cfg := Config{Method: Exponential, Kind: score.CN, Eps: 0.5, Lexicographic: true}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	p := cfg.Plan(Query{DeltaS: 2, SMax: 10})
	if !p.Lexicographic() || p.Scale != 2*2/0.5 {
		t.Fatalf("plan %+v", p)
	}
	u := &mech.Utilities{Vals: []float64{9, 1, 5, 2}, Blocks: []mech.Block{{Val: 0, Size: 4}}}
	pub := []float64{0, 3, 2, 2}
	r := randx.Seeded(1)
	for range 50 {
		l, err := p.SampleWithPub(u, pub, 3, r, nil)
		if err != nil {
			t.Fatal(err)
		}
		if l[0] != 1 || (l[1] != 2 && l[1] != 3) || l[2] != 5-l[1] {
			t.Fatalf("list %v ignores the public order", l)
		}
	}
	if n, _ := p.Picks(u, pub, 3); n != 1 { // {1} free, {2,3}: one random pick, last forced
		t.Fatalf("picks %d, want 1", n)
	}
	if n, _ := p.Picks(u, pub, 5); n != 3 { // + two from the zero group (candidate 0 and the block: 5 members)
		t.Fatalf("picks %d, want 3", n)
	}
	if c := p.ListCost(2); c != 1 {
		t.Fatalf("cost %v", c)
	}
	if _, err := p.Sample(u, 3, r, nil); err == nil {
		t.Fatal("Sample without public scores accepted")
	}
	if z := cfg.Plan(Query{DeltaS: 0, SMax: 10}); !z.Exact() {
		t.Fatal("Delta 0 must be exact")
	} else if n, _ := z.Picks(u, pub, 5); n != 0 {
		t.Fatal("an exact plan costs nothing")
	}
	ex := Config{Method: Exponential, Kind: score.CN, Eps: 0.5}
	pe := ex.Plan(Query{DeltaS: 2, SMax: 10})
	if n, _ := pe.Picks(u, pub, 5); n != 5 {
		t.Fatalf("exponential picks %d, want 5", n)
	}
	bad := Config{Method: Laplace, Kind: score.CN, Eps: 0.5, Lexicographic: true}
	if bad.Validate() == nil {
		t.Fatal("lexicographic Laplace accepted")
	}
}

// batchFixed is fixed with a batch method that disagrees on purpose, to see
// which path AppendUtilities takes.
type batchFixed struct{ fixed }

func (batchFixed) AppendUtilities(dst, s []float64, idx []int, sMax float64) []float64 {
	for range idx {
		dst = append(dst, -1)
	}
	return dst
}

// TestAppendUtilities: the plan's batch gives Utility's values in idx's
// order without a batch-capable transform (public-only, untransformed,
// per-item transforms), and uses the transform's batch method otherwise.
func TestAppendUtilities(t *testing.T) {
	s, pub, idx := []float64{1, 2, 3}, []float64{5, 0, 7}, []int{2, 0, 0, 1}
	for _, cfg := range []Config{
		{Method: Exponential, Kind: score.AA, Eps: 1},
		{Method: PublicOnly, Kind: score.AA, Eps: 1},
		{Method: Exponential, Kind: score.AA, Eps: 1, Transform: fixed{}},
		{Method: PublicOnly, Kind: score.AA, Eps: 1, Transform: batchFixed{}},
	} {
		p := cfg.Plan(Query{DeltaS: 1, SMax: 4})
		got := p.AppendUtilities([]float64{9}, s, pub, idx)
		want := []float64{9}
		for _, i := range idx {
			want = append(want, p.Utility(s[i], pub[i]))
		}
		for k := range want {
			if got[k] != want[k] {
				t.Fatalf("%+v: %v, want %v", cfg, got, want)
			}
		}
	}
	bcfg := Config{Method: Exponential, Kind: score.AA, Eps: 1, Transform: batchFixed{}}
	p := bcfg.Plan(Query{DeltaS: 1, SMax: 4})
	if got := p.AppendUtilities(nil, s, pub, idx); len(got) != 4 || got[0] != -1 {
		t.Fatalf("batch method not used: %v", got)
	}
}

// TestUnitPlans: a pair-unit plan is calibrated to Query.DeltaPair (through
// the transform when there is one), a party-unit plan to DeltaS; the pair
// unit is refused with the reference calibration and unknown units are
// refused.
func TestUnitPlans(t *testing.T) {
	q := Query{DeltaS: 7, DeltaPair: 1, SMax: 10}
	for _, tc := range []struct {
		name  string
		cfg   Config
		delta float64
	}{
		{"party exponential", Config{Method: Exponential, Kind: score.CN, Eps: 0.5}, 7},
		{"pair exponential", Config{Method: Exponential, Kind: score.CN, Eps: 0.5, Unit: privunit.Pair}, 1},
		{"pair laplace", Config{Method: Laplace, Kind: score.CN, Eps: 0.5, Unit: privunit.Pair}, 1},
		{"party transform", Config{Method: Exponential, Kind: score.AA, Eps: 0.5, Transform: fixed{}}, 14},
		{"pair transform", Config{Method: Exponential, Kind: score.AA, Eps: 0.5, Transform: fixed{}, Unit: privunit.Pair}, 2},
	} {
		if err := tc.cfg.Validate(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if p := tc.cfg.Plan(q); p.Delta != tc.delta {
			t.Errorf("%s: Delta %v, want %v", tc.name, p.Delta, tc.delta)
		}
	}
	if z := (&Config{Method: Exponential, Kind: score.CN, Eps: 1, Unit: privunit.Pair}).Plan(Query{DeltaS: 3}); !z.Exact() {
		t.Error("pair unit with DeltaPair 0 must be exact (no pair can move the scores)")
	}
	for _, bad := range []Config{
		{Method: Exponential, Calibration: Reference, Kind: score.CN, Eps: 1, Unit: privunit.Pair},
		{Method: Exponential, Kind: score.CN, Eps: 1, Unit: privunit.Unit(9)},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// scoreFixed is a transform whose utility is declared a function of the
// score alone (ScoreUtility).
type scoreFixed struct{}

func (scoreFixed) Utility(s, pub, sMax float64) float64 { return 2 * s }
func (scoreFixed) Delta(d, sMax float64) float64        { return 2 * d }
func (scoreFixed) ScoreUtility(s, sMax float64) float64 { return 2 * s }

// lexFixed is scoreFixed released with the lexicographic mechanism.
type lexFixed struct{ scoreFixed }

func (lexFixed) Lexicographic() bool { return true }

// TestReadsPublic: only configurations whose utilities ignore s_pub say
// they do not read it, and their plans give the same utilities from an
// empty pub as from the real one.
func TestReadsPublic(t *testing.T) {
	s, pub, idx := []float64{1, 2, 3}, []float64{5, 0, 7}, []int{2, 0, 1}
	for _, c := range []struct {
		name string
		cfg  Config
		want bool
	}{
		{"untransformed", Config{Method: Exponential, Kind: score.AA, Eps: 1}, false},
		{"transform of the score alone", Config{Method: Exponential, Kind: score.AA, Eps: 1, Transform: scoreFixed{}}, false},
		{"non-private, score alone", Config{Method: NonPrivate, Kind: score.AA, Transform: scoreFixed{}}, false},
		{"transform that may read s_pub", Config{Method: Exponential, Kind: score.AA, Eps: 1, Transform: fixed{}}, true},
		{"public-only", Config{Method: PublicOnly, Kind: score.AA}, true},
		{"lexicographic transform", Config{Method: Exponential, Kind: score.AA, Eps: 1, Transform: lexFixed{}}, true},
		{"lexicographic flag", Config{Method: Exponential, Kind: score.AA, Eps: 1, Transform: scoreFixed{}, Lexicographic: true}, true},
	} {
		if got := c.cfg.ReadsPublic(); got != c.want {
			t.Errorf("%s: ReadsPublic %v, want %v", c.name, got, c.want)
		}
		p := c.cfg.Plan(Query{DeltaS: 1, SMax: 4})
		if p.ReadsPublic() != c.want {
			t.Errorf("%s: the plan's ReadsPublic %v, want %v", c.name, p.ReadsPublic(), c.want)
		}
		if c.want {
			continue
		}
		if with, without := p.AppendUtilities(nil, s, pub, idx), p.AppendUtilities(nil, s, nil, idx); !slices.Equal(with, without) {
			t.Errorf("%s: utilities %v from s_pub, %v without it", c.name, with, without)
		}
	}
}
