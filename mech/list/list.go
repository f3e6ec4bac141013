// Package list is the list-level mechanism dplp-list (docs/privacy-model.md
// §16): one top-K list for a query u at ONE charge eps, whatever K.
//
// Mechanism. Every candidate v of u has a public score p(v) = s_pub(u, v)
// (invariant, §10) and a private evidence e(v) = s(u, v) - s_pub(u, v).
// The evidence vector over all of u's candidates is released once with
// i.i.d. Laplace noise of scale b = L1(u) / eps, where L1(u) is an
// invariant bound on its l1 change between neighbouring graphs under the
// chosen privacy unit (score.Scorer.Evidence): that is the Laplace
// mechanism, eps-DP for the unit. The list is post-processing of the
// public scores and the noisy vector: candidates are ranked by a
// combination g(p(v), e~(v)) (Combine; the default, DefaultPosterior, is
// the posterior mean p + E[e | e~] under a Poisson prior set from invariant
// data; a thresholded family p + W max(0, e~ - tau) also exists), ties
// broken uniformly at random, and the K best are listed. The combination is
// fixed before the release from invariant data (Fit on pseudo-protected
// public training data at the target eps), so it is part of the mechanism,
// not of the data. With W = 0 or L1(u) = 0 the list does not read the noisy
// vector (or the vector is invariant) and costs 0.
//
// Candidates with s = s_pub = 0 that no wedge reaches (the zero block) are
// not materialised: the number of them whose noise exceeds tau and their
// values are drawn in closed form (sequential order statistics of the
// Laplace maximum, at most K of them), and their identities uniformly, so
// a release costs O(explicit candidates + K) time, not O(N). This has
// exactly the distribution of drawing the noise for every candidate
// (exchangeability; tested against brute force).
//
// Release is the function the release path calls per user: one user's
// scored candidates, the invariant bound, eps, the combination and a
// random generator in; the list and its charged cost out.
package list

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// Combine is the post-processing of the noisy evidence e~ for a candidate
// with public score p. Two families:
//
//   - threshold (Post false): rank by p + W * max(0, e~ - tau), with
//     tau = T * b * ln(max(n, 2)) for noise scale b and n candidates;
//   - posterior (Post true): rank by p + W * omega * E[e | e~], the
//     posterior mean of the evidence under a Poisson prior of mean
//     Rho * (c + A), where c is the candidate's public wedge count (Count,
//     or p), and the Laplace likelihood of the release; omega = p / c is the
//     score's weight per public wedge (1 for CN; the query's mean ratio
//     where c = 0). E[e | e~] is non-decreasing in e~ (the Laplace family
//     has a monotone likelihood ratio), tends to the prior mean (a monotone
//     function of the public count) as the noise grows and to e as it
//     vanishes, so the ranking moves from public-only to the non-private
//     one with eps.
//
// W = 0 is the public-only ranking (cost 0). Every parameter is fixed
// before the release (from invariant data), so the list is post-processing.
//
// Gauss selects the Gaussian release of the evidence (gauss.go): noise
// N(0, (L2/eps)^2) instead of Laplace(L1/eps), rho = eps^2/2 zCDP instead
// of eps-DP, and the posterior mean under the Gaussian likelihood. It
// needs the posterior family.
type Combine struct {
	W     float64 `json:"w"`
	T     float64 `json:"t,omitempty"`
	Post  bool    `json:"post,omitempty"`
	Rho   float64 `json:"rho,omitempty"`
	A     float64 `json:"a,omitempty"`
	Gauss bool    `json:"gauss,omitempty"`
}

// Validate requires finite W, T, Rho, A >= 0, and Rho > 0 for the
// posterior family.
func (c Combine) Validate() error {
	for _, x := range []float64{c.W, c.T, c.Rho, c.A} {
		if !(x >= 0) || math.IsInf(x, 0) {
			return fmt.Errorf("list: combination %+v: need finite parameters >= 0", c)
		}
	}
	if c.Post && c.W > 0 && !(c.Rho > 0 && c.A > 0) {
		return fmt.Errorf("list: posterior combination %+v needs Rho > 0 and A > 0", c)
	}
	if c.Gauss && c.W > 0 && !c.Post {
		return fmt.Errorf("list: Gaussian combination %+v needs the posterior family", c)
	}
	return nil
}

