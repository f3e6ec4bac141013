package list

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"gonum.org/v1/gonum/stat/distuv"
)

// bruteRelease is the mechanism by definition: every candidate, zero block
// included, gets its own Laplace (Gaussian) noise; rank by score, ties
// uniformly.
func bruteRelease(q *Query, eps float64, c Combine, k int, rng *rand.Rand) []int {
	n := q.N()
	bound := c.Bound(q.L1, q.L2)
	b := Scale(bound, eps)
	tau := c.Tau(b, n)
	score := make([]float64, n)
	keys := make([]uint64, n)
	mo := q.meanOmega()
	kmax := q.MaxEvid
	if kmax <= 0 {
		kmax = math.MaxInt32
	}
	var ps postScale // its own, not Release's
	ps.set(b, kmax, c.Gauss)
	for i := range n {
		p, e, cnt, om := 0.0, 0.0, 0.0, mo
		if i < len(q.Pub) {
			p, e = q.Pub[i], q.Evid[i]
			cnt, om = q.omega(i, mo)
		}
		s := p
		if c.W > 0 {
			if bound > 0 {
				e += b * drawNoise(rng, c.Gauss)
			}
			s += c.bonus(e, tau, cnt, om, &ps)
		}
		score[i] = s
		keys[i] = rng.Uint64()
	}
	return sortedPrefix(score, keys, min(k, n))
}

// sortedPrefix ranks every index by a full sort (score descending, then
// key) and returns the first k: the reference for topK and Release.
func sortedPrefix(score []float64, keys []uint64, k int) []int {
	idx := make([]int, len(score))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool {
		x, y := idx[a], idx[b]
		if score[x] != score[y] {
			return score[x] > score[y]
		}
		return keys[x] < keys[y]
	})
	return idx[:k]
}

// twoSample is the chi-square two-sample test of equal-size samples of
// list outcomes; cells with fewer than 10 observations in total are pooled.
func twoSample(a, b map[string]int) (stat float64, df int, p float64) {
	keys := map[string]bool{}
	for x := range a {
		keys[x] = true
	}
	for x := range b {
		keys[x] = true
	}
	var pa, pb int
	cells := 0
	for x := range keys {
		if a[x]+b[x] < 10 {
			pa += a[x]
			pb += b[x]
			continue
		}
		d := float64(a[x] - b[x])
		stat += d * d / float64(a[x]+b[x])
		cells++
	}
	if pa+pb > 0 {
		d := float64(pa - pb)
		stat += d * d / float64(pa+pb)
		cells++
	}
	df = cells - 1
	if df < 1 {
		return stat, df, 1
	}
	return stat, df, 1 - distuv.ChiSquared{K: float64(df)}.CDF(stat)
}

type sampler func(q *Query, eps float64, c Combine, k int, rng *rand.Rand) []int

func closedForm(q *Query, eps float64, c Combine, k int, rng *rand.Rand) []int {
	out, err := Release(q, eps, c, k, rng, nil)
	if err != nil {
		panic(err)
	}
	return out.IDs
}

func histogram(f sampler, q *Query, eps float64, c Combine, k, draws int, seed uint64) map[string]int {
	rng := randx.Seeded(seed)
	h := map[string]int{}
	for range draws {
		h[fmt.Sprint(f(q, eps, c, k, rng))]++
	}
	return h
}

