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
	"slices"
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
type Combine struct {
	W    float64 `json:"w"`
	T    float64 `json:"t,omitempty"`
	Post bool    `json:"post,omitempty"`
	Rho  float64 `json:"rho,omitempty"`
	A    float64 `json:"a,omitempty"`
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
	return nil
}

// postMean is E[e | x] for e ~ Poisson(lambda) truncated to [0, kmax] and
// x = e + Laplace(b); b = 0 returns x clamped to [0, kmax].
func postMean(x, lambda, b float64, kmax int) float64 {
	if b == 0 {
		return min(max(x, 0), float64(kmax))
	}
	if !(lambda > 0) {
		return 0
	}
	// The log weight f(k) = k ln(lambda) - ln k! - |x - k| / b is concave
	// in k (ln k! and |x - k| are convex), so the terms are unimodal: find
	// the mode by ternary search, then sum outwards until the terms fall
	// below e^-40 of the largest.
	ll := math.Log(lambda)
	f := func(k int) float64 { return float64(k)*ll - logFact(k) - math.Abs(x-float64(k))/b }
	lo, hi := 0, int(min(float64(kmax), math.Ceil(max(x, 0)+30*b+lambda+10*math.Sqrt(lambda)+10)))
	for hi-lo > 2 {
		m1, m2 := lo+(hi-lo)/3, hi-(hi-lo)/3
		if f(m1) < f(m2) {
			lo = m1 + 1
		} else {
			hi = m2
		}
	}
	mode := lo
	for k := lo + 1; k <= hi; k++ {
		if f(k) > f(mode) {
			mode = k
		}
	}
	top := f(mode)
	var num, den float64
	for k := mode; k <= kmax; k++ {
		w := f(k) - top
		if w < -40 {
			break
		}
		e := math.Exp(w)
		num += float64(k) * e
		den += e
	}
	for k := mode - 1; k >= 0; k-- {
		w := f(k) - top
		if w < -40 {
			break
		}
		e := math.Exp(w)
		num += float64(k) * e
		den += e
	}
	return num / den
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
// score p, public count cnt (weight omega) and noisy evidence x.
func (c Combine) bonus(x, tau, b, cnt, omega float64, kmax int) float64 {
	if c.W == 0 {
		return 0
	}
	if !c.Post {
		return c.W * max(0, x-tau)
	}
	return c.W * omega * postMean(x, c.Rho*(cnt+c.A), b, kmax)
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
// under the unit of the guarantee (score.EvidenceBound.L1). Count, when
// non-nil, are the public wedge counts of the explicit candidates (the
// posterior family's prior; nil means Pub); MaxEvid, when > 0, is an
// invariant upper bound on the evidence (deg(u) for wedge counts).
type Query struct {
	Pub, Evid []float64
	Zero      int
	L1        float64
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
// i < len(Pub), zero block len(Pub)+j), best first; Cost is the charge
// (Cost); Noisy reports whether the noisy evidence was read.
type Outcome struct {
	IDs   []int
	Cost  float64
	Noisy bool
}

// Cost is the charge of one list: eps when the list reads the noisy
// evidence (W > 0 and L1 > 0), else 0. It reads only invariant data.
func Cost(l1, eps float64, c Combine) float64 {
	if c.W > 0 && l1 > 0 {
		return eps
	}
	return 0
}

// Scale is the Laplace scale L1 / eps (0 when L1 = 0).
func Scale(l1, eps float64) float64 {
	if l1 == 0 {
		return 0
	}
	return l1 / eps
}

// Scratch holds reusable buffers of Release; the zero value is ready.
type Scratch struct {
	items []item
	zero  []int
	used  map[int]bool
}

type item struct {
	id    int
	score float64
	key   uint64
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
	noisy := c.W > 0 && q.L1 > 0
	b := Scale(q.L1, eps)
	if noisy && (math.IsInf(b, 0) || b == 0) {
		return Outcome{}, fmt.Errorf("list: noise scale %v/%v is not finite and positive", q.L1, eps)
	}
	tau := c.Tau(b, n)
	kmax := q.MaxEvid
	if kmax <= 0 {
		kmax = math.MaxInt32
	}
	mo := q.meanOmega()
	items := sc.items[:0]
	zero := sc.zero[:0]
	for i, p := range q.Pub {
		s := p
		if c.W > 0 {
			e := q.Evid[i]
			if noisy {
				e += b * laplace(rng)
			}
			cnt, om := q.omega(i, mo)
			s += c.bonus(e, tau, b, cnt, om, kmax)
		}
		if s > 0 {
			items = append(items, item{i, s, rng.Uint64()})
		} else {
			zero = append(zero, i)
		}
	}
	// Zero block: its noisy evidence is b * Laplace(1); only values above
	// tau score (W (x - tau) > 0). Draw the largest ones in decreasing order
	// (at most k: further ones rank below k zero-block items and cannot be
	// listed), stopping at the first that does not exceed tau.
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
			sc := c.bonus(x, tau, b, 0, mo, kmax)
			if !(sc > 0) {
				break // this and every later one score 0 (bonus is monotone)
			}
			id := drawUnused(rng, q.Zero, used)
			items = append(items, item{len(q.Pub) + id, sc, rng.Uint64()})
		}
	}
	slices.SortFunc(items, func(a, b item) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		}
		return 0
	})
	ids := make([]int, 0, k)
	for _, it := range items {
		if len(ids) == k {
			break
		}
		ids = append(ids, it.id)
	}
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
	sc.items, sc.zero = items[:0], zero[:0]
	return Outcome{IDs: ids, Cost: Cost(q.L1, eps, c), Noisy: noisy}, nil
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
	if !(q.L1 >= 0) {
		return fmt.Errorf("list: l1 bound %v must be >= 0", q.L1)
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
