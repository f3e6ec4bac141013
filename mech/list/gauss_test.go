package list

import (
	"math"
	"math/rand/v2"
	"testing"
)

// directGauss is the Gaussian posterior mean by definition: a sum over
// every k in [0, kmax] of the Poisson prior times the Gaussian likelihood.
func directGauss(x, lambda, sd float64, kmax int) float64 {
	ll := math.Log(lambda)
	top := math.Inf(-1)
	f := make([]float64, kmax+1)
	for k := range f {
		d := x - float64(k)
		f[k] = float64(k)*ll - logFact(k) - d*d/(2*sd*sd)
		top = max(top, f[k])
	}
	var num, den float64
	for k, v := range f {
		w := math.Exp(v - top)
		num += float64(k) * w
		den += w
	}
	return num / den
}

func gaussMean(x, lambda, sd float64, kmax int) float64 {
	var ps postScale
	ps.set(sd, kmax, true)
	return ps.mean(x, lambda)
}

// TestGaussMean: the recurrence and its log-domain fallback against the
// direct sum on random inputs (relative 1e-9), the mode against a scan,
// monotonicity in x, and the limits.
func TestGaussMean(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for i := range 20000 {
		x := -8 + 60*rng.Float64()
		if i%5 == 0 {
			x = math.Round(x)
		}
		lambda := 20*rng.Float64()*rng.Float64() + 1e-3
		sd := math.Exp(-3.5 + 6*rng.Float64()) // 0.03 (log domain) .. 12
		kmax := 1 + rng.IntN(80)
		got, want := gaussMean(x, lambda, sd, kmax), directGauss(x, lambda, sd, kmax)
		if math.Abs(got-want) > 1e-9*max(1, want) {
			t.Fatalf("meanGauss(%v, %v, %v, %d) = %v, want %v", x, lambda, sd, kmax, got, want)
		}
		// The mode is the argmax of the log weight (smallest on ties).
		ib2 := 1 / (sd * sd)
		m := gaussMode(x, math.Log(lambda), lambda, ib2, kmax)
		best, bk := math.Inf(-1), -1
		for k := 0; k <= kmax; k++ {
			d := x - float64(k)
			if v := float64(k)*math.Log(lambda) - logFact(k) - d*d*ib2/2; bk < 0 || v > best+1e-12*max(1, math.Abs(best)) {
				best, bk = v, k
			}
		}
		if m != bk {
			// Accept a tie within rounding.
			d1, d2 := x-float64(m), x-float64(bk)
			v1 := float64(m)*math.Log(lambda) - logFact(m) - d1*d1*ib2/2
			v2 := float64(bk)*math.Log(lambda) - logFact(bk) - d2*d2*ib2/2
			if math.Abs(v1-v2) > 1e-9*max(1, math.Abs(v2)) {
				t.Fatalf("gaussMode(%v, %v, %v, %d) = %d, scan %d", x, lambda, sd, kmax, m, bk)
			}
		}
	}
	// Far observations and large caps stay finite.
	for _, tc := range []struct{ x, lambda, sd float64 }{{1e6, 1, 0.1}, {-1e6, 1, 0.1}, {500, 0.01, 1}, {3, 1e-6, 50}} {
		got, want := gaussMean(tc.x, tc.lambda, tc.sd, 1000), directGauss(tc.x, tc.lambda, tc.sd, 1000)
		if math.IsNaN(got) || math.Abs(got-want) > 1e-9*max(1, want) {
			t.Errorf("meanGauss%+v = %v, want %v", tc, got, want)
		}
	}
	prev := -1.0
	for x := -6.0; x <= 20; x += 0.03 {
		m := gaussMean(x, 1.5, 0.9, 30)
		if m < prev-1e-12 {
			t.Fatalf("not monotone at %v: %v < %v", x, m, prev)
		}
		prev = m
	}
	// Large noise: the prior mean; vanishing noise: the nearest lattice point.
	if m := gaussMean(50, 2, 1e4, 200); math.Abs(m-2) > 1e-3 {
		t.Errorf("huge noise: %v, want the prior mean 2", m)
	}
	if m := gaussMean(7.2, 6, 1e-3, 50); math.Abs(m-7) > 1e-9 {
		t.Errorf("tiny noise: %v, want 7", m)
	}
}