var exactCases = []struct {
	name string
	q    Query
	eps  float64
	c    Combine
	k    int
}{
	{"small-zero-list", Query{Pub: []float64{1, 0, 0, 2}, Evid: []float64{0, 1, 2, 0}, Zero: 3, L1: 1}, 1, Combine{W: 1, T: 0.3}, 3},
	{"tau0-zero-only", Query{Zero: 5, L1: 1}, 0.7, Combine{W: 1}, 2},
	{"big-zero-rejection", Query{Pub: []float64{0.5, 0}, Evid: []float64{1, 3}, Zero: 40, L1: 2}, 2, Combine{W: 2, T: 0.2}, 2},
	{"ties-public", Query{Pub: []float64{1, 1, 1, 0}, Evid: []float64{0, 0, 0, 0}, Zero: 2, L1: 1}, 1, Combine{W: 0.5, T: 1}, 3},
	{"noiseless", Query{Pub: []float64{1, 0, 1}, Evid: []float64{2, 1, 0}, Zero: 2, L1: 0}, 1, Combine{W: 1}, 4},
	{"public-only", Query{Pub: []float64{2, 0, 1}, Evid: []float64{9, 9, 0}, Zero: 3, L1: 1}, 1, Combine{}, 3},
	{"posterior", Query{Pub: []float64{1, 0, 0, 2}, Evid: []float64{0, 1, 2, 0}, Zero: 3, L1: 1, MaxEvid: 4}, 1, Combine{W: 1, Post: true, Rho: 0.8, A: 0.3}, 3},
	{"posterior-weighted", Query{Pub: []float64{0.9, 0, 0.4}, Evid: []float64{1, 2, 0}, Count: []float64{2, 0, 1}, Zero: 30, L1: 1}, 2, Combine{W: 2, Post: true, Rho: 0.5, A: 1}, 2},
	{"gauss", Query{Pub: []float64{1, 0, 0, 2}, Evid: []float64{0, 1, 2, 0}, Zero: 3, L1: 3, L2: 1, MaxEvid: 4}, 1, Combine{W: 1, Post: true, Rho: 0.8, A: 0.3, Gauss: true}, 3},
	{"gauss-zero-heavy", Query{Pub: []float64{0.9, 0, 0.4}, Evid: []float64{1, 2, 0}, Count: []float64{2, 0, 1}, Zero: 30, L1: 2, L2: 0.8}, 2, Combine{W: 2, Post: true, Rho: 0.5, A: 1, Gauss: true}, 3},
	{"gauss-zero-only", Query{Zero: 6, L1: 1, L2: 1}, 0.5, Combine{W: 1, Post: true, Rho: 0.3, A: 0.3, Gauss: true}, 2},
}

// TestReleaseMatchesBruteForce: the closed-form zero block and tie handling
// give the same distribution over ordered lists as drawing noise for every
// candidate (two-sample chi-square, fixed seeds).
func TestReleaseMatchesBruteForce(t *testing.T) {
	const draws = 60000
	for _, tc := range exactCases {
		t.Run(tc.name, func(t *testing.T) {
			a := histogram(closedForm, &tc.q, tc.eps, tc.c, tc.k, draws, 1)
			b := histogram(bruteRelease, &tc.q, tc.eps, tc.c, tc.k, draws, 2)
			stat, df, p := twoSample(a, b)
			if p < 1e-4 {
				t.Fatalf("closed form differs from brute force: chi2 %.1f, df %d, p %.2g", stat, df, p)
			}
		})
	}
}

// TestReleaseSkipChangesNothing: skipping candidates by their posterior
// bound (postScale.upper) gives exactly the list of evaluating every
// candidate, from the same generator state, and does skip.
func TestReleaseSkipChangesNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var skipped int
	var a Scratch
	for it := range 300 {
		n := 20 + rng.IntN(500)
		q := Query{Pub: make([]float64, n), Evid: make([]float64, n), Count: make([]float64, n), Zero: rng.IntN(50), L1: 1, MaxEvid: 2 + rng.IntN(40)}
		for i := range n {
			c := float64(rng.IntN(6) * rng.IntN(3))
			if it%5 == 0 && i%3 == 0 {
				c += 0.5 // fractional counts: no bound, evaluated
			}
			q.Count[i] = c
			q.Pub[i] = c * (0.3 + rng.Float64())
			q.Evid[i] = float64(rng.IntN(3) * rng.IntN(2))
		}
		if it%4 == 0 {
			q.Count = nil // CN: counts are the public scores
			for i := range n {
				q.Pub[i] = math.Round(q.Pub[i])
			}
		}
		// Scale and prior fixed over blocks of 20 cases, so the bound cache
		// is reused across queries with other caps.
		c := Combine{W: 0.5 + rng.Float64(), Post: true, Rho: 0.2 + 0.3*float64(it/20%3), A: 0.3}
		eps := []float64{0.3, 1, 3, 10}[it/20%4]
		k := 1 + rng.IntN(30)
		// a is shared by every case: its bound cache survives other caps (MaxEvid).
		skipped += sameWithoutSkips(t, it, &q, eps, c, k, rng.Uint64(), &a)
	}
	if skipped == 0 {
		t.Fatal("no candidate was skipped: the test does not exercise the bound")
	}
	// upper bounds the mean wherever it answers.
	for range 20000 {
		var ps postScale
		ps.set(math.Exp(-3+4*rng.Float64()), 40, false)
		checkUpper(t, &ps, -3+20*rng.Float64(), float64(rng.IntN(10)))
	}
}

