// Package topk holds two list-level top-K mechanisms that select K of a
// query's candidates from a ranking score vector c whose every coordinate
// has an invariant bound on how far it can move between neighbouring graphs
// (docs/privacy-model.md §16.8). Both charge eps once per list, whatever K.
//
// The score. For query u and candidate v, c(v) = L p(v) + w e(v): p is the
// public score s_pub(u, v) (invariant, §10: exact and free), e the private
// evidence s(u, v) - s_pub(u, v) of the evidence score (score.Scorer's At;
// for AA and RA the protected-wedge count, list.EvidenceKind), w > 0 an
// invariant weight per unit of evidence and L >= 1 an invariant weight of
// the public score (Scores; L = 1 by default). Only e moves between
// u-neighbouring graphs, by at most Linf(u) = Evidence(u, unit).Linf per
// coordinate, so
//
//	|c_G(v) - c_G'(v)| <= Delta = w Linf(u)   for every candidate v.
//
// Monotone(kind, unit) reports the stronger property that c_G' - c_G is
// coordinatewise >= 0 or coordinatewise <= 0 for every neighbouring pair
// (one protected pair toggled and at most one coordinate, or coordinates
// that all move the same way); privacy-model §16.8 proves both.
//
// Mechanisms (Mechanism):
//
//   - JointEM, the joint exponential mechanism of Gillenwater, Joseph, Munoz
//     Medina and Ribero Diaz (ICML 2022): one exponential mechanism over all
//     ordered sequences S of K distinct candidates with utility
//     u(S) = -max_i (c_(i) - c(S_i)), c_(i) the i-th largest score. u has
//     sensitivity Delta_u = Delta when the scores move monotonically and
//     2 Delta otherwise; sampling S with probability proportional to
//     exp(eps u(S) / (2 Delta_u)) is eps-DP (McSherry and Talwar). Sampled
//     exactly in O(d K log K + d log d) time by the paper's method: the d K
//     (position, candidate) pairs are swept in a fixed total order, the
//     number of sequences whose largest pair is each one is a product of
//     per-position counts, one pair is drawn, and the other positions are
//     filled uniformly (Joint).
//   - OneShot, one-shot Gumbel top-K: i.i.d. Gumbel noise of scale
//     2 K Delta / eps (K Delta / eps when monotone) added once to every
//     score, the K largest listed. Its distribution over ordered lists is
//     exactly that of K rounds of the exponential mechanism without
//     replacement (Durfee and Rogers, NeurIPS 2019, "Practical
//     differentially private top-k selection with pay-what-you-get
//     composition": one-shot Gumbel top-k equals peeling), each round
//     (eps/K)-DP, so the list is eps-DP by basic composition (OneShot).
//
// With Delta = 0 the scores are invariant: both mechanisms give the exact
// top-K with uniformly random tie-breaking, charged 0 (Cost). Candidates
// are explicit (no closed-form block of equal scores). Randomness comes only
// from the *rand.Rand passed in (crypto-seeded in deployment, randx.Derive
// in seeded experiments). JointLogProb and OneShotLogProb are the exact log
// probabilities of an ordered list, for the exact audit
// (audit.AuditTopK).
package topk

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dplp/dplp/mech"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/score"
)

// Mechanism names a mechanism of this package.
type Mechanism int

// The mechanisms.
const (
	JointEM Mechanism = iota // joint exponential mechanism over sequences
	OneShot                  // one-shot Gumbel top-K (K peeled exponential mechanisms)
)

// Mechanisms lists every mechanism.
var Mechanisms = []Mechanism{JointEM, OneShot}

// String is the method name: "joint-em" or "oneshot-topk".
func (m Mechanism) String() string {
	switch m {
	case JointEM:
		return "joint-em"
	case OneShot:
		return "oneshot-topk"
	}
	return fmt.Sprintf("Mechanism(%d)", int(m))
}

// Parse parses a method name of String.
func Parse(s string) (Mechanism, error) {
	for _, m := range Mechanisms {
		if s == m.String() {
			return m, nil
		}
	}
	return 0, fmt.Errorf("topk: unknown mechanism %q (want joint-em or oneshot-topk)", s)
}

