package mech

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func TestGaussLegendreExactForPolynomials(t *testing.T) {
	for _, n := range []int{1, 2, 3, 6, 20, 33} {
		r := gaussLegendre(n)
		for d := 0; d <= 2*n-1; d++ {
			s := 0.0
			for i, x := range r.x {
				s += r.w[i] * math.Pow(x, float64(d))
			}
			want := 0.0
			if d%2 == 0 {
				want = 2 / float64(d+1)
			}
			if math.Abs(s-want) > 1e-14 {
				t.Errorf("n=%d: ∫x^%d = %v, want %v", n, d, s, want)
			}
		}
	}
}

func TestExpListLogProb(t *testing.T) {
	r := seeded(11)
	for range 50 {
		n := 1 + r.IntN(6)
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = float64(r.IntN(5)) - 2
		}
		scale := 0.2 + 3*r.Float64()
		for k := 1; k <= min(3, n); k++ {
			for _, l := range enumLists(n, k) {
				got, err := ExpListLogProb(vals, scale, l)
				if err != nil {
					t.Fatal(err)
				}
				// Direct formula without log-sum-exp.
				p := 1.0
				used := make([]bool, n)
				for _, v := range l {
					den := 0.0
					for i, q := range vals {
						if !used[i] {
							den += math.Exp(q / scale)
						}
					}
					p *= math.Exp(vals[v]/scale) / den
					used[v] = true
				}
				if math.Abs(got-math.Log(p)) > 1e-12 {
					t.Fatalf("vals %v scale %v list %v: %v, want %v", vals, scale, l, got, math.Log(p))
				}
			}
			expProbs(t, vals, scale, enumLists(n, k)) // sums to 1
			expProbs(t, vals, 0, enumLists(n, k))
		}
	}
	// Large utilities and tiny scales stay finite.
	got, err := ExpListLogProb([]float64{1000, 1001, 999}, 1e-3, []int{1, 0})
	if err != nil || math.IsNaN(got) || math.Abs(got) > 1e-300 {
		t.Errorf("stable case: %v, %v", got, err)
	}
	// scale 0: exact top-K with uniform ties.
	vals := []float64{2, 2, 1, 2}
	for _, c := range []struct {
		list []int
		want float64
	}{
		{[]int{0}, -math.Log(3)},
		{[]int{2}, math.Inf(-1)},
		{[]int{3, 1}, -math.Log(6)},
		{[]int{0, 1, 3, 2}, -math.Log(6)},
		{[]int{0, 2}, math.Inf(-1)},
		{nil, 0},
	} {
		got, err := ExpListLogProb(vals, 0, c.list)
		if err != nil || !(got == c.want || math.Abs(got-c.want) < 1e-15) {
			t.Errorf("scale 0 %v: %v, %v; want %v", c.list, got, err, c.want)
		}
	}
	for _, c := range []struct {
		vals  []float64
		scale float64
		list  []int
	}{
		{[]float64{1, 2}, 1, []int{2}},
		{[]float64{1, 2}, 1, []int{-1}},
		{[]float64{1, 2}, 1, []int{0, 0}},
		{[]float64{1, math.NaN()}, 1, []int{0}},
		{[]float64{1, 2}, -1, []int{0}},
		{[]float64{1, 2}, math.Inf(1), []int{0}},
	} {
		if _, err := ExpListLogProb(c.vals, c.scale, c.list); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: err = %v", c, err)
		}
	}
}

func TestSelectProbsSumToOne(t *testing.T) {
	r := seeded(21)
	iters := 60
	if testing.Short() {
		iters = 20
	}
	for it := range iters {
		n := 2 + r.IntN(10)
		vals := make([]float64, n)
		spread := []float64{0.1, 1, 5, 30}[it%4]
		for i := range vals {
			vals[i] = math.Round(r.NormFloat64()*spread*4) / 4 // ties likely
		}
		var nz Noise
		if it%2 == 0 {
			nz = Laplace{0.05 + 3*r.Float64()}
		} else {
			eps := []float64{0.1, 0.5, 1, 3}[r.IntN(4)]
			g := []float64{OptimalGamma(eps), ReferenceGamma(eps), r.Float64()}[r.IntN(3)]
			nz = StaircaseParams{Eps: eps, Delta: 0.1 + 2*r.Float64(), Gamma: g}
		}
		p, err := SelectProbs(vals, nz)
		if err != nil {
			t.Fatal(err)
		}
		s := 0.0
		for i, v := range p {
			if !(v >= 0 && v <= 1) {
				t.Fatalf("%+v %v: p[%d] = %v", nz, vals, i, v)
			}
			s += v
		}
		if math.Abs(s-1) > 1e-10 {
			t.Errorf("%+v %v: sum %v (err %.2g)", nz, vals, s, s-1)
		}
		// Equal utilities get equal probabilities, higher ones more.
		for i := range vals {
			for j := range vals {
				if vals[i] == vals[j] && p[i] != p[j] {
					t.Errorf("tie %d,%d: %v vs %v", i, j, p[i], p[j])
				}
				if vals[i] > vals[j] && p[i] < p[j] {
					t.Errorf("order %d,%d: %v < %v", i, j, p[i], p[j])
				}
			}
		}
	}
}