// TestGaussUpperBounds: the pruning bound of the Gaussian posterior (the
// mean at x = 0 for x <= 0, grid points above) is never below the mean.
func TestGaussUpperBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for range 30000 {
		var ps postScale
		ps.set(math.Exp(-2+4*rng.Float64()), 40, true)
		cnt := float64(rng.IntN(10))
		lambda := 0.7 * (cnt + 0.3)
		x := -6 + 25*rng.Float64()
		checkUpper(t, &ps, x, cnt)
		// meanCount never returns the x = 0 value for x < 0.
		if x < -0.5 && ps.meanCount(x, cnt, lambda) == ps.mean(0, lambda) {
			t.Fatalf("meanCount used the x <= 0 cache for Gaussian noise at x = %v", x)
		}
	}
}

// TestNormUpper: Q(normUpper(s)) = s to 1e-12 relative across both tails,
// deep into the tail where Erfcinv alone loses every digit.
func TestNormUpper(t *testing.T) {
	q := func(x float64) float64 { return math.Erfc(x/math.Sqrt2) / 2 }
	for _, s := range []float64{0.5, 0.3, 0.1, 1e-3, 1e-8, 1e-12, 1e-13, 1e-20, 1e-50, 1e-150, 1e-300} {
		x := normUpper(s, 1-s)
		if got := q(x); math.Abs(got-s) > 1e-12*s {
			t.Errorf("Q(normUpper(%g)) = %g (x %v)", s, got, x)
		}
		if s < 0.5 {
			if y := normUpper(1-s, s); y != -x {
				t.Errorf("normUpper(1-%g) = %v, want %v", s, y, -x)
			}
		}
	}
	if normUpper(0, 1) != math.Inf(1) || normUpper(1, 0) != math.Inf(-1) {
		t.Error("endpoints")
	}
}