// postMean is E[e | x] for e ~ Poisson(lambda) truncated to [0, kmax] and
// x = e + Laplace(b); b = 0 returns x clamped to [0, kmax].
func postMean(x, lambda, b float64, kmax int) float64 {
	var ps postScale
	ps.set(b, kmax, false)
	return ps.mean(x, lambda)
}

// postScale evaluates posterior means (postMean) for one noise scale b and
// evidence cap kmax, the setting of one release: it holds e^(1/b) and
// e^(-1/b), and caches the means of observations x <= 0 by integral prior
// count. For x <= 0 every k >= 0 lies right of x, so the likelihood ratio
// of consecutive k is e^(-1/b) whatever x and the posterior mean does not
// depend on x: such candidates (about half of those without evidence) get
// exactly the value of x = 0, computed once per count. Exactly equal scores
// are then ordered by the release's random keys, never by rounding.
//
// With gauss set, b is the Gaussian noise's standard deviation and the
// means are meanGauss's; they depend on x everywhere, so the x <= 0 cache
// holds the mean at x = 0, an upper bound for every x <= 0 (monotone
// likelihood ratio), used by upper only.
type postScale struct {
	b      float64
	kmax   int
	gauss  bool
	eu, ed float64
	ib2    float64   // gauss: 1 / b^2
	gq     float64   // gauss: e^(-1/b^2)
	neg    []float64 // neg[c]: the mean at x = 0 for prior count c; NaN until computed
	lam    []float64 // the lambda each neg entry was computed for

	// Upper bounds (upper): the mean at grid points x = j b / 2, j in
	// [1, upGrid], per integral count below upCounts, valid when their
	// stamp equals gen.
	gen    uint32
	ug     []uint32
	uv, ul []float64
}

// The grid of upper: points per count and counts.
const (
	upGrid   = 64
	upCounts = 256
)

// upper returns a value >= mean(x, lambda), and true, when a cheap one is
// at hand: the exact cached mean for x <= 0 (meanCount), else the mean
// without the cap at the next grid point j b / 2 >= x, computed once per
// (count, j) for as long as the scale b stays the same (across users). The posterior mean is non-decreasing in x (the Laplace family
// has a monotone likelihood ratio in its location), so the value at a
// larger x bounds it. False (no bound) for fractional or large counts and
// x beyond the grid.
func (p *postScale) upper(x, cnt, lambda float64) (float64, bool) {
	if p.b == 0 || !(lambda > 0) || cnt != math.Trunc(cnt) || !(cnt >= 0 && cnt < upCounts) {
		return 0, false
	}
	if x <= 0 {
		return p.zeroMean(int(cnt), lambda), true
	}
	h := p.b / 2
	j := math.Ceil(x / h)
	if !(j <= upGrid) {
		return 0, false
	}
	i := int(cnt)*upGrid + int(j) - 1
	if i >= len(p.ug) { // grown to the counts seen (new entries: stamp 0, never current)
		n := (int(cnt) + 1) * upGrid
		p.ug = append(p.ug, make([]uint32, n-len(p.ug))...)
		p.uv = append(p.uv, make([]float64, n-len(p.uv))...)
		p.ul = append(p.ul, make([]float64, n-len(p.ul))...)
	}
	if p.ug[i] != p.gen || p.ul[i] != lambda {
		// Without the cap kmax: E[e | e <= K] is non-decreasing in K (a
		// mixture of the mean below K and K + 1), so the uncapped mean
		// bounds every user's.
		p.uv[i], p.ug[i], p.ul[i] = p.meanK(j*h, lambda, math.MaxInt32), p.gen, lambda
	}
	return p.uv[i], true
}

// postCacheMax bounds the integral prior counts whose x <= 0 means are
// cached.
const postCacheMax = 1 << 12