// Monotone reports whether, under unit, the private evidence of score kind
// moves monotonically between every pair of u-neighbouring graphs: the
// change e_G' - e_G is coordinatewise >= 0 or coordinatewise <= 0. True for
// CN, JC and PA under the pair unit (toggling one pair {a, b} moves one CN
// coordinate; moves JC(u, a) and JC(u, b) the same way, or one of them; moves
// PA's e(a) and e(b) by d each, the same way); false for AA and RA (a
// degree change shifts some coordinates down while a new wedge moves
// another one up), bounded scores and every kind under the party unit (a
// subset of one party's pairs may add some pairs and remove others).
func Monotone(kind score.Kind, unit privunit.Unit) bool {
	return unit == privunit.Pair && (kind == score.CN || kind == score.JC || kind == score.PA)
}

// Scores writes c(v) = lambda pub(v) + w evid(v) to dst[:0] and returns it
// with w: w = 1 when count is nil (the evidence is the base score's own),
// else the mean of pub(v) / count(v) over the candidates with count(v) > 0
// (the base score's mean weight per public wedge, the evidence being a
// wedge count; 1 when no candidate has a public wedge). lambda is the
// weight of the public score (1: c is the score itself, s_pub + e for CN;
// larger values favour the free public evidence, which moves nothing).
// Every input but evid is invariant, so w is, and c moves by at most
// w Linf per coordinate.
func Scores(dst, pub, evid, count []float64, lambda float64) ([]float64, float64) {
	w := 1.0
	if count != nil {
		var s float64
		var n int
		for i, x := range count {
			if x > 0 {
				s += pub[i] / x
				n++
			}
		}
		if n > 0 && s > 0 {
			w = s / float64(n)
		}
	}
	dst = dst[:0]
	for i, p := range pub {
		dst = append(dst, lambda*p+w*evid[i])
	}
	return dst, w
}

// UtilitySensitivity is the sensitivity of the joint utility u(S) when
// every score moves by at most delta: delta when the moves are monotone,
// 2 delta otherwise (privacy-model §16.8).
func UtilitySensitivity(delta float64, monotone bool) float64 {
	if monotone {
		return delta
	}
	return 2 * delta
}

// Scale is the temperature T of mechanism m for a list of k picks from d
// candidates at cost eps, with per-coordinate bound delta:
//
//	JointEM: P(S) proportional to exp(u(S) / T), T = 2 Delta_u / eps;
//	OneShot: Gumbel scale T = K' Delta / eps (monotone) or 2 K' Delta / eps,
//	         K' = min(k, d) picks.
//
// 0 when delta = 0 (exact top-K).
func Scale(m Mechanism, delta, eps float64, k, d int, monotone bool) float64 {
	if delta == 0 {
		return 0
	}
	if m == JointEM {
		return 2 * UtilitySensitivity(delta, monotone) / eps
	}
	f := 2.0
	if monotone {
		f = 1
	}
	return f * float64(max(1, min(k, d))) * delta / eps
}

// Cost is the charge of one list: eps when delta > 0, else 0 (the scores
// are invariant). It reads only invariant data.
func Cost(delta, eps float64) float64 {
	if delta > 0 {
		return eps
	}
	return 0
}

// Release draws one list of min(k, len(c)) candidate indices (best first)
// with mechanism m at cost eps, for scores c whose every coordinate moves by
// at most delta between neighbours (monotonically if monotone), and returns
// it with its charge Cost(delta, eps).
func Release(m Mechanism, c []float64, delta float64, monotone bool, eps float64, k int, rng *rand.Rand, sc *Scratch) ([]int, float64, error) {
	if !(eps > 0) || math.IsInf(eps, 0) || !(delta >= 0) || math.IsInf(delta, 0) {
		return nil, 0, fmt.Errorf("topk: need finite eps > 0 and delta >= 0, got %v and %v", eps, delta)
	}
	t := Scale(m, delta, eps, k, len(c), monotone)
	var ids []int
	var err error
	switch m {
	case JointEM:
		ids, err = Joint(c, k, t, rng, sc)
	case OneShot:
		ids, err = OneShotTopK(c, k, t, rng, nil)
	default:
		err = fmt.Errorf("topk: unknown mechanism %v", m)
	}
	if err != nil {
		return nil, 0, err
	}
	return ids, Cost(delta, eps), nil
}

