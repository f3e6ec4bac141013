package mech

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
)

// item is one candidate competing for the top K: primary key p (the noisy
// utility), secondary key s (a random tie-breaker), and where it came from.
type item struct {
	p, s float64
	idx  int   // individual index, or rank among the block's order statistics
	blk  int32 // -1 for an individual, else the block index
	id   int32 // last tie-breaker: the candidate id under keyed noise (ExpTopKKeyed), else 0
}

// less orders items by noisy utility, then by their noise, then by id
// (which only keyed noise sets: there two candidates with equal noisy
// utility and equal noise, a 2^-53 event, are ordered by id rather than by
// the order they were offered in, so the top K is a function of the
// candidate set).
func (a item) less(b item) bool {
	return a.p < b.p || (a.p == b.p && (a.s < b.s || (a.s == b.s && a.id < b.id)))
}

// group records that output position pos is a member of block blk whose
// identity is still to be drawn.
type group struct{ blk, pos int }

type workspace struct {
	h       []item
	groups  []group
	members []int
	perm    []int
	rem     []int32
	cnt     []int
	seen    map[int]struct{}
	xs, xh  []uint64 // ExpTopKKeyed: kept draws, the k smallest
	xi      []int32  // ExpTopKKeyed: the kept draws' candidates
	seen32  idSet    // WalkTopK: the ids given a draw
}

var pool = sync.Pool{New: func() any { return new(workspace) }}

func getWS() *workspace  { return pool.Get().(*workspace) }
func putWS(w *workspace) { pool.Put(w) }