// checkUpper fails t when ps.upper answers below the posterior mean at
// (x, cnt) under the prior lambda = 0.7 (cnt + 0.3).
func checkUpper(t *testing.T, ps *postScale, x, cnt float64) {
	t.Helper()
	lambda := 0.7 * (cnt + 0.3)
	if ub, ok := ps.upper(x, cnt, lambda); ok && ub < ps.mean(x, lambda)*(1-1e-12) {
		t.Fatalf("upper(%v, %v) = %v < mean %v (scale %v, gauss %v)", x, cnt, ub, ps.mean(x, lambda), ps.b, ps.gauss)
	}
}

// sameWithoutSkips releases q twice from the same generator state, with
// a's pruning and with none, fails t unless the lists are identical, and
// returns how many candidates a skipped.
func sameWithoutSkips(t *testing.T, it int, q *Query, eps float64, c Combine, k int, seed uint64, a *Scratch) int {
	t.Helper()
	a.skipped = 0
	b := Scratch{noPrune: true}
	la, err := Release(q, eps, c, k, rand.New(rand.NewPCG(seed, 1)), a)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := Release(q, eps, c, k, rand.New(rand.NewPCG(seed, 1)), &b)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(la.IDs, lb.IDs) {
		t.Fatalf("case %d: with skips %v, without %v", it, la.IDs, lb.IDs)
	}
	if b.skipped != 0 {
		t.Fatal("noPrune skipped")
	}
	return a.skipped
}