// LogProb is the exact natural log of the probability that mechanism m
// with temperature t (Scale) returns the ordered list seq for scores c and
// list length k (len(seq) must be min(k, len(c))).
func LogProb(m Mechanism, c []float64, k int, t float64, seq []int) (float64, error) {
	switch m {
	case JointEM:
		return JointLogProb(c, k, t, seq)
	case OneShot:
		if len(seq) != min(k, len(c)) {
			return math.NaN(), fmt.Errorf("topk: list of %d, want %d", len(seq), min(k, len(c)))
		}
		return OneShotLogProb(c, t, seq)
	}
	return math.NaN(), fmt.Errorf("topk: unknown mechanism %v", m)
}

// LogProber returns LogProb(m, c, k, t, .) with the normaliser computed
// once (the exact audit evaluates every list of a query).
func LogProber(m Mechanism, c []float64, k int, t float64) (func(seq []int) (float64, error), error) {
	switch m {
	case JointEM:
		if err := checkJoint(c, k, t); err != nil {
			return nil, err
		}
		kk := min(k, len(c))
		var sc Scratch
		lz := 0.0
		if kk > 0 {
			sc.sortScores(c)
			sc.sweep(kk, t)
			lz = logSumExp(sc.lw)
		}
		return func(seq []int) (float64, error) {
			if err := checkSeq(len(c), kk, seq); err != nil {
				return math.NaN(), err
			}
			if kk == 0 {
				return 0, nil
			}
			return jointLP(JointError(c, seq), t, lz), nil
		}, nil
	case OneShot:
		return func(seq []int) (float64, error) { return LogProb(m, c, k, t, seq) }, nil
	}
	return nil, fmt.Errorf("topk: unknown mechanism %v", m)
}

func jointLP(e, t, lz float64) float64 {
	if t == 0 {
		if e != 0 {
			return math.Inf(-1)
		}
		return -lz
	}
	return -e/t - lz
}

func checkSeq(d, kk int, seq []int) error {
	if len(seq) != kk {
		return fmt.Errorf("topk: list of %d, want %d", len(seq), kk)
	}
	for i, x := range seq {
		if x < 0 || x >= d || slices.Contains(seq[:i], x) {
			return fmt.Errorf("topk: list %v: indices must be distinct and in [0, %d)", seq, d)
		}
	}
	return nil
}

// OneShotTopK adds i.i.d. Gumbel(0, t) noise to every score once and
// returns the min(k, len(c)) largest, best first (mech.ExpTopK: the same
// distribution as min(k, len(c)) rounds of the exponential mechanism
// exp(c / t) without replacement). t = 0 is the exact top-K with uniformly
// random tie-breaking.
func OneShotTopK(c []float64, k int, t float64, rng *rand.Rand, dst []int) ([]int, error) {
	return mech.ExpTopK(&mech.Utilities{Vals: c}, k, t, rng, dst)
}

// OneShotLogProb is the exact log probability of the ordered list seq under
// OneShotTopK with scale t (the product of softmax factors,
// mech.ExpListLogProb).
func OneShotLogProb(c []float64, t float64, seq []int) (float64, error) {
	return mech.ExpListLogProb(c, t, seq)
}

// errRNG is returned for a nil random generator.
var errRNG = errors.New("topk: nil random generator")

func checkJoint(c []float64, k int, t float64) error {
	if k < 1 {
		return fmt.Errorf("topk: k %d must be >= 1", k)
	}
	if !(t >= 0) || math.IsInf(t, 0) {
		return fmt.Errorf("topk: temperature %v must be finite and >= 0", t)
	}
	for i, x := range c {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("topk: score %d is %v", i, x)
		}
	}
	return nil
}

// Scratch holds reusable buffers of Joint; the zero value is ready.
type Scratch struct {
	order  []int     // candidate indices by score, descending (ties by index)
	v      []float64 // the sorted scores
	heap   []int32   // rows (positions) of the k-way merge
	next   []int32   // next column of each row
	m      []int32   // processed columns of each row
	lw     []float64 // log weight of each swept pair
	pi, pj []int32   // the swept pairs
	used   []int
	seq    []int
}

// sortScores fills s.order and s.v.
func (s *Scratch) sortScores(c []float64) {
	s.order = s.order[:0]
	for i := range c {
		s.order = append(s.order, i)
	}
	slices.SortFunc(s.order, func(a, b int) int {
		switch {
		case c[a] > c[b]:
			return -1
		case c[a] < c[b]:
			return 1
		}
		return a - b
	})
	s.v = s.v[:0]
	for _, i := range s.order {
		s.v = append(s.v, c[i])
	}
}