func (p *postScale) set(b float64, kmax int, gauss bool) {
	if b != p.b || gauss != p.gauss || p.gen == 0 {
		// A new scale: forget the grid (its values hold for one b and
		// every kmax, so they survive releases of other users at this b).
		p.gen++
		if p.gen == 0 { // wrapped: forget every stamp
			clear(p.ug)
			p.gen = 1
		}
		if b > 0 && 1/b <= 300 {
			p.eu, p.ed = math.Exp(1/b), math.Exp(-1/b)
		}
		if b > 0 {
			p.ib2 = 1 / (b * b)
			p.gq = math.Exp(-p.ib2)
		}
	}
	if b != p.b || kmax != p.kmax || gauss != p.gauss {
		p.neg, p.lam = p.neg[:0], p.lam[:0]
	}
	p.b, p.kmax, p.gauss = b, kmax, gauss
}

// meanCount is mean(x, lambda) for a candidate of prior count cnt, through
// the cache when x <= 0 and cnt is a small integer (lambda must be the
// same function of cnt for the whole release: one Combine).
func (p *postScale) meanCount(x, cnt, lambda float64) float64 {
	if x > 0 || p.gauss || p.b == 0 || !(lambda > 0) || cnt != math.Trunc(cnt) || !(cnt >= 0 && cnt < postCacheMax) {
		return p.mean(x, lambda)
	}
	return p.zeroMean(int(cnt), lambda)
}

// zeroMean is the mean at x = 0 for prior count c (0 <= c < postCacheMax,
// lambda > 0, b > 0), cached: the mean of every x <= 0 for Laplace noise,
// an upper bound of it for Gaussian noise.
func (p *postScale) zeroMean(c int, lambda float64) float64 {
	for len(p.neg) <= c {
		p.neg, p.lam = append(p.neg, math.NaN()), append(p.lam, 0)
	}
	if math.IsNaN(p.neg[c]) || p.lam[c] != lambda {
		p.neg[c], p.lam[c] = p.mean(0, lambda), lambda
	}
	return p.neg[c]
}

func (p *postScale) mean(x, lambda float64) float64 { return p.meanK(x, lambda, p.kmax) }

// meanK is mean with the evidence cap kmax instead of p.kmax.
func (p *postScale) meanK(x, lambda float64, kmax int) float64 {
	b := p.b
	if b == 0 {
		return min(max(x, 0), float64(kmax))
	}
	if !(lambda > 0) {
		return 0
	}
	if p.gauss {
		return p.meanGauss(x, lambda, kmax)
	}
	if 1/b > 300 {
		return postMeanLog(x, lambda, b, kmax) // e^(1/b) would overflow the recurrence
	}
	// The log weight f(k) = k ln(lambda) - ln k! - |x - k| / b is concave
	// in k, so the terms t(k) = e^f(k) are unimodal. Consecutive terms
	// have the ratio r(k) = t(k+1) / t(k) = lambda / (k+1) * g(k) with
	// g(k) = e^(1/b) while k+1 <= x, e^(-1/b) once k >= x, and
	// e^((2x - 2c - 1) / b) across x (c = floor(x) < x): start at the mode
	// and multiply outwards (at most one exp per call instead of one per
	// term) until the terms fall below e^-40 of the largest.
	eu, ed := p.eu, p.ed
	cx := math.Floor(x)
	gx := ed
	if cx >= 0 && cx < x && cx < float64(kmax) {
		gx = math.Exp((2*x - 2*cx - 1) / b)
	}
	ratio := func(k int) float64 { // r(k)
		fk := float64(k)
		var g float64
		switch {
		case fk+1 <= x:
			g = eu
		case fk >= x:
			g = ed
		default:
			g = gx
		}
		return lambda / (fk + 1) * g
	}
	mode := postMode(x, lambda, b, kmax, eu, ed, gx)
	const cut = 4.248354255291589e-18 // e^-40
	num, den := float64(mode), 1.0
	t := 1.0
	for k := mode; k < kmax; k++ {
		t *= ratio(k)
		if t < cut {
			break
		}
		num += float64(k+1) * t
		den += t
	}
	t = 1
	for k := mode; k > 0; k-- {
		t /= ratio(k - 1)
		if t < cut {
			break
		}
		num += float64(k-1) * t
		den += t
	}
	return num / den
}

