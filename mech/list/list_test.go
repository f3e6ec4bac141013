package list

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"gonum.org/v1/gonum/stat/distuv"
)

// bruteRelease is the mechanism by definition: every candidate, zero block
// included, gets its own Laplace noise; rank by score, ties uniformly.
func bruteRelease(q *Query, eps float64, c Combine, k int, rng *rand.Rand) []int {
	n := q.N()
	b := Scale(q.L1, eps)
	tau := c.Tau(b, n)
	score := make([]float64, n)
	keys := make([]uint64, n)
	mo := q.meanOmega()
	kmax := q.MaxEvid
	if kmax <= 0 {
		kmax = math.MaxInt32
	}
	for i := range n {
		p, e, cnt, om := 0.0, 0.0, 0.0, mo
		if i < len(q.Pub) {
			p, e = q.Pub[i], q.Evid[i]
			cnt, om = q.omega(i, mo)
		}
		s := p
		if c.W > 0 {
			if q.L1 > 0 {
				e += b * laplace(rng)
			}
			s += c.bonus(e, tau, b, cnt, om, kmax)
		}
		score[i] = s
		keys[i] = rng.Uint64()
	}
	return topK(score, keys, min(k, n), nil)
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
	for range 200 {
		n := 1 + rng.IntN(30)
		s := make([]float64, n)
		keys := make([]uint64, n)
		for i := range s {
			s[i] = float64(rng.IntN(4))
			keys[i] = rng.Uint64()
		}
		k := 1 + rng.IntN(n+3)
		got := topK(s, keys, k, nil)
		all := topK(s, keys, n, nil)
		if !slices.Equal(got, all[:min(k, n)]) {
			t.Fatalf("topK %v != sorted prefix %v", got, all[:min(k, n)])
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