// less is the total order of the sweep on pairs (position i, sorted
// candidate j) with error E = v[i] - v[j]: E ascending, then j ascending,
// then i descending. Along a row (fixed i) it is increasing in j, and
// (i', j) precedes (i, j) for i' > i when their errors are equal; so the
// pairs of row i' preceding any pair p form a prefix of the sorted
// candidates, and these prefixes grow with i' (privacy-model §16.8).
func (s *Scratch) less(i1, j1, i2, j2 int32) bool {
	e1, e2 := s.v[i1]-s.v[j1], s.v[i2]-s.v[j2]
	if e1 != e2 {
		return e1 < e2
	}
	if j1 != j2 {
		return j1 < j2
	}
	return i1 > i2
}

// sweep visits all kk x d pairs in the total order (a k-way merge of the
// rows, O(d kk log kk)) and records for each its log weight
//
//	ln(#sequences whose largest pair is p) - E_p / t
//
// (t = 0: the count alone where E_p = 0, -Inf elsewhere). The number of
// sequences of distinct candidates whose pairs all precede p except at p's
// position i, which holds j, is prod over i' != i of (m_i' - i')^+, with
// m_i' the number of pairs of row i' swept before p (nested prefixes:
// positions are filled in increasing order, each from its prefix minus the
// i' candidates already used, all of which lie in it).
func (s *Scratch) sweep(kk int, t float64) {
	d := len(s.v)
	s.next = fill32(s.next, kk, 0)
	s.m = fill32(s.m, kk, 0)
	s.heap = s.heap[:0]
	s.lw, s.pi, s.pj = s.lw[:0], s.pi[:0], s.pj[:0]
	hless := func(a, b int32) bool { return s.less(a, s.next[a], b, s.next[b]) }
	for i := range int32(kk) {
		s.heap = append(s.heap, i)
	}
	// Every row starts at column 0: rows with larger i have smaller or
	// equal errors; heapify.
	for i := len(s.heap)/2 - 1; i >= 0; i-- {
		siftDown(s.heap, i, hless)
	}
	// logProd = sum of ln(m_i - i) over rows with m_i - i > 0 (Neumaier
	// compensated), nz = rows with m_i - i <= 0.
	var logProd, comp float64
	add := func(x float64) {
		y := logProd + x
		if math.Abs(logProd) >= math.Abs(x) {
			comp += (logProd - y) + x
		} else {
			comp += (x - y) + logProd
		}
		logProd = y
	}
	nz := kk
	for len(s.heap) > 0 {
		i := s.heap[0]
		j := s.next[i]
		f := int(s.m[i]) - int(i) // own factor before this pair (m_i = j)
		other := nz
		if f <= 0 {
			other--
		}
		lw := math.Inf(-1)
		if other == 0 {
			lc := logProd + comp
			if f > 0 {
				lc -= math.Log(float64(f))
			}
			e := s.v[i] - s.v[j]
			switch {
			case t > 0:
				lw = lc - e/t
			case e == 0:
				lw = lc
			}
		}
		s.lw = append(s.lw, lw)
		s.pi = append(s.pi, i)
		s.pj = append(s.pj, j)
		// Advance row i.
		s.m[i]++
		switch {
		case f+1 == 1:
			nz--
		case f > 0:
			add(math.Log(float64(f+1)) - math.Log(float64(f)))
		}
		s.next[i]++
		if int(s.next[i]) == d {
			last := len(s.heap) - 1
			s.heap[0] = s.heap[last]
			s.heap = s.heap[:last]
		}
		if len(s.heap) > 0 {
			siftDown(s.heap, 0, hless)
		}
	}
}

func fill32(b []int32, n int, x int32) []int32 {
	b = b[:0]
	for range n {
		b = append(b, x)
	}
	return b
}