// postMode is the k in [0, kmax] maximising k ln(lambda) - ln k! -
// |x - k| / b (the smallest such k): the first k whose ratio r(k) (see
// postScale.mean; eu = e^(1/b), ed = e^(-1/b), gx the factor across x) is
// at most 1, located in closed form on either side of x and at the
// crossing, then confirmed by a local climb on the log weight (the weight
// is concave, so a local maximum is the global one; the climb also absorbs
// rounding in the closed form).
func postMode(x, lambda, b float64, kmax int, eu, ed, gx float64) int {
	first := func(m float64) float64 { return math.Ceil(m) - 1 } // smallest k with k+1 >= m
	var guess float64
	if a := max(0, first(lambda*eu)); a+1 <= x {
		guess = a // left of x: r(k) = lambda e^(1/b) / (k+1)
	} else if c := math.Floor(x); c >= 0 && c < x && lambda/(c+1)*gx <= 1 {
		guess = c // the step across x
	} else {
		guess = max(0, math.Ceil(x), first(lambda*ed)) // right of x
	}
	mode := int(min(guess, float64(kmax)))
	ll := math.Log(lambda)
	f := func(k int) float64 { return float64(k)*ll - logFact(k) - math.Abs(x-float64(k))/b }
	for mode < kmax && f(mode+1) > f(mode) {
		mode++
	}
	for mode > 0 && f(mode-1) >= f(mode) {
		mode--
	}
	return mode
}

// postMeanLog is postMean in the log domain (one exp per term), for noise
// scales so small that e^(1/b) overflows.
func postMeanLog(x, lambda, b float64, kmax int) float64 {
	ll := math.Log(lambda)
	f := func(k int) float64 { return float64(k)*ll - logFact(k) - math.Abs(x-float64(k))/b }
	gx := math.Inf(1)
	if c := math.Floor(x); c >= 0 && c < x {
		gx = math.Exp((2*x - 2*c - 1) / b)
	}
	return logDomainMean(f, postMode(x, lambda, b, kmax, math.Inf(1), 0, gx), kmax)
}

// logFactTable holds ln k! for small k.
var logFactTable = func() []float64 {
	t := make([]float64, 4096)
	for k := 1; k < len(t); k++ {
		t[k] = t[k-1] + math.Log(float64(k))
	}
	return t
}()

func logFact(k int) float64 {
	if k < len(logFactTable) {
		return logFactTable[k]
	}
	lg, _ := math.Lgamma(float64(k) + 1)
	return lg
}

// bonus is the evidence term of the ranking for a candidate with public
// count cnt (weight omega) and noisy evidence x; ps is the release's noise
// scale and evidence cap (postScale, set for this c: its cache assumes one
// prior).
func (c Combine) bonus(x, tau, cnt, omega float64, ps *postScale) float64 {
	if c.W == 0 {
		return 0
	}
	if !c.Post {
		return c.W * max(0, x-tau)
	}
	return c.W * omega * ps.meanCount(x, cnt, c.Rho*(cnt+c.A))
}

// Tau is the threshold for noise scale b and n candidates.
func (c Combine) Tau(b float64, n int) float64 {
	if c.T == 0 || b == 0 {
		return 0
	}
	return c.T * b * math.Log(float64(max(n, 2)))
}

// Query is one user's scored candidates: explicit candidates i in
// [0, len(Pub)) with public score Pub[i] >= 0 and private evidence Evid[i],
// and Zero further candidates with s = s_pub = 0 (ids len(Pub)+j,
// j in [0, Zero)). L1 is the invariant l1 bound of the evidence vector
// under the unit of the guarantee (score.EvidenceBound.L1), L2 its l2
// bound (read by Gaussian combinations instead of L1). Count, when
// non-nil, are the public wedge counts of the explicit candidates (the
// posterior family's prior; nil means Pub); MaxEvid, when > 0, is an
// invariant upper bound on the evidence (deg(u) for wedge counts).
type Query struct {
	Pub, Evid []float64
	Zero      int
	L1        float64
	L2        float64
	Count     []float64
	MaxEvid   int
}