// TestGaussCosts: a Gaussian list is charged rho = eps^2/2 and no pure eps
// (+Inf), and reads L2, not L1.
func TestGaussCosts(t *testing.T) {
	c := Combine{W: 1, Post: true, Rho: 0.5, A: 0.3, Gauss: true}
	q := &Query{Pub: []float64{1, 0}, Evid: []float64{0, 1}, Zero: 5, L1: 4, L2: 0}
	out, err := Release(q, 2, c, 3, rand.New(rand.NewPCG(1, 2)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Noisy || out.Cost != 0 || out.Rho != 0 {
		t.Errorf("L2 = 0: %+v, want noiseless and free", out)
	}
	q.L2 = 2
	if out, err = Release(q, 2, c, 3, rand.New(rand.NewPCG(1, 2)), nil); err != nil {
		t.Fatal(err)
	}
	if !out.Noisy || !math.IsInf(out.Cost, 1) || out.Rho != 2 {
		t.Errorf("Gaussian list: %+v, want noisy, cost +Inf, rho 2", out)
	}
	lc := c
	lc.Gauss = false
	if out, err = Release(q, 2, lc, 3, rand.New(rand.NewPCG(1, 2)), nil); err != nil {
		t.Fatal(err)
	}
	if out.Cost != 2 || out.Rho != 2 {
		t.Errorf("Laplace list: %+v, want cost 2, rho 2", out)
	}
	if err := (Combine{W: 1, Gauss: true}).Validate(); err == nil {
		t.Error("a Gaussian threshold combination was accepted")
	}
}

// TestGaussSkipChangesNothing: the pruning bound changes no Gaussian list.
func TestGaussSkipChangesNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	var a Scratch
	var skipped int
	for it := range 200 {
		n := 20 + rng.IntN(300)
		q := Query{Pub: make([]float64, n), Evid: make([]float64, n), Zero: rng.IntN(50), L1: 3, L2: 1 + rng.Float64(), MaxEvid: 2 + rng.IntN(40)}
		for i := range n {
			q.Pub[i] = float64(rng.IntN(6) * rng.IntN(3))
			q.Evid[i] = float64(rng.IntN(3) * rng.IntN(2))
		}
		c := Combine{W: 0.5 + rng.Float64(), Post: true, Rho: 0.2 + 0.3*float64(it/20%3), A: 0.3, Gauss: true}
		eps := []float64{0.3, 1, 3, 10}[it/20%4]
		k := 1 + rng.IntN(30)
		skipped += sameWithoutSkips(t, it, &q, eps, c, k, rng.Uint64(), &a)
	}
	if skipped == 0 {
		t.Fatal("no candidate was skipped: the test does not exercise the bound")
	}
}

// TestGaussFit: a Gaussian grid fits Gaussian combinations with Gaussian
// training noise, and refuses the threshold family.
func TestGaussFit(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	var qs []TrainQuery
	for range 60 {
		n := 40
		q := TrainQuery{Pub: make([]float64, n), Evid: make([]float64, n), Label: make([]bool, n), L1: 6, L2: 1, MaxEvid: 20}
		for i := range n {
			pos := i < 4
			q.Label[i] = pos
			if pos {
				q.Pub[i] = float64(rng.IntN(3))
				q.Evid[i] = float64(2 + rng.IntN(3))
			} else {
				q.Pub[i] = float64(rng.IntN(3))
			}
		}
		qs = append(qs, q)
	}
	g := DefaultPosterior(0.5).Gaussian()
	c, rep, err := Fit(qs, 3, 10, g, 2, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Gauss || c.W == 0 || rep.AUC <= rep.PublicAUC {
		t.Errorf("Gaussian fit chose %+v (AUC %v vs public %v): want the Gaussian default, above public-only", c, rep.AUC, rep.PublicAUC)
	}
	bad := DefaultGrid(0.5)
	bad.Gauss = true
	if _, _, err := Fit(qs, 3, 10, bad, 1, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("a Gaussian grid with thresholds was accepted")
	}
}

// TestGaussBruteForcePower: the brute-force comparison (which passes for
// the Gaussian cases in TestReleaseMatchesBruteForce) tells the Gaussian
// release at eps from one at eps/2 and from Laplace noise of the same
// bound: it has the power to catch a wrong noise scale or family.
func TestGaussBruteForcePower(t *testing.T) {
	tc := exactCases[len(exactCases)-3] // "gauss"
	if tc.name != "gauss" {
		t.Fatalf("case %q", tc.name)
	}
	a := histogram(closedForm, &tc.q, tc.eps, tc.c, tc.k, 30000, 1)
	half := histogram(bruteRelease, &tc.q, tc.eps/2, tc.c, tc.k, 30000, 2)
	if _, _, p := twoSample(a, half); p > 1e-6 {
		t.Errorf("eps/2 not detected (p %.3g)", p)
	}
	lap := func(q *Query, eps float64, c Combine, k int, rng *rand.Rand) []int {
		q2 := *q
		q2.L1 = q.L2 // Laplace noise at the Gaussian's bound, Gaussian posterior
		n := q2.N()
		b := Scale(q2.L1, eps)
		score := make([]float64, n)
		keys := make([]uint64, n)
		var ps postScale
		ps.set(b, q.MaxEvid, true)
		for i := range n {
			p, e := 0.0, 0.0
			if i < len(q.Pub) {
				p, e = q.Pub[i], q.Evid[i]
			}
			cnt, om := p, 1.0
			score[i] = p + c.bonus(e+b*laplace(rng), 0, cnt, om, &ps)
			keys[i] = rng.Uint64()
		}
		return sortedPrefix(score, keys, min(k, n))
	}
	l := histogram(lap, &tc.q, tc.eps, tc.c, tc.k, 30000, 3)
	if _, _, p := twoSample(a, l); p > 1e-6 {
		t.Errorf("Laplace noise not detected (p %.3g)", p)
	}
}
