package topk

import (
	"math"
	"testing"

	"github.com/dplp/dplp/mech"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/score"
	"pgregory.net/rapid"
)

// sequences calls fn with every ordered sequence of kk distinct indices of
// [0, d) (the slice is reused).
func sequences(d, kk int, fn func(seq []int)) {
	seq := make([]int, 0, kk)
	used := make([]bool, d)
	var rec func()
	rec = func() {
		if len(seq) == kk {
			fn(seq)
			return
		}
		for j := range d {
			if !used[j] {
				used[j] = true
				seq = append(seq, j)
				rec()
				seq = seq[:len(seq)-1]
				used[j] = false
			}
		}
	}
	rec()
}

// bruteJoint is the joint exponential mechanism by definition: the log
// probability of every sequence (in sequences order), from u(S) of every
// sequence and Z summed over all of them.
func bruteJoint(c []float64, k int, t float64) [][2]any {
	kk := min(k, len(c))
	var out [][2]any
	var errs []float64
	sequences(len(c), kk, func(seq []int) {
		out = append(out, [2]any{append([]int(nil), seq...), 0.0})
		errs = append(errs, JointError(c, seq))
	})
	lw := make([]float64, len(errs))
	for i, e := range errs {
		switch {
		case t > 0:
			lw[i] = -e / t
		case e == 0:
			lw[i] = 0
		default:
			lw[i] = math.Inf(-1)
		}
	}
	lz := logSumExp(lw)
	for i := range out {
		out[i][1] = lw[i] - lz
	}
	return out
}

// drawScores draws d scores: small integers (many ties) or floats.
func drawScores(t *rapid.T) []float64 {
	d := rapid.IntRange(1, 6).Draw(t, "d")
	ties := rapid.Bool().Draw(t, "ties")
	c := make([]float64, d)
	for i := range c {
		if ties {
			c[i] = float64(rapid.IntRange(0, 3).Draw(t, "ci"))
		} else {
			c[i] = rapid.Float64Range(-2, 5).Draw(t, "cf")
		}
	}
	return c
}

// TestJointMatchesBruteForce: the sweep's per-pair sequence counts are the
// numbers of sequences whose largest pair (in the sweep's total order) is
// that pair, and JointLogProb equals the definition, for every sequence,
// on small d and k with and without ties, at t = 0 (exact top-K) and t > 0.
func TestJointMatchesBruteForce(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := drawScores(rt)
		k := rapid.IntRange(1, 4).Draw(rt, "k")
		temp := rapid.SampledFrom([]float64{0, 0.3, 1, 4}).Draw(rt, "t")
		kk := min(k, len(c))
		// Counts: sweep at t = 1 gives ln count - E.
		var sc Scratch
		sc.sortScores(c)
		sc.sweep(kk, 1)
		want := map[[2]int32]int{}
		sequences(len(c), kk, func(seq []int) {
			// The sequence in sorted coordinates: its positions hold the
			// sorted ranks of its candidates.
			rank := make([]int32, len(c))
			for r, i := range sc.order {
				rank[i] = int32(r)
			}
			bi, bj := int32(-1), int32(-1)
			for i, x := range seq {
				if bi < 0 || sc.less(bi, bj, int32(i), rank[x]) {
					bi, bj = int32(i), rank[x]
				}
			}
			want[[2]int32{bi, bj}]++
		})
		if len(sc.lw) != kk*len(c) {
			rt.Fatalf("swept %d pairs, want %d", len(sc.lw), kk*len(c))
		}
		for p := range sc.lw {
			key := [2]int32{sc.pi[p], sc.pj[p]}
			got := 0.0
			if !math.IsInf(sc.lw[p], -1) {
				got = math.Exp(sc.lw[p] + (sc.v[key[0]] - sc.v[key[1]]))
			}
			if math.Abs(got-float64(want[key])) > 1e-9*(1+got) {
				rt.Fatalf("c %v k %d: pair %v count %v, brute force %d", c, k, key, got, want[key])
			}
			if p > 0 && !sc.less(sc.pi[p-1], sc.pj[p-1], sc.pi[p], sc.pj[p]) {
				rt.Fatalf("sweep out of order at %d", p)
			}
		}
		for _, e := range bruteJoint(c, k, temp) {
			seq, lp := e[0].([]int), e[1].(float64)
			got, err := JointLogProb(c, k, temp, seq)
			if err != nil {
				rt.Fatal(err)
			}
			if math.IsInf(lp, -1) != math.IsInf(got, -1) || (!math.IsInf(lp, -1) && math.Abs(got-lp) > 1e-9) {
				rt.Fatalf("c %v k %d t %v seq %v: log prob %v, brute force %v", c, k, temp, seq, got, lp)
			}
		}
	})
}