// omegas returns the per-candidate weight per public wedge and the
// query's mean weight (for candidates without public wedges).
func (q *Query) omega(i int, mean float64) (cnt, omega float64) {
	if q.Count == nil {
		return q.Pub[i], 1
	}
	cnt = q.Count[i]
	if cnt > 0 {
		return cnt, q.Pub[i] / cnt
	}
	return 0, mean
}

func (q *Query) meanOmega() float64 {
	if q.Count == nil {
		return 1
	}
	var s float64
	var n int
	for i, c := range q.Count {
		if c > 0 {
			s += q.Pub[i] / c
			n++
		}
	}
	if n == 0 {
		return 1
	}
	return s / float64(n)
}

// N is the number of candidates, explicit and zero block.
func (q *Query) N() int { return len(q.Pub) + q.Zero }

// Outcome is a released list: IDs index the query's candidates (explicit
// i < len(Pub), zero block len(Pub)+j), best first; Cost is the pure-DP
// charge (Cost) and Rho the zCDP charge (ZCDP); Noisy reports whether the
// noisy evidence was read.
type Outcome struct {
	IDs   []int
	Cost  float64
	Rho   float64
	Noisy bool
}

// Bound is the sensitivity a release under c is calibrated to: l2 for a
// Gaussian combination, else l1.
func (c Combine) Bound(l1, l2 float64) float64 {
	if c.Gauss {
		return l2
	}
	return l1
}

// Cost is the pure-DP charge of one list, given the bound of its noise
// (Combine.Bound): eps when the list reads the noisy evidence (W > 0 and
// bound > 0), else 0; +Inf for a Gaussian list that reads it (it is
// rho-zCDP, not pure DP: ZCDP). It reads only invariant data.
func Cost(bound, eps float64, c Combine) float64 {
	if c.W > 0 && bound > 0 {
		if c.Gauss {
			return math.Inf(1)
		}
		return eps
	}
	return 0
}

// ZCDP is the zCDP charge of one list, given the bound of its noise:
// eps^2/2 when the list reads the noisy evidence, else 0 (Laplace: an
// eps-DP mechanism is eps^2/2-zCDP; Gaussian with sd = L2/eps: exactly
// L2^2 / (2 sd^2)).
func ZCDP(bound, eps float64, c Combine) float64 {
	if c.W > 0 && bound > 0 {
		return eps * eps / 2
	}
	return 0
}

// Scale is the noise scale bound / eps: the Laplace scale L1 / eps, or the
// Gaussian standard deviation L2 / eps (0 when the bound is 0).
func Scale(l1, eps float64) float64 {
	if l1 == 0 {
		return 0
	}
	return l1 / eps
}

// Scratch holds reusable buffers of Release; the zero value is ready.
type Scratch struct {
	noPrune bool // tests: evaluate every candidate (the skip must change nothing)
	skipped int  // candidates skipped by their bound (tests)
	best    []item
	post    postScale
	zero    []int
	used    map[int]bool
}

type item struct {
	id    int
	score float64
	key   uint64
}

// window keeps the k best items offered (score descending, then key),
// sorted: most offers are rejected by one comparison with the k-th.
type window struct {
	k     int
	items []item
}

// before orders items: higher score first, then smaller key.
func (a item) before(b item) bool {
	return a.score > b.score || (a.score == b.score && a.key < b.key)
}

func (w *window) offer(x item) {
	n := len(w.items)
	if n == w.k && !x.before(w.items[n-1]) {
		return
	}
	j := sort.Search(n, func(i int) bool { return x.before(w.items[i]) })
	if n < w.k {
		w.items = append(w.items, item{})
		n++
	}
	copy(w.items[j+1:n], w.items[j:n-1])
	w.items[j] = x
}