func siftDown(h []int32, i int, less func(a, b int32) bool) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && less(h[r], h[l]) {
			m = r
		}
		if !less(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// logSumExp is ln sum exp(x) (-Inf for an empty or all -Inf x).
func logSumExp(x []float64) float64 {
	mx := math.Inf(-1)
	for _, v := range x {
		mx = max(mx, v)
	}
	if math.IsInf(mx, -1) {
		return mx
	}
	var sum float64
	for _, v := range x {
		sum += math.Exp(v - mx)
	}
	return mx + math.Log(sum)
}

// Joint draws one list of min(k, len(c)) candidate indices, best first,
// from the joint exponential mechanism with temperature t:
//
//	P(S) = exp(u(S) / t) / Z,  u(S) = -max_i (c_(i) - c(S_i)),
//
// over all ordered sequences S of min(k, len(c)) distinct candidates
// (c_(i) the i-th largest score). t = 2 Delta_u / eps is eps-DP (Scale);
// t = 0 draws uniformly among the sequences with u(S) = 0, i.e. the exact
// top-K with uniformly random tie-breaking. Time O(d K log K + d log d)
// for d candidates, space O(d K) (the paper's sampler, see sweep).
func Joint(c []float64, k int, t float64, rng *rand.Rand, sc *Scratch) ([]int, error) {
	if err := checkJoint(c, k, t); err != nil {
		return nil, err
	}
	if rng == nil {
		return nil, errRNG
	}
	if sc == nil {
		sc = &Scratch{}
	}
	d := len(c)
	kk := min(k, d)
	if kk == 0 {
		return []int{}, nil
	}
	sc.sortScores(c)
	sc.sweep(kk, t)
	// Draw a pair with probability proportional to exp(lw).
	mx := math.Inf(-1)
	for _, v := range sc.lw {
		mx = max(mx, v)
	}
	var tot float64
	for _, v := range sc.lw {
		tot += math.Exp(v - mx)
	}
	x := rng.Float64() * tot
	pick := -1
	for p, v := range sc.lw {
		w := math.Exp(v - mx)
		if w == 0 {
			continue
		}
		pick = p // the last pair with positive weight absorbs rounding
		if x < w {
			break
		}
		x -= w
	}
	if pick < 0 {
		return nil, errors.New("topk: no sequence has positive probability")
	}
	pi, pj := sc.pi[pick], sc.pj[pick]
	// Fill the other positions uniformly: position i' draws from the
	// candidates j' whose pair (i', j') precedes the chosen one (a prefix
	// of length m_i' of the sorted candidates) minus those already used.
	sc.seq = sc.seq[:0]
	for range kk {
		sc.seq = append(sc.seq, -1)
	}
	sc.seq[pi] = int(pj)
	sc.used = append(sc.used[:0], int(pj))
	for i := range int32(kk) {
		if i == pi {
			continue
		}
		// m = number of columns j' of row i with (i, j') before (pi, pj).
		m := prefixLen(sc, i, pi, pj)
		// Used candidates inside the prefix, ascending.
		slices.Sort(sc.used)
		free := m
		for _, u := range sc.used {
			if u < m {
				free--
			}
		}
		if free <= 0 {
			return nil, fmt.Errorf("topk: internal error: no candidate for position %d (prefix %d)", i, m)
		}
		r := rng.IntN(free)
		for _, u := range sc.used {
			if u <= r {
				r++
			}
		}
		sc.seq[i] = r
		sc.used = append(sc.used, r)
	}
	out := make([]int, kk)
	for i, j := range sc.seq {
		out[i] = sc.order[j]
	}
	return out, nil
}

// prefixLen is the number of columns j' of row i whose pair (i, j')
// precedes (pi, pj) in the sweep order (binary search: rows are increasing).
func prefixLen(sc *Scratch, i, pi, pj int32) int {
	lo, hi := 0, len(sc.v)
	for lo < hi {
		mid := (lo + hi) / 2
		if sc.less(i, int32(mid), pi, pj) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// JointLogProb is the exact natural log of the probability that Joint
// (k, t) returns the ordered list seq (candidate indices of c;
// len(seq) = min(k, len(c)), distinct): u(seq) / t - ln Z, with
// ln Z = ln sum over pairs of #sequences x exp(-E / t) computed by the same
// sweep (exact counts; tested against enumeration of every sequence). With
// t = 0 it is -ln(#sequences with u = 0) when u(seq) = 0 and -Inf otherwise.
func JointLogProb(c []float64, k int, t float64, seq []int) (float64, error) {
	p, err := LogProber(JointEM, c, k, t)
	if err != nil {
		return math.NaN(), err
	}
	return p(seq)
}

// JointError is -u(seq) = max_i (c_(i) - c(seq_i)) >= 0, c_(i) the i-th
// largest score (the same floating-point differences as the sampler).
func JointError(c []float64, seq []int) float64 {
	v := slices.Clone(c)
	slices.SortFunc(v, func(a, b float64) int {
		switch {
		case a > b:
			return -1
		case a < b:
			return 1
		}
		return 0
	})
	e := math.Inf(-1)
	for i, x := range seq {
		e = max(e, v[i]-c[x])
	}
	return e
}