// chiJoint samples Joint n times and returns the chi-square p-value against
// the log probabilities of want (by sequence).
func chiJoint(t *testing.T, c []float64, k int, temp float64, want func(seq []int) float64, n int, seed uint64) float64 {
	t.Helper()
	idx := map[string]int{}
	var exp []float64
	sequences(len(c), min(k, len(c)), func(seq []int) {
		idx[key(seq)] = len(exp)
		exp = append(exp, math.Exp(want(seq)))
	})
	obs := make([]int, len(exp))
	rng := randx.Seeded(seed)
	var sc Scratch
	for range n {
		s, err := Joint(c, k, temp, rng, &sc)
		if err != nil {
			t.Fatal(err)
		}
		i, ok := idx[key(s)]
		if !ok {
			t.Fatalf("Joint returned %v: not a sequence of distinct candidates", s)
		}
		obs[i]++
	}
	_, _, p := mech.ChiSquare(obs, exp)
	return p
}

func key(s []int) string {
	b := make([]byte, 0, 3*len(s))
	for _, x := range s {
		b = append(b, byte(x), ',')
	}
	return string(b)
}

// TestJointSampler: Joint's empirical distribution matches the exact one
// (chi-square, fixed seeds); the test has power: the same samples against
// the distribution at twice the temperature fail.
func TestJointSampler(t *testing.T) {
	cases := []struct {
		name string
		c    []float64
		k    int
		t    float64
	}{
		{"distinct", []float64{3, 0.5, 2, 1.25, 0}, 3, 0.7},
		{"ties", []float64{2, 2, 1, 1, 0, 2}, 2, 0.5},
		{"k>d", []float64{1, 0, 0.5}, 5, 1},
		{"exact top-K", []float64{2, 2, 1, 1, 0}, 3, 0},
		{"flat", []float64{1, 1, 1, 1}, 2, 2},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lp := func(seq []int) float64 {
				x, err := JointLogProb(tc.c, tc.k, tc.t, seq)
				if err != nil {
					t.Fatal(err)
				}
				return x
			}
			if p := chiJoint(t, tc.c, tc.k, tc.t, lp, 20000, uint64(100+i)); p < 1e-4 {
				t.Errorf("chi-square p = %.3g", p)
			}
			if tc.t > 0 && tc.name != "flat" {
				wrong := func(seq []int) float64 { x, _ := JointLogProb(tc.c, tc.k, 2*tc.t, seq); return x }
				if p := chiJoint(t, tc.c, tc.k, tc.t, wrong, 20000, uint64(200+i)); p > 1e-4 {
					t.Errorf("control: samples at t match the distribution at 2t (p = %.3g)", p)
				}
			}
		})
	}
}

// TestOneShotSampler: OneShotTopK matches OneShotLogProb (chi-square).
func TestOneShotSampler(t *testing.T) {
	c := []float64{3, 0.5, 2, 1.25, 0, 2}
	const k, temp, n = 3, 1.5, 30000
	idx := map[string]int{}
	var exp []float64
	sequences(len(c), k, func(seq []int) {
		idx[key(seq)] = len(exp)
		lp, err := OneShotLogProb(c, temp, seq)
		if err != nil {
			t.Fatal(err)
		}
		exp = append(exp, math.Exp(lp))
	})
	obs := make([]int, len(exp))
	rng := randx.Seeded(5)
	for range n {
		s, err := OneShotTopK(c, k, temp, rng, nil)
		if err != nil {
			t.Fatal(err)
		}
		obs[idx[key(s)]]++
	}
	if _, _, p := mech.ChiSquare(obs, exp); p < 1e-4 {
		t.Errorf("chi-square p = %.3g", p)
	}
}

// worstLoss is the largest |ln P(S) - ln P'(S)| over every ordered list S
// of mechanism m at temperature temp for scores c and c2.
func worstLoss(t interface{ Fatal(...any) }, m Mechanism, c, c2 []float64, k int, temp float64) float64 {
	worst := 0.0
	sequences(len(c), min(k, len(c)), func(seq []int) {
		a, err := LogProb(m, c, k, temp, seq)
		if err != nil {
			t.Fatal(err)
		}
		b, err := LogProb(m, c2, k, temp, seq)
		if err != nil {
			t.Fatal(err)
		}
		if math.IsInf(a, -1) && math.IsInf(b, -1) {
			return
		}
		worst = max(worst, math.Abs(a-b))
	})
	return worst
}