// Release draws one list of length min(k, q.N()) for eps > 0 under c. It
// returns an error, and no list, on invalid input (NaN scores, negative
// public scores, eps <= 0, k < 1, an infinite scale with W > 0). See the
// package comment for the mechanism and its guarantee.
func Release(q *Query, eps float64, c Combine, k int, rng *rand.Rand, sc *Scratch) (Outcome, error) {
	if err := check(q, eps, c, k); err != nil {
		return Outcome{}, err
	}
	if sc == nil {
		sc = &Scratch{}
	}
	n := q.N()
	k = min(k, n)
	bound := c.Bound(q.L1, q.L2)
	noisy := c.W > 0 && bound > 0
	b := Scale(bound, eps)
	if noisy && (math.IsInf(b, 0) || b == 0) {
		return Outcome{}, fmt.Errorf("list: noise scale %v/%v is not finite and positive", bound, eps)
	}
	tau := c.Tau(b, n)
	kmax := q.MaxEvid
	if kmax <= 0 {
		kmax = math.MaxInt32
	}
	mo := q.meanOmega()
	sc.post.set(b, kmax, c.Gauss)
	// The k best (score > 0) so far, best first: a candidate is offered
	// only when it can enter. Once k are held, a posterior-family
	// candidate whose score bound (postScale.upper, from the posterior
	// mean's monotonicity in x) is below the k-th score is skipped without
	// its posterior mean: it cannot be listed, and while k positive scores
	// are held the score-0 pool is never drawn from.
	win := window{k: k, items: sc.best[:0]}
	zero := sc.zero[:0]
	for i, p := range q.Pub {
		s := p
		var key uint64
		if c.W > 0 {
			e := q.Evid[i]
			if noisy {
				e += b * drawNoise(rng, c.Gauss)
			}
			key = rng.Uint64() // drawn before the skip: skipping changes no later draw
			cnt, om := q.omega(i, mo)
			if c.Post && len(win.items) == k && !sc.noPrune {
				// The margin absorbs rounding in the means (1e-9 relative).
				if ub, ok := sc.post.upper(e, cnt, c.Rho*(cnt+c.A)); ok && p+c.W*om*ub*(1+1e-9)+1e-12 < win.items[k-1].score {
					sc.skipped++
					continue
				}
			}
			s += c.bonus(e, tau, cnt, om, &sc.post)
		}
		if c.W == 0 {
			key = rng.Uint64()
		}
		if s > 0 {
			win.offer(item{i, s, key})
		} else {
			zero = append(zero, i)
		}
	}
	// Zero block: its noisy evidence is b * Laplace(1) (b * N(0, 1) for
	// Gaussian combinations); only values above tau score (W (x - tau) > 0).
	// Draw the largest ones in decreasing order (at most k: further ones
	// rank below k zero-block items and cannot be listed), stopping at the
	// first that does not exceed tau.
	if sc.used == nil {
		sc.used = map[int]bool{}
	}
	clear(sc.used)
	used := sc.used
	if noisy && q.Zero > 0 {
		lF := 0.0 // ln F(previous order statistic), standardised Laplace
		for j := 0; j < k && j < q.Zero; j++ {
			lF += -rng.ExpFloat64() / float64(q.Zero-j) // ln U / (remaining)
			s := -math.Expm1(lF)                        // survival
			var x float64
			switch {
			case c.Gauss:
				x = b * normUpper(s, math.Exp(lF)) // F = e^lF, s = 1 - F
			case s <= 0.5:
				x = b * -math.Log(2*s)
			case c.Post:
				x = b * math.Log(2*(1-s)) // lower half: F = e^(x/b) / 2
			default:
				// Below 0 <= tau: this and every later one scores 0.
			}
			if !c.Post && !(s <= 0.5) {
				break
			}
			if !c.Post && x <= tau {
				break
			}
			bs := c.bonus(x, tau, 0, mo, &sc.post)
			if !(bs > 0) {
				break // this and every later one score 0 (bonus is monotone)
			}
			id := drawUnused(rng, q.Zero, used)
			win.offer(item{len(q.Pub) + id, bs, rng.Uint64()})
		}
	}
	ids := make([]int, 0, k)
	for _, it := range win.items {
		ids = append(ids, it.id)
	}
	sc.best = win.items[:0]
	// Fill from the score-0 pool (explicit zeros and unboosted zero block)
	// uniformly at random, in sequence.
	zrem := q.Zero - len(used)
	var zlist []int
	if len(ids) < k && zrem > 0 && q.Zero <= 4*k+16 {
		for j := range q.Zero {
			if !used[j] {
				zlist = append(zlist, j)
			}
		}
	}
	for len(ids) < k {
		tot := len(zero) + zrem
		if tot == 0 {
			break
		}
		j := rng.IntN(tot)
		if j < len(zero) {
			ids = append(ids, zero[j])
			zero[j] = zero[len(zero)-1]
			zero = zero[:len(zero)-1]
			continue
		}
		var id int
		if zlist != nil {
			x := rng.IntN(len(zlist))
			id = zlist[x]
			zlist[x] = zlist[len(zlist)-1]
			zlist = zlist[:len(zlist)-1]
		} else {
			id = drawUnused(rng, q.Zero, used)
		}
		zrem--
		ids = append(ids, len(q.Pub)+id)
	}
	sc.zero = zero[:0]
	return Outcome{IDs: ids, Cost: Cost(bound, eps, c), Rho: ZCDP(bound, eps, c), Noisy: noisy}, nil
}