func TestSelectProbsLaplaceTwoCandidatesClosedForm(t *testing.T) {
	for _, s := range []float64{0.01, 1, 7} {
		for _, d := range []float64{0, 0.1, 1, 5, 20, 35, 60} {
			p, err := SelectProbs([]float64{3, 3 - d*s}, Laplace{s})
			if err != nil {
				t.Fatal(err)
			}
			// P(X2 - X1 > d) for i.i.d. Laplace(s), d >= 0.
			lo := 0.5 * math.Exp(-d) * (1 + d/2)
			if !close(p[1], lo, 1e-11) || !close(p[0], 1-lo, 1e-13) {
				t.Errorf("s=%v d=%v: %v, want [%v %v] (rel err %.2g)", s, d, p, 1-lo, lo, (p[1]-lo)/lo)
			}
		}
	}
}

// stairTwo computes P(q1 + X1 < q0 + X0) = ∫ f(x) F(x + q0 - q1) dx for two
// candidates independently of SelectProbs: exact trapezoids of the linear F
// over every piece where both the density and F are simple, using only the
// exported PDF and CDF.
func stairTwo(p StaircaseParams, d float64) float64 {
	K := math.Ceil(45/p.Eps) + math.Ceil(math.Abs(d)/p.Delta) + 2
	lo, hi := -K*p.Delta+math.Min(0, -d), K*p.Delta+math.Max(0, -d)
	var bps []float64
	for k := -K - 2; k <= K+2; k++ {
		// density breakpoints of f at x and of F(x+d) at x = y - d.
		for _, y := range []float64{k * p.Delta, (k + p.Gamma) * p.Delta, (k - p.Gamma) * p.Delta} {
			for _, x := range []float64{y, y - d} {
				if x > lo && x < hi {
					bps = append(bps, x)
				}
			}
		}
	}
	bps = append(bps, lo, hi)
	slices.Sort(bps)
	bps = slices.Compact(bps)
	s := 0.0
	for i := 0; i+1 < len(bps); i++ {
		a, b := bps[i], bps[i+1]
		m := (a + b) / 2
		// f constant and F linear on (a, b): midpoint rule is exact.
		s += (b - a) * p.PDF(m) * p.CDF(m+d)
	}
	return s
}

func TestSelectProbsStaircaseTwoCandidates(t *testing.T) {
	for _, p := range stairCases {
		for _, d := range []float64{0, 0.3, 1, 2.5, 7, 20} {
			gap := d * p.Delta
			pr, err := SelectProbs([]float64{1, 1 - gap}, p)
			if err != nil {
				t.Fatal(err)
			}
			w0, w1 := stairTwo(p, gap), stairTwo(p, -gap)
			if math.Abs(w0+w1-1) > 1e-12 {
				t.Fatalf("%+v d=%v: reference sums to %v", p, d, w0+w1)
			}
			if !close(pr[0], w0, 1e-10) || !close(pr[1], w1, 1e-10) {
				t.Errorf("%+v d=%v: %v, want [%v %v]", p, d, pr, w0, w1)
			}
		}
	}
}