// TestPrivacyOnVectors: for random scores and neighbouring scores within
// the per-coordinate bound delta (monotone moves: all coordinates the same
// way; general moves: any within +-delta; single-coordinate moves), both
// mechanisms at Scale(eps) keep every list's log-ratio within eps. Negative
// control: a quarter of the temperature must exceed eps somewhere.
func TestPrivacyOnVectors(t *testing.T) {
	caught := map[string]bool{}
	rapid.Check(t, func(rt *rapid.T) {
		d := rapid.IntRange(1, 6).Draw(rt, "d")
		k := rapid.IntRange(1, 3).Draw(rt, "k")
		delta := rapid.SampledFrom([]float64{1, 0.5, 3}).Draw(rt, "delta")
		eps := rapid.SampledFrom([]float64{0.5, 1, 3, 8}).Draw(rt, "eps")
		move := rapid.SampledFrom([]string{"monotone", "general", "single"}).Draw(rt, "move")
		c, c2 := make([]float64, d), make([]float64, d)
		sign := 1.0
		if rapid.Bool().Draw(rt, "down") {
			sign = -1
		}
		one := rapid.IntRange(0, d-1).Draw(rt, "one")
		for i := range c {
			c[i] = float64(rapid.IntRange(0, 6).Draw(rt, "c")) * delta / 2
			var dv float64
			switch move {
			case "monotone":
				dv = sign * delta * float64(rapid.IntRange(0, 2).Draw(rt, "m")) / 2
			case "general":
				dv = delta * float64(rapid.IntRange(-2, 2).Draw(rt, "g")) / 2
			case "single":
				if i == one {
					dv = sign * delta
				}
			}
			c2[i] = c[i] + dv
		}
		mono := move != "general"
		for _, m := range Mechanisms {
			temp := Scale(m, delta, eps, k, d, mono)
			if w := worstLoss(rt, m, c, c2, k, temp); w > eps+1e-9 {
				rt.Fatalf("%v %s: c %v c' %v k %d eps %v: log-ratio %v > eps", m, move, c, c2, k, eps, w)
			}
			if w := worstLoss(rt, m, c, c2, k, temp/4); w > eps+1e-9 {
				caught[m.String()+" quarter"] = true
			}
		}
	})
	for _, name := range []string{"joint-em quarter", "oneshot-topk quarter"} {
		if !caught[name] {
			t.Errorf("negative control %q never exceeded eps", name)
		}
	}
}

// TestJointGeneralMoves: moves in both directions need Delta_u = 2 Delta.
// On these scores (found by a random search over 2 x 10^5 small cases) the
// monotone calibration T = 2 Delta / eps loses up to 1.55 eps when the
// coordinates move both ways by up to Delta = 1; the general calibration
// stays within eps.
func TestJointGeneralMoves(t *testing.T) {
	for _, tc := range []struct {
		c, c2 []float64
		k     int
		eps   float64
	}{
		{[]float64{1.5, 2, 0.5, 1, 0, 3}, []float64{0.5, 1, -0.5, 0, 1, 4}, 3, 0.5},
		{[]float64{4, 0, 0.5, 0.5, 1, 1}, []float64{3, -1, 0.5, 0.5, 2, 2}, 2, 1},
	} {
		d := len(tc.c)
		if w := worstLoss(t, JointEM, tc.c, tc.c2, tc.k, Scale(JointEM, 1, tc.eps, tc.k, d, false)); w > tc.eps+1e-9 {
			t.Errorf("%v -> %v: general calibration loses %v > eps %v", tc.c, tc.c2, w, tc.eps)
		}
		if w := worstLoss(t, JointEM, tc.c, tc.c2, tc.k, Scale(JointEM, 1, tc.eps, tc.k, d, true)); w <= tc.eps+1e-9 {
			t.Errorf("%v -> %v: the monotone calibration was expected to exceed eps %v, lost %v", tc.c, tc.c2, tc.eps, w)
		}
	}
}