// drawUnused draws a uniform id in [0, n) not in used (by rejection; callers
// keep len(used) <= n/2 or list the free ids themselves) and marks it.
func drawUnused(rng *rand.Rand, n int, used map[int]bool) int {
	for {
		id := rng.IntN(n)
		if !used[id] {
			used[id] = true
			return id
		}
	}
}

// drawNoise draws a standard Gaussian value when gauss, else a standard
// Laplace value.
func drawNoise(rng *rand.Rand, gauss bool) float64 {
	if gauss {
		return rng.NormFloat64()
	}
	return laplace(rng)
}

// laplace draws a standard Laplace(0, 1) value: sign * Exp(1).
func laplace(rng *rand.Rand) float64 {
	x := rng.ExpFloat64()
	if rng.Uint64()&1 == 0 {
		return -x
	}
	return x
}

func check(q *Query, eps float64, c Combine, k int) error {
	if q == nil {
		return errors.New("list: nil query")
	}
	if len(q.Pub) != len(q.Evid) || (q.Count != nil && len(q.Count) != len(q.Pub)) {
		return fmt.Errorf("list: %d public scores, %d evidence values, %d counts", len(q.Pub), len(q.Evid), len(q.Count))
	}
	for _, x := range q.Count {
		if !(x >= 0) || math.IsInf(x, 0) {
			return fmt.Errorf("list: public count %v must be finite and >= 0", x)
		}
	}
	if q.Zero < 0 {
		return fmt.Errorf("list: negative zero block %d", q.Zero)
	}
	if !(q.L1 >= 0) || !(q.L2 >= 0) {
		return fmt.Errorf("list: l1 bound %v and l2 bound %v must be >= 0", q.L1, q.L2)
	}
	if !(eps > 0) || math.IsInf(eps, 0) {
		return fmt.Errorf("list: eps %v must be finite and > 0", eps)
	}
	if k < 1 {
		return fmt.Errorf("list: k %d must be >= 1", k)
	}
	if err := c.Validate(); err != nil {
		return err
	}
	for i, p := range q.Pub {
		if !(p >= 0) || math.IsInf(p, 0) || math.IsNaN(q.Evid[i]) || math.IsInf(q.Evid[i], 0) {
			return fmt.Errorf("list: candidate %d: public score %v (need finite >= 0), evidence %v (need finite)", i, p, q.Evid[i])
		}
	}
	return nil
}