// TestReleaseNegativeControl: a sampler that draws the zero block's values
// from the untruncated tail (the threshold forgotten) is caught by the
// same test.
func TestReleaseNegativeControl(t *testing.T) {
	wrong := func(q *Query, eps float64, c Combine, k int, rng *rand.Rand) []int {
		q2 := *q
		q2.Zero = 0
		b := Scale(q.L1, eps)
		ids := bruteRelease(&q2, eps, c, k, rng) // explicit part only
		// Every zero-block candidate above 0 (not tau) competes.
		type it struct {
			id int
			s  float64
		}
		var all []it
		for _, id := range ids {
			all = append(all, it{id, q.Pub[id] + c.W*max(0, q.Evid[id]-c.Tau(b, q.N()))})
		}
		for j := range q.Zero {
			if x := b * laplace(rng); x > 0 {
				all = append(all, it{len(q.Pub) + j, c.W * x})
			}
		}
		slices.SortStableFunc(all, func(a, b it) int { return -cmpF(a.s, b.s) })
		out := []int{}
		for _, x := range all[:min(k, len(all))] {
			out = append(out, x.id)
		}
		return out
	}
	tc := exactCases[2]
	a := histogram(closedForm, &tc.q, tc.eps, tc.c, tc.k, 30000, 1)
	b := histogram(wrong, &tc.q, tc.eps, tc.c, tc.k, 30000, 2)
	if _, _, p := twoSample(a, b); p > 1e-6 {
		t.Fatalf("wrong sampler not detected (p %.3g)", p)
	}
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestReleaseCostIndependentOfK: one charge per list whatever K, 0 when the
// noisy evidence is not read.
func TestReleaseCostIndependentOfK(t *testing.T) {
	q := &Query{Pub: []float64{1, 0, 2}, Evid: []float64{0, 1, 1}, Zero: 100, L1: 1}
	rng := randx.Seeded(3)
	for _, k := range []int{1, 3, 30, 200} {
		for _, tc := range []struct {
			c    Combine
			l1   float64
			want float64
		}{{Combine{W: 1}, 1, 0.5}, {Combine{}, 1, 0}, {Combine{W: 1}, 0, 0}} {
			q.L1 = tc.l1
			out, err := Release(q, 0.5, tc.c, k, rng, nil)
			if err != nil {
				t.Fatal(err)
			}
			if out.Cost != tc.want || len(out.IDs) != min(k, q.N()) {
				t.Errorf("k=%d %+v l1=%v: cost %v (want %v), %d ids", k, tc.c, tc.l1, out.Cost, tc.want, len(out.IDs))
			}
			seen := map[int]bool{}
			for _, id := range out.IDs {
				if seen[id] || id < 0 || id >= q.N() {
					t.Fatalf("bad or repeated id %d in %v", id, out.IDs)
				}
				seen[id] = true
			}
		}
	}
}

// TestReleaseRejectsBadInput: errors, never panics.
func TestReleaseRejectsBadInput(t *testing.T) {
	ok := Query{Pub: []float64{1}, Evid: []float64{0}, L1: 1}
	for _, tc := range []struct {
		name string
		q    *Query
		eps  float64
		c    Combine
		k    int
	}{
		{"nil", nil, 1, Combine{W: 1}, 1},
		{"lengths", &Query{Pub: []float64{1}, L1: 1}, 1, Combine{W: 1}, 1},
		{"nan-pub", &Query{Pub: []float64{math.NaN()}, Evid: []float64{0}}, 1, Combine{W: 1}, 1},
		{"neg-pub", &Query{Pub: []float64{-1}, Evid: []float64{0}}, 1, Combine{W: 1}, 1},
		{"inf-evid", &Query{Pub: []float64{1}, Evid: []float64{math.Inf(1)}}, 1, Combine{W: 1}, 1},
		{"eps0", &ok, 0, Combine{W: 1}, 1},
		{"epsinf", &ok, math.Inf(1), Combine{W: 1}, 1},
		{"k0", &ok, 1, Combine{W: 1}, 0},
		{"negW", &ok, 1, Combine{W: -1}, 1},
		{"nanT", &ok, 1, Combine{W: 1, T: math.NaN()}, 1},
		{"negZero", &Query{Zero: -1}, 1, Combine{W: 1}, 1},
		{"infL1", &Query{Pub: []float64{1}, Evid: []float64{0}, L1: math.Inf(1)}, 1, Combine{W: 1}, 1},
		{"nanL1", &Query{Pub: []float64{1}, Evid: []float64{0}, L1: math.NaN()}, 1, Combine{W: 1}, 1},
		{"count-len", &Query{Pub: []float64{1}, Evid: []float64{0}, Count: []float64{1, 2}, L1: 1}, 1, Combine{W: 1}, 1},
		{"post-no-A", &ok, 1, Combine{W: 1, Post: true, Rho: 1}, 1},
		{"post-no-rho", &ok, 1, Combine{W: 1, Post: true, A: 1}, 1},
	} {
		if _, err := Release(tc.q, tc.eps, tc.c, tc.k, randx.Seeded(1), nil); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

// TestFit: uninformative evidence keeps public-only; informative evidence
// with little noise is used.
func TestFit(t *testing.T) {
	mk := func(informative bool, seed uint64) []TrainQuery {
		rng := randx.Seeded(seed)
		var qs []TrainQuery
		for range 150 {
			var q TrainQuery
			for i := range 80 {
				pos := i < 8
				pub := float64(rng.IntN(3))
				if pos && rng.Float64() < 0.5 {
					pub++
				}
				e := float64(rng.IntN(2))
				if informative && pos {
					e += 3
				}
				q.Pub, q.Evid, q.Label = append(q.Pub, pub), append(q.Evid, e), append(q.Label, pos)
			}
			q.L1 = 1
			qs = append(qs, q)
		}
		return qs
	}
	c, rep, err := Fit(mk(false, 1), 1, 10, DefaultGrid(0.5), 2, randx.Seeded(2))
	if err != nil {
		t.Fatal(err)
	}
	if c.W != 0 {
		t.Errorf("uninformative evidence: chose %+v (%+v)", c, rep)
	}
	c, rep, err = Fit(mk(true, 1), 5, 10, DefaultGrid(0.5), 2, randx.Seeded(2))
	if err != nil {
		t.Fatal(err)
	}
	if c.W == 0 || rep.AUC < rep.PublicAUC+MinGain {
		t.Errorf("informative evidence: chose %+v (%+v)", c, rep)
	}
	if c2, _, err := Fit(mk(true, 1), 5, 10, Grid{PW: []float64{1}, Rho: []float64{0.5}, A: []float64{0.3}}, 2, randx.Seeded(2)); err != nil || !c2.Post {
		t.Errorf("posterior-only grid: chose %+v, %v", c2, err)
	}
	if _, _, err := Fit(nil, 1, 10, DefaultGrid(0.5), 1, randx.Seeded(1)); err == nil {
		t.Error("no queries: no error")
	}
	if _, _, err := Fit(mk(true, 1), 0, 10, DefaultGrid(0.5), 1, randx.Seeded(1)); err == nil {
		t.Error("eps 0: no error")
	}
}

func TestTopK(t *testing.T) {
	rng := randx.Seeded(5)
	var all []int
	for i := range 2000 {
		n := 1 + rng.IntN(30)
		if i%10 == 0 {
			n = 1 + rng.IntN(3000)
		}
		s := make([]float64, n)
		keys := make([]uint64, n)
		for i := range s {
			s[i] = float64(rng.IntN(4))
			keys[i] = rng.Uint64()
		}
		k := 1 + rng.IntN(n+3)
		got := topK(s, keys, k, nil, &all)
		if want := sortedPrefix(s, keys, min(k, n)); !slices.Equal(got, want) {
			t.Fatalf("topK %v != sorted prefix %v", got, want)
		}
	}
}

// TestPerturbOnce: protected pairs flip at rate 1/(1+e^eps), others never.
func TestPerturbOnce(t *testing.T) {
	var edges, prot []graph.Edge
	for a := int32(0); a < 40; a++ {
		for b := a + 1; b < 40; b++ {
			e := graph.Edge{U: a, V: b}
			if (a+b)%3 == 0 {
				edges = append(edges, e)
			}
			if (a*b)%5 == 1 {
				prot = append(prot, e)
			}
		}
	}
	g, _, err := graph.FromEdges(40, edges, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := protect.New(40, prot)
	if err != nil {
		t.Fatal(err)
	}
	rng := randx.Seeded(9)
	flips, trials := 0, 0
	for range 50 {
		h, err := PerturbOnce(g, p, 1, rng)
		if err != nil {
			t.Fatal(err)
		}
		for a := int32(0); a < 40; a++ {
			for b := a + 1; b < 40; b++ {
				if g.HasEdge(a, b) != h.HasEdge(a, b) {
					if !p.Has(a, b) {
						t.Fatalf("non-protected pair {%d,%d} flipped", a, b)
					}
					flips++
				}
			}
		}
		trials += len(prot)
	}
	got, want := float64(flips)/float64(trials), FlipProb(1)
	if math.Abs(got-want) > 4*math.Sqrt(want*(1-want)/float64(trials)) {
		t.Fatalf("flip rate %v, want %v", got, want)
	}
	if _, err := PerturbOnce(g, p, 0, rng); err == nil {
		t.Error("eps 0 accepted")
	}
	if c := PerturbOnceCost(p, privunit.Pair, 2); c != 2 {
		t.Errorf("pair cost %v", c)
	}
	m := 0
	for w := int32(0); w < 40; w++ {
		m = max(m, p.Count(w))
	}
	if c := PerturbOnceCost(p, privunit.Party, 2); c != float64(2*m) {
		t.Errorf("party cost %v, want %v", c, 2*m)
	}
}

// TestPostMean: the posterior mean against a direct sum, its limits and
// its monotonicity in the observation.
func TestPostMean(t *testing.T) {
	direct := func(x, lambda, b float64, kmax int) float64 {
		var num, den float64
		p := math.Exp(-lambda)
		for k := 0; k <= kmax; k++ {
			w := p * math.Exp(-math.Abs(x-float64(k))/b)
			num += float64(k) * w
			den += w
			p *= lambda / float64(k+1)
		}
		return num / den
	}
	for _, tc := range []struct {
		x, lambda, b float64
		kmax         int
	}{{0, 1, 1, 20}, {3.5, 0.5, 0.3, 20}, {-2, 2, 2, 30}, {10, 1, 1, 5}, {1, 4, 0.1, 40}} {
		if got, want := postMean(tc.x, tc.lambda, tc.b, tc.kmax), direct(tc.x, tc.lambda, tc.b, tc.kmax); math.Abs(got-want) > 1e-9 {
			t.Errorf("postMean%+v = %v, want %v", tc, got, want)
		}
	}
	// Random cases against the direct sum (relative 1e-9), and the
	// recurrence against the log-domain path it falls back to.
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range 20000 {
		x := -5 + 45*rng.Float64()
		if i%4 == 0 {
			x = math.Round(x) // on a lattice point: the crossing case
		}
		lambda := 20 * rng.Float64() * rng.Float64()
		b := math.Exp(-3 + 5*rng.Float64())
		kmax := 1 + rng.IntN(60)
		if lambda == 0 {
			continue
		}
		got, want := postMean(x, lambda, b, kmax), direct(x, lambda, b, kmax)
		if math.Abs(got-want) > 1e-9*max(1, want) {
			t.Fatalf("postMean(%v, %v, %v, %d) = %v, want %v", x, lambda, b, kmax, got, want)
		}
		if lg := postMeanLog(x, lambda, b, kmax); math.Abs(got-lg) > 1e-9*max(1, lg) {
			t.Fatalf("postMean(%v, %v, %v, %d) = %v, log-domain %v", x, lambda, b, kmax, got, lg)
		}
	}
	// The cache of x <= 0 means: equal to the uncached mean at every
	// x <= 0 (the mean does not depend on x there), per count, and not
	// used for x > 0 or fractional counts.
	for _, b := range []float64{0.1, 0.5, 2} {
		var ps postScale
		ps.set(b, 40, false)
		for i := range 2000 {
			cnt := float64(rng.IntN(8))
			if i%7 == 0 {
				cnt += 0.5
			}
			x := -6 * rng.Float64()
			if i%5 == 0 {
				x = 3 * rng.Float64()
			}
			lambda := 0.8 * (cnt + 0.3)
			got, want := ps.meanCount(x, cnt, lambda), direct(x, lambda, b, 40)
			if math.Abs(got-want) > 1e-9*max(1, want) {
				t.Fatalf("b=%v: meanCount(%v, %v) = %v, direct %v", b, x, cnt, got, want)
			}
		}
	}
	// Tiny scales take the log-domain path: the mean is the clamped
	// lattice point nearest x unless the prior pulls it off.
	if m := postMean(7.2, 6, 1e-4, 50); math.Abs(m-7) > 1e-9 {
		t.Errorf("postMean at b = 1e-4: %v, want 7", m)
	}
	if postMean(2.5, 1, 0, 10) != 2.5 || postMean(12, 1, 0, 10) != 10 || postMean(3, 0, 1, 10) != 0 {
		t.Error("limits")
	}
	prev := -1.0
	for x := -5.0; x <= 15; x += 0.05 {
		m := postMean(x, 1.5, 0.7, 30)
		if m < prev-1e-12 {
			t.Fatalf("not monotone at %v: %v < %v", x, m, prev)
		}
		prev = m
	}
}