// TestScaleCostMonotone is table-driven: temperatures, costs and the
// monotone kinds.
func TestScaleCostMonotone(t *testing.T) {
	for _, tc := range []struct {
		m     Mechanism
		delta float64
		eps   float64
		k, d  int
		mono  bool
		want  float64
	}{
		{JointEM, 1, 1, 30, 100, true, 2},
		{JointEM, 1, 1, 30, 100, false, 4},
		{JointEM, 3, 2, 5, 10, false, 6},
		{OneShot, 1, 1, 30, 100, true, 30},
		{OneShot, 1, 1, 30, 100, false, 60},
		{OneShot, 2, 4, 30, 10, true, 5}, // min(k, d) = 10 picks
		{OneShot, 0, 1, 30, 100, false, 0},
		{JointEM, 0, 1, 30, 100, false, 0},
	} {
		if got := Scale(tc.m, tc.delta, tc.eps, tc.k, tc.d, tc.mono); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Scale%+v = %v, want %v", tc, got, tc.want)
		}
	}
	if Cost(0, 1) != 0 || Cost(0.5, 2) != 2 {
		t.Error("Cost")
	}
	for _, tc := range []struct {
		kind score.Kind
		unit privunit.Unit
		want bool
	}{
		{score.CN, privunit.Pair, true}, {score.JC, privunit.Pair, true}, {score.PA, privunit.Pair, true},
		{score.AA, privunit.Pair, false}, {score.RA, privunit.Pair, false}, {score.Bounded, privunit.Pair, false},
		{score.CN, privunit.Party, false}, {score.PA, privunit.Party, false},
	} {
		if got := Monotone(tc.kind, tc.unit); got != tc.want {
			t.Errorf("Monotone(%v, %v) = %v", tc.kind, tc.unit, got)
		}
	}
	for _, m := range Mechanisms {
		if p, err := Parse(m.String()); err != nil || p != m {
			t.Errorf("Parse(%q) = %v, %v", m.String(), p, err)
		}
	}
	if _, err := Parse("joint"); err == nil {
		t.Error("Parse accepted an unknown name")
	}
}

// TestScores: c = pub + w evid with w the mean weight per public wedge.
func TestScores(t *testing.T) {
	c, w := Scores(nil, []float64{1, 2, 0}, []float64{1, 0, 2}, nil, 1)
	if w != 1 || c[0] != 2 || c[1] != 2 || c[2] != 2 {
		t.Errorf("no counts: %v %v", c, w)
	}
	c, w = Scores(nil, []float64{0.5, 1.5, 0}, []float64{1, 0, 2}, []float64{1, 3, 0}, 1)
	if w != 0.5 || c[0] != 1 || c[2] != 1 {
		t.Errorf("counts: %v %v", c, w)
	}
}

// TestZeroDelta: with delta = 0 both mechanisms are the exact top-K at cost
// 0 (ties uniformly at random; the top scores always come first).
func TestZeroDelta(t *testing.T) {
	c := []float64{1, 5, 3, 5, 0}
	rng := randx.Seeded(3)
	for _, m := range Mechanisms {
		for range 50 {
			ids, cost, err := Release(m, c, 0, false, 1, 3, rng, nil)
			if err != nil {
				t.Fatal(err)
			}
			if cost != 0 || len(ids) != 3 || c[ids[0]] != 5 || c[ids[1]] != 5 || ids[2] != 2 {
				t.Fatalf("%v: %v cost %v", m, ids, cost)
			}
		}
	}
}

// TestErrors: invalid arguments are errors.
func TestErrors(t *testing.T) {
	rng := randx.Seeded(1)
	if _, err := Joint([]float64{1, math.NaN()}, 1, 1, rng, nil); err == nil {
		t.Error("NaN score accepted")
	}
	if _, err := Joint([]float64{1}, 0, 1, rng, nil); err == nil {
		t.Error("k = 0 accepted")
	}
	if _, err := Joint([]float64{1}, 1, -1, rng, nil); err == nil {
		t.Error("negative temperature accepted")
	}
	if _, err := Joint([]float64{1}, 1, 1, nil, nil); err == nil {
		t.Error("nil generator accepted")
	}
	if _, _, err := Release(JointEM, []float64{1}, 1, false, 0, 1, rng, nil); err == nil {
		t.Error("eps 0 accepted")
	}
	if _, err := JointLogProb([]float64{1, 2}, 2, 1, []int{0, 0}); err == nil {
		t.Error("repeated index accepted")
	}
	if _, err := JointLogProb([]float64{1, 2}, 2, 1, []int{0}); err == nil {
		t.Error("short list accepted")
	}
	if ids, err := Joint(nil, 3, 1, rng, nil); err != nil || len(ids) != 0 {
		t.Errorf("no candidates: %v %v", ids, err)
	}
}