// offer keeps the k largest items in the min-heap w.h. It reports whether it
// was kept, so that descending streams (block order statistics) can stop at
// the first rejection.
func (w *workspace) offer(it item, k int) bool {
	h := w.h
	if len(h) < k {
		h = append(h, it)
		i := len(h) - 1
		for i > 0 {
			p := (i - 1) / 2
			if !h[i].less(h[p]) {
				break
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
		w.h = h
		return true
	}
	if !h[0].less(it) {
		return false
	}
	h[0] = it
	siftDown(h, 0)
	return true
}

// sorted heap-sorts the kept items of w.h into descending order and
// returns them.
func (w *workspace) sorted() []item {
	h := w.h
	for end := len(h) - 1; end > 0; end-- {
		h[0], h[end] = h[end], h[0]
		siftDown(h[:end], 0)
	}
	return h
}

func siftDown(h []item, i int) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h[r].less(h[l]) {
			m = r
		}
		if !h[m].less(h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// finish heap-sorts the kept items into descending order, writes them to
// dst[:0] and draws block members (nv individuals precede the blocks).
func (w *workspace) finish(nv int, blocks []Block, r *rand.Rand, dst []int) []int {
	h := w.sorted()
	dst = dst[:0]
	w.groups = w.groups[:0]
	for pos, it := range h {
		if it.blk < 0 {
			dst = append(dst, it.idx)
		} else {
			dst = append(dst, -1)
			w.groups = append(w.groups, group{int(it.blk), pos})
		}
	}
	w.assignMembers(nv, blocks, r, dst)
	return dst
}

// assignMembers fills the positions in w.groups with members of their
// blocks. Members of a block are exchangeable (same utility, i.i.d. noise),
// so the members behind the block's selected order statistics are a
// uniformly random ordered sample without replacement.
// nv individuals precede the blocks in pick indices.
func (w *workspace) assignMembers(nv int, blocks []Block, r *rand.Rand, dst []int) {
	if len(w.groups) == 0 {
		return
	}
	slices.SortFunc(w.groups, func(a, b group) int {
		if c := cmp.Compare(a.blk, b.blk); c != 0 {
			return c
		}
		return cmp.Compare(a.pos, b.pos)
	})
	base, next := nv, 0 // base = pick index of block next's first member
	for i := 0; i < len(w.groups); {
		b := w.groups[i].blk
		for ; next < b; next++ {
			base += blocks[next].Size
		}
		j := i
		for j < len(w.groups) && w.groups[j].blk == b {
			j++
		}
		mem := w.sampleDistinct(blocks[b].Size, j-i, r)
		for t, g := range w.groups[i:j] {
			dst[g.pos] = base + mem[t]
		}
		i = j
	}
}

// sampleDistinct returns t distinct values of [0, m) in uniformly random
// order (every ordered t-tuple equally likely), in O(t) expected space
// unless m is small.
func (w *workspace) sampleDistinct(m, t int, r *rand.Rand) []int {
	mem := w.members[:0]
	if m <= 4*t || m <= 64 {
		// Partial Fisher-Yates over [0, m).
		p := w.perm[:0]
		for i := range m {
			p = append(p, i)
		}
		for i := range t {
			j := i + r.IntN(m-i)
			p[i], p[j] = p[j], p[i]
		}
		w.perm = p
		mem = append(mem, p[:t]...)
		w.members = mem
		return mem
	}
	// Floyd's algorithm: a uniform t-subset; then a shuffle for the order.
	small := t <= 32
	if !small {
		if w.seen == nil {
			w.seen = make(map[int]struct{}, t)
		}
		clear(w.seen)
	}
	for j := m - t; j < m; j++ {
		x := r.IntN(j + 1)
		dup := false
		if small {
			dup = slices.Contains(mem, x)
		} else {
			_, dup = w.seen[x]
		}
		if dup {
			x = j
		}
		mem = append(mem, x)
		if !small {
			w.seen[x] = struct{}{}
		}
	}
	r.Shuffle(len(mem), func(a, b int) { mem[a], mem[b] = mem[b], mem[a] })
	w.members = mem
	return mem
}

// ExpTopK samples an ordered list of min(k, u.Len()) distinct candidates
// from the exponential mechanism applied k times without replacement: round
// j picks a remaining candidate v with probability proportional to
// exp(q(v)/scale) (paper Eq. exp-mech-iterative with scale = 2*Delta/eps_p).
//
// It is implemented as Gumbel top-K: add i.i.d. Gumbel(0, scale) noise to
// every utility and keep the K largest (Gumbel-max trick; Yellott 1977,
// Durfee & Rogers 2019 Lemma 4.2), which has exactly the same distribution
// over ordered lists. Guarantee: with scale = 2*Delta/eps_p and Delta the
// utility sensitivity, every round is the exponential mechanism and hence
// eps_p-DP for arbitrary (non-monotone) utilities, so the list is
// (K*eps_p)-DP by sequential composition. scale == 0 gives the exact top-K
// with uniformly random tie-breaking; that is 0-DP when Delta == 0 because
// the utilities are then invariant, and never divides by the scale.
//
// A block of m equal utilities costs O(min(k, m)) instead of O(m): its
// largest Gumbel values are drawn directly as order statistics with the
// Rényi representation of exponential spacings (E_(1) ~ Exp(m),
// E_(j+1) = E_(j) + Exp(m-j), G_(j) = c - scale*ln E_(j)), stopping at the
// first one that cannot enter the top K, and the members behind them are a
// uniformly random ordered sample of the block. Total cost
// O(len(Vals) + len(Blocks) + k log k) plus at most min(k, m) order
// statistics per block (usually one for a low-valued block). Once the heap
// is full, most individual candidates are rejected with a cheap lower bound
// of the logarithm instead of the logarithm itself; this changes no output.
//
// The result is written to dst[:0] (pass nil or a reused buffer).
// Arguments are validated: k >= 1, finite scale >= 0, finite utilities,
// non-negative block sizes, non-nil r.
func ExpTopK(u *Utilities, k int, scale float64, r *rand.Rand, dst []int) ([]int, error) {
	if err := checkCommon(u, k, r); err != nil {
		return dst[:0], err
	}
	if err := checkScale(scale); err != nil {
		return dst[:0], err
	}
	w := getWS()
	defer putWS(w)
	w.h = w.h[:0]
	// Each item carries g ~ Gumbel(0,1); its primary key is q + scale*g and
	// g itself breaks ties, which makes scale == 0 the exact top-K with
	// uniformly random tie-breaking (i.i.d. continuous keys among equals).
	for i, v := range u.Vals {
		if len(w.h) == k {
			// Full heap: most candidates lose; decide them without a log
			// (or, at scale 0, without a draw) when that is certain.
			if scale == 0 {
				if v < w.h[0].p {
					continue
				}
			} else {
				e := expPos(r)
				if lo, ok := lnLower(e); ok && v-scale*lo < w.h[0].p {
					continue // g = -ln e <= -lo, so v + scale*g < threshold
				}
				g := -math.Log(e)
				w.offer(item{p: v + scale*g, s: g, idx: i, blk: -1}, k)
				continue
			}
		}
		g := -math.Log(expPos(r))
		w.offer(item{p: v + scale*g, s: g, idx: i, blk: -1}, k)
	}
	w.offerBlocks(u.Blocks, k, scale, r)
	return w.finish(len(u.Vals), u.Blocks, r, dst), nil
}

// offerBlocks offers the top order statistics of every block's Gumbel
// keys (ExpTopK's Rényi representation), drawn from r in block order.
func (w *workspace) offerBlocks(blocks []Block, k int, scale float64, r *rand.Rand) {
	for b, blk := range blocks {
		m := blk.Size
		if scale == 0 && len(w.h) == k && blk.Val < w.h[0].p {
			continue
		}
		z := 0.0
		for j := range min(k, m) {
			z += r.ExpFloat64() / float64(m-j)
			g := -math.Log(z)
			if !w.offer(item{p: blk.Val + scale*g, s: g, idx: j, blk: int32(b)}, k) {
				break // later order statistics are smaller still
			}
		}
	}
}

// lnLower returns a lower bound of ln(x) within 0.002 of it, using the
// exponent bits and two terms of ln f = 2 atanh((f-1)/(f+1)) for the
// mantissa f in [1, 2) (the omitted terms are positive and sum to at most
// 2 s^5/5/(1-s^2) < 0.00186 for s < 1/3). ok is false for zero, subnormal
// or non-finite x.
func lnLower(x float64) (lo float64, ok bool) {
	bits := math.Float64bits(x)
	e := int(bits>>52) & 0x7ff
	if e == 0 || e == 0x7ff || bits>>63 != 0 {
		return 0, false
	}
	f := math.Float64frombits(bits&(1<<52-1) | 1023<<52)
	s := (f - 1) / (f + 1)
	return float64(e-1023)*math.Ln2 + 2*s*(1+s*s/3) - 1e-12, true
}

// ExactTopK is the non-private top-K: the min(k, u.Len()) largest utilities
// in decreasing order, with ties (within and between blocks and individual
// candidates) broken uniformly at random. It has no privacy guarantee unless
// the utilities are invariant between neighbouring graphs (Delta == 0).
func ExactTopK(u *Utilities, k int, r *rand.Rand, dst []int) ([]int, error) {
	return ExpTopK(u, k, 0, r, dst)
}

// NoisyTopK adds i.i.d. noise drawn from n to every utility once and returns
// the min(k, u.Len()) candidates with the largest noisy values, in
// decreasing order. Blocks are handled exactly and in O(min(k, m)) through
// the top order statistics of m i.i.d. draws (Rényi representation mapped
// through the noise's inverse CDF). Zero noise (Laplace scale 0, staircase
// Delta 0) gives ExactTopK.
//
// Guarantee: for k == 1 this is report-noisy-max. If n's survival function
// satisfies S(t) <= exp(eps) * S(t + 2*Delta) for all t (Laplace with scale
// 2*Delta/eps; staircase(eps) with step 2*Delta), it is eps-DP for arbitrary
// utilities with sensitivity Delta: fixing the other candidates' noise, the
// winning threshold for candidate i moves by at most 2*Delta. With half that
// noise (the paper's Laplace Delta/eps and Staircase(Delta, eps)) the same
// argument gives 2*eps in general (eps only for monotone utilities). For
// k > 1 one-shot noisy top-K has no K-selection analysis in the paper and no
// pure-DP claim is made here beyond the vacuous bound of releasing every
// noisy value (number of candidates times the per-value eps).
func NoisyTopK(u *Utilities, k int, n Noise, r *rand.Rand, dst []int) ([]int, error) {
	if err := checkCommon(u, k, r); err != nil {
		return dst[:0], err
	}
	if n == nil {
		return dst[:0], invalid("nil noise")
	}
	if err := n.Validate(); err != nil {
		return dst[:0], err
	}
	switch pn := n.prep().(type) {
	case laplacePrep:
		return noisyTopK(u, k, pn, r, dst), nil
	case stairPrep:
		return noisyTopK(u, k, pn, r, dst), nil
	default:
		return dst[:0], invalid("unsupported noise %T", n)
	}
}

// noisyTopK is NoisyTopK on validated arguments; generic so that the noise
// calls are static (no interface boxing or dynamic dispatch per draw).
func noisyTopK[P prepared](u *Utilities, k int, pn P, r *rand.Rand, dst []int) []int {
	if pn.isZero() {
		dst, _ = ExpTopK(u, k, 0, r, dst)
		return dst
	}
	w := getWS()
	defer putWS(w)
	w.h = w.h[:0]
	for i, v := range u.Vals {
		w.offer(item{p: v + pn.sample(r), idx: i, blk: -1}, k)
	}
	for b, blk := range u.Blocks {
		m := blk.Size
		z := 0.0
		for j := range min(k, m) {
			z += r.ExpFloat64() / float64(m-j)
			// The maximum of the remaining draws: F(X) = exp(-z).
			if !w.offer(item{p: blk.Val + pn.quantileExp(z), idx: j, blk: int32(b)}, k) {
				break
			}
		}
	}
	return w.finish(len(u.Vals), u.Blocks, r, dst)
}

// LaplaceTopK is the paper's Laplace baseline: Laplace(scale) noise added
// once to every utility, top K (NoisyTopK). The paper calibrates
// scale = Delta/eps_p. Guarantee (see NoisyTopK): for K = 1, eps-DP with
// scale = 2*Delta/eps (2*eps at the paper's Delta/eps); no K > 1 analysis.
func LaplaceTopK(u *Utilities, k int, scale float64, r *rand.Rand, dst []int) ([]int, error) {
	if err := checkCommon(u, k, r); err != nil {
		return dst[:0], err
	}
	if err := checkScale(scale); err != nil {
		return dst[:0], err
	}
	return noisyTopK(u, k, newLaplacePrep(scale), r, dst), nil
}

// StaircaseTopK is the Staircase baseline: noise from the staircase
// distribution p (Geng & Viswanath, Algorithm 1; p.Delta is the step, the
// noise is not divided by eps again) added once to every utility, top K.
// The paper's calibration is Staircase(Delta, eps_p). Guarantee (see
// NoisyTopK): for K = 1, eps-DP when p.Delta = 2*Delta (2*eps with
// p.Delta = Delta); no K > 1 analysis. p.Delta == 0 gives ExactTopK.
func StaircaseTopK(u *Utilities, k int, p StaircaseParams, r *rand.Rand, dst []int) ([]int, error) {
	if err := checkCommon(u, k, r); err != nil {
		return dst[:0], err
	}
	if err := p.Validate(); err != nil {
		return dst[:0], err
	}
	return noisyTopK(u, k, p.stair(), r, dst), nil
}

// LaplacePeel is report-noisy-max peeling: K rounds, each adding FRESH
// Laplace(scale) noise to the remaining candidates and picking the maximum.
// Guarantee: report-noisy-max with Laplace(2*Delta/eps) noise is eps-DP for
// arbitrary (non-monotone) utilities with sensitivity Delta (see NoisyTopK),
// and each round is such a mechanism on a set fixed by earlier outputs, so
// with scale = 2*Delta/eps_p the K rounds compose to K*eps_p. scale == 0
// gives ExactTopK.
//
// A block's maximum over its m' remaining members is one draw through the
// inverse CDF (F(max) = exp(-Exp(1)/m')), and which member won is uniform
// among the remaining ones, so a round costs O(remaining individuals +
// blocks).
func LaplacePeel(u *Utilities, k int, scale float64, r *rand.Rand, dst []int) ([]int, error) {
	if err := checkCommon(u, k, r); err != nil {
		return dst[:0], err
	}
	if err := checkScale(scale); err != nil {
		return dst[:0], err
	}
	if scale == 0 {
		return ExpTopK(u, k, 0, r, dst)
	}
	n := newLaplacePrep(scale)
	w := getWS()
	defer putWS(w)
	rem := w.rem[:0]
	for i := range u.Vals {
		rem = append(rem, int32(i))
	}
	w.rem = rem
	cnt := w.cnt[:0]
	for _, b := range u.Blocks {
		cnt = append(cnt, b.Size)
	}
	w.cnt = cnt
	dst = dst[:0]
	w.groups = w.groups[:0]
	k = min(k, u.Len())
	for pos := range k {
		best, bi, bb := math.Inf(-1), -1, -1
		for j, i := range rem {
			if x := u.Vals[i] + n.sample(r); x > best {
				best, bi, bb = x, j, -1
			}
		}
		for b, m := range cnt {
			if m == 0 {
				continue
			}
			if x := u.Blocks[b].Val + n.quantileExp(r.ExpFloat64()/float64(m)); x > best {
				best, bi, bb = x, -1, b
			}
		}
		if bb >= 0 {
			cnt[bb]--
			dst = append(dst, -1)
			w.groups = append(w.groups, group{bb, pos})
		} else {
			dst = append(dst, int(rem[bi]))
			rem[bi] = rem[len(rem)-1]
			rem = rem[:len(rem)-1]
		}
	}
	w.assignMembers(len(u.Vals), u.Blocks, r, dst)
	return dst, nil
}

// expPos draws a standard exponential that is strictly positive, so a
// Gumbel key -ln(e) is always finite: math/rand/v2 documents ExpFloat64's
// range as (0, MaxFloat64], and the loop makes that an invariant of this
// package rather than of the standard library (a key of +Inf would make a
// candidate certain). The residual floating-point error of textbook
// sampling (Mironov 2012) remains; --sampler exact avoids it.
func expPos(r *rand.Rand) float64 {
	for {
		if e := r.ExpFloat64(); e > 0 {
			return e
		}
	}
}