func TestSelectProbsSymmetryAndShift(t *testing.T) {
	noises := []Noise{Laplace{0.5}, StaircaseParams{Eps: 0.3, Delta: 1, Gamma: OptimalGamma(0.3)}}
	for _, nz := range noises {
		for _, n := range []int{2, 3, 7} {
			vals := make([]float64, n)
			for i := range vals {
				vals[i] = 4.25
			}
			p, err := SelectProbs(vals, nz)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range p {
				if !close(v, 1/float64(n), 1e-12) {
					t.Errorf("%+v n=%d equal: %v", nz, n, p)
				}
			}
		}
		vals := []float64{0, 1.5, -2, 0.7, 0.7, 3}
		p0, _ := SelectProbs(vals, nz)
		shifted := make([]float64, len(vals))
		for i, v := range vals {
			shifted[i] = v + 123.456
		}
		p1, _ := SelectProbs(shifted, nz)
		perm := []int{5, 3, 0, 4, 2, 1}
		pv := make([]float64, len(vals))
		for i, j := range perm {
			pv[i] = vals[j]
		}
		p2, _ := SelectProbs(pv, nz)
		for i := range vals {
			if !close(p0[i], p1[i], 1e-9) {
				t.Errorf("%+v shift: %v vs %v", nz, p0, p1)
			}
		}
		for i, j := range perm {
			if !close(p2[i], p0[j], 1e-9) {
				t.Errorf("%+v permutation: %v vs %v", nz, p2, p0)
			}
		}
	}
}

func TestSelectProbsEdgeCases(t *testing.T) {
	if p, err := SelectProbs(nil, Laplace{1}); err != nil || len(p) != 0 {
		t.Errorf("empty: %v %v", p, err)
	}
	if p, err := SelectProbs([]float64{3}, Laplace{1}); err != nil || p[0] != 1 {
		t.Errorf("single: %v %v", p, err)
	}
	p, err := SelectProbs([]float64{1, 2, 2, 0}, Laplace{0})
	if err != nil || !slices.Equal(p, []float64{0, 0.5, 0.5, 0}) {
		t.Errorf("zero noise: %v %v", p, err)
	}
	p, err = SelectProbs([]float64{1, 2, 2, 0}, StaircaseParams{Eps: 1, Delta: 0, Gamma: 0.5})
	if err != nil || !slices.Equal(p, []float64{0, 0.5, 0.5, 0}) {
		t.Errorf("zero staircase: %v %v", p, err)
	}
	if _, err := SelectProbs([]float64{0, 1e9}, StaircaseParams{Eps: 1, Delta: 1e-3, Gamma: 0.5}); !errors.Is(err, ErrInvalid) {
		t.Errorf("huge staircase range: %v", err)
	}
}

func TestChiSquare(t *testing.T) {
	stat, df, p := ChiSquare([]int{25, 25, 50}, []float64{0.25, 0.25, 0.5})
	if stat != 0 || df != 2 || p != 1 {
		t.Errorf("perfect fit: %v %v %v", stat, df, p)
	}
	// Hand computation: obs 30,20,50 vs 25,25,50: stat = 1 + 1 = 2, df 2,
	// p = exp(-1).
	stat, df, p = ChiSquare([]int{30, 20, 50}, []float64{1, 1, 2})
	if math.Abs(stat-2) > 1e-12 || df != 2 || math.Abs(p-math.Exp(-1)) > 1e-12 {
		t.Errorf("hand case: %v %v %v", stat, df, p)
	}
	// Cells with expected count < 5 are pooled: 2 + 2 of 100 -> one cell.
	stat, df, p = ChiSquare([]int{48, 48, 1, 3}, []float64{0.48, 0.48, 0.02, 0.02})
	if stat != 0 || df != 2 || p != 1 {
		t.Errorf("pooled: %v %v %v", stat, df, p)
	}
	if stat, _, p = ChiSquare([]int{5, 1}, []float64{1, 0}); !math.IsInf(stat, 1) || p != 0 {
		t.Errorf("impossible cell: %v %v", stat, p)
	}
	if _, df, p = ChiSquare([]int{7}, []float64{1}); df != 0 || p != 1 {
		t.Errorf("one cell: %v %v", df, p)
	}
	for _, c := range []struct {
		o []int
		e []float64
	}{{[]int{1}, []float64{1, 2}}, {[]int{-1, 2}, []float64{1, 1}}, {[]int{1, 2}, []float64{math.NaN(), 1}}, {[]int{0, 0}, []float64{1, 1}}} {
		if s, _, p := ChiSquare(c.o, c.e); !math.IsNaN(s) || !math.IsNaN(p) {
			t.Errorf("invalid %v %v: %v %v", c.o, c.e, s, p)
		}
	}
}
