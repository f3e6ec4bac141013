package mech

import (
	"math"
	"math/rand/v2"
)

// NoiseKey keys the per-candidate noise of ExpTopKKeyed: candidate v's
// Gumbel key is a function of (key, v) alone, so the list does not depend
// on the order in which candidates are enumerated. It is for seeded
// (research) runs, where the key is derived from (seed, user); it is not a
// cryptographic construction and carries no privacy guarantee of its own.
type NoiseKey [2]uint64

// NewNoiseKey draws a key from r (two 64-bit words, the first draws a seeded
// release makes from the user's generator).
func NewNoiseKey(r *rand.Rand) NoiseKey { return NoiseKey{r.Uint64(), r.Uint64()} }

// golden is the SplitMix64 increment (2^64 / phi, odd).
const golden = 0x9e3779b97f4a7c15

// mix64 is the SplitMix64 output function (Steele, Lea and Flood 2014;
// Stafford's Mix13 constants): a bijection of 64-bit words whose outputs on
// the states k, k+golden, k+2*golden, ... form the SplitMix64 sequence, which
// passes BigCrush.
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// bits is candidate v's 52 random bits under key: the top 52 bits of
// mix64(key[0] + (v+1)*golden), the SplitMix64 sequence of seed key[0] at
// position v+1 (distinct candidates, distinct states), with key[1] added
// to the state first (v's draw is the sequence's at the point key[0] +
// key[1] + (v+1)*golden: both words of the key count).
func (key NoiseKey) bits(v int32) uint64 {
	return mix64(key[0]+key[1]+(uint64(uint32(v))+1)*golden) >> 12
}

// tailOf is the uniform W in (0, 1) of 52 bits x: the odd multiple
// (2x+1) 2^-53, never 0 or 1, so the Gumbel key is finite.
func tailOf(x uint64) float64 { return float64(x<<1|1) * 0x1p-53 }

// gumbelUpper bounds gumbelOf(w) from above without a logarithm:
// -ln(1-w) >= w gives g <= -ln w, and with w = m 2^E (m in [1, 2))
// log2(w) = E + log2(m) >= E + m - 1 (log2 is concave), so
// -ln w <= -(E + m - 1) ln 2. The margin covers rounding; w must be a
// normal positive number (tailOf's are).
func gumbelUpper(w float64) float64 {
	b := math.Float64bits(w)
	e := float64(int(b>>52&0x7ff) - 1023)
	m1 := math.Float64frombits(b&(1<<52-1)|1023<<52) - 1
	return -(e+m1)*math.Ln2 + 1e-9
}

// gumbelOf is the Gumbel(0, 1) draw of tail W: -ln(-ln U) for the uniform
// U = 1 - W, with -ln U computed as -log1p(-W) (accurate for the large keys
// that win).
func gumbelOf(w float64) float64 { return -math.Log(-math.Log1p(-w)) }

// Gumbel is candidate v's Gumbel(0, 1) draw under key.
func (key NoiseKey) Gumbel(v int32) float64 { return gumbelOf(tailOf(key.bits(v))) }

// keyCut is the largest 52-bit draw x that can still enter a heap whose
// smallest key is thr, for a candidate with utility at most hi: the Gumbel
// draw of x is decreasing in x, and gumbelOf(tailOf(x)) >= t = (thr -
// hi)/scale only if tailOf(x) <= 1 - exp(-exp(-t)). The cut is widened
// (t lowered by a relative 1e-9, then the bound by 1e-9 and one step) so
// that rounding never rejects a candidate that could enter: it only saves
// computing the keys of candidates that cannot. 1<<52 rejects nothing.
func keyCut(thr, hi, scale float64) int64 {
	t := (thr - hi) / scale
	t -= 1e-9 * (1 + math.Abs(t) + (math.Abs(thr)+math.Abs(hi))/scale)
	ws := -math.Expm1(-math.Exp(-t))
	c := ws*0x1p52*(1+1e-9) + 1
	if !(c < 1<<52) { // also NaN
		return 1 << 52
	}
	return int64(c)
}

// ExpTopKKeyed is ExpTopK with the noise of individual candidate i keyed by
// its id: its Gumbel(0, 1) draw is key.Gumbel(ids[i]) instead of the next
// draw of a sequential generator, so the released list is a function of
// the multiset of (id, utility) pairs, the blocks, key and r's state:
// permuting Vals and ids together permutes the picks' indices and nothing
// else (ties in noisy utility and noise, a 2^-53 event, are broken by id).
// A seeded release uses it to be reproducible without sorting each user's
// candidates (release.UserInput.Canonical). Blocks are drawn from r
// exactly as in ExpTopK, after the individuals, and their members are
// assigned from r afterwards.
//
// Distribution: for a key drawn uniformly at random, the draws are
// pseudo-random (SplitMix64, not a cryptographic PRF) and the list has
// ExpTopK's distribution up to that and to the 52-bit resolution of the
// uniforms; ids must be distinct (they are node ids). Arguments are
// validated as in ExpTopK, and len(ids) must be len(u.Vals).
func ExpTopKKeyed(u *Utilities, ids []int32, key NoiseKey, k int, scale float64, r *rand.Rand, dst []int) ([]int, error) {
	if err := checkCommon(u, k, r); err != nil {
		return dst[:0], err
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range u.Vals {
		lo, hi = min(lo, v), max(hi, v)
	}
	return expTopKKeyed(sliceVals(u.Vals), lo, hi, u.Blocks, ids, key, k, scale, r, dst)
}

// LazyVals serves utilities on demand: At(i) is individual candidate i's
// utility, for i in [0, Len()).
type LazyVals interface {
	Len() int
	At(i int) float64
}

// sliceVals is a slice as LazyVals.
type sliceVals []float64

func (s sliceVals) Len() int         { return len(s) }
func (s sliceVals) At(i int) float64 { return s[i] }

// ExpTopKKeyedLazy is ExpTopKKeyed for utilities served on demand, all in
// [lo, hi]: with noise (scale > 0) it evaluates a candidate's utility only
// when its keyed draw is large enough for a candidate of utility hi to
// enter the top K (the draws are computed first, from the ids alone; see
// expTopKKeyed), so most candidates cost one hash; a candidate whose
// utility is read is then checked against a logarithm-free upper bound of
// its key (gumbelUpper) before its key is computed. The list is
// ExpTopKKeyed's on the same utilities, key and generator, for any valid
// bounds (they change the work, never the output). A utility that is not
// finite or lies outside [lo, hi] is an error. blocks are as in
// Utilities.
func ExpTopKKeyedLazy(vals LazyVals, lo, hi float64, blocks []Block, ids []int32, key NoiseKey, k int, scale float64, r *rand.Rand, dst []int) ([]int, error) {
	if vals == nil {
		return dst[:0], invalid("nil utilities")
	}
	u := Utilities{Blocks: blocks}
	if err := u.ValidateBlocks(); err != nil {
		return dst[:0], err
	}
	if k < 1 {
		return dst[:0], invalid("k must be >= 1, got %d", k)
	}
	if r == nil {
		return dst[:0], invalid("nil random source")
	}
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return dst[:0], invalid("utility bounds [%v, %v]", lo, hi)
	}
	return expTopKKeyed(vals, lo, hi, blocks, ids, key, k, scale, r, dst)
}

// expTopKKeyed is the keyed Gumbel top-K over vals (each in [lo, hi]) and
// blocks; generic so that the eager path reads its slice directly.
//
// With noise, every key v + scale*g is at least lo + scale*g (rounding is
// monotone), so the K-th largest key is at least T0 = lo + scale*g_(k),
// g_(k) the K-th largest Gumbel draw; a candidate can enter the list only
// if hi + scale*g reaches T0 (keyCut), a draw within about
// e^((hi-lo)/scale) of the K-th smallest. The draws are computed first
// (one hash each): in one pass that keeps only those below a generous
// guess of that cut (4 K e^((hi-lo)/scale) expected of the n), when the
// guess covers the cut; otherwise in a pass that keeps every draw and the
// K smallest. Only the kept draws below the cut have their utility read
// and their key computed. Neither bound changes the output.
func expTopKKeyed[V LazyVals](vals V, lo, hi float64, blocks []Block, ids []int32, key NoiseKey, k int, scale float64, r *rand.Rand, dst []int) ([]int, error) {
	if err := checkScale(scale); err != nil {
		return dst[:0], err
	}
	n := vals.Len()
	if len(ids) != n {
		return dst[:0], invalid("%d ids for %d utilities", len(ids), n)
	}
	w := getWS()
	defer putWS(w)
	w.h = w.h[:0]
	kc := keyedCut{cut: 1 << 52, floor: math.Inf(-1), lo: lo, hi: hi, scale: scale}
	switch {
	case scale > 0 && n > k:
		if frac := keyedGuess * float64(k) / float64(n) * math.Exp((hi-lo)/scale); frac < 0.25 {
			// One pass: keep the draws below the guess.
			guess := uint64(frac * 0x1p52)
			w.xs, w.xi = w.xs[:0], w.xi[:0]
			for i, id := range ids {
				if x := key.bits(id); x <= guess {
					w.xs = append(w.xs, x)
					w.xi = append(w.xi, int32(i))
				}
			}
			if len(w.xs) >= k {
				kc.setFloor(kthSmallest(w.xs, k, &w.xh))
				if uint64(kc.cut) <= guess { // every draw that can enter was kept
					for j, x := range w.xs {
						i := int(w.xi[j])
						if err := offerKeyed(w, vals, i, ids[i], x, k, &kc); err != nil {
							return dst[:0], err
						}
					}
					break
				}
			}
		}
		// Two passes: every draw, then those below the cut.
		w.xs = w.xs[:0]
		for _, id := range ids {
			w.xs = append(w.xs, key.bits(id))
		}
		kc.cut, kc.floor = 1<<52, math.Inf(-1)
		kc.setFloor(kthSmallest(w.xs, k, &w.xh))
		for i, x := range w.xs {
			if err := offerKeyed(w, vals, i, ids[i], x, k, &kc); err != nil {
				return dst[:0], err
			}
		}
	default:
		for i, id := range ids {
			if err := offerKeyed(w, vals, i, id, key.bits(id), k, &kc); err != nil {
				return dst[:0], err
			}
		}
	}
	w.offerBlocks(blocks, k, scale, r)
	return w.finish(n, blocks, r, dst), nil
}

// keyedGuess is how many times the expected share of draws below the cut
// the one-pass guess keeps (a variable for tests, which lower it to take
// the two-pass fallback).
var keyedGuess = 4.0

// keyedCut is expTopKKeyed's bound on the draws that can still enter: a
// draw above cut cannot (keyCut of the larger of floor, the K-th largest
// key's lower bound T0, and the K-th largest key so far).
type keyedCut struct {
	cut           int64
	floor         float64
	lo, hi, scale float64
}

// setFloor sets T0 from xk, the K-th smallest draw.
func (kc *keyedCut) setFloor(xk uint64) {
	kc.floor = kc.lo + kc.scale*gumbelOf(tailOf(xk))
	kc.cut = keyCut(kc.floor, kc.hi, kc.scale)
}

// offerKeyed offers candidate i (its id and draw x) unless its draw is
// above the cut or its key is certainly below the K-th largest so far;
// the cut follows the heap once it is full.
func offerKeyed[V LazyVals](w *workspace, vals V, i int, id int32, x uint64, k int, kc *keyedCut) error {
	scale := kc.scale
	if scale > 0 && int64(x) > kc.cut {
		return nil // its key is below the K-th largest whatever its utility
	}
	v := vals.At(i)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return invalid("utility %d is %v", i, v)
	}
	if v > kc.hi || v < kc.lo {
		return invalid("utility %d is %v, outside its bounds [%v, %v]", i, v, kc.lo, kc.hi)
	}
	wt := tailOf(x)
	if len(w.h) == k {
		if scale == 0 && v < w.h[0].p {
			return nil
		}
		if scale > 0 && v+scale*gumbelUpper(wt) < w.h[0].p {
			return nil // below the K-th largest key at its own utility
		}
	}
	g := gumbelOf(wt)
	if w.offer(item{p: v + scale*g, s: g, idx: i, blk: -1, id: id}, k) && len(w.h) == k && scale > 0 {
		kc.cut = keyCut(max(w.h[0].p, kc.floor), kc.hi, scale)
	}
	return nil
}

// kthSmallest is the k-th smallest of xs (1 <= k <= len(xs)), through a
// max-heap of the k smallest kept in *h.
func kthSmallest(xs []uint64, k int, h *[]uint64) uint64 {
	xh := (*h)[:0]
	for _, x := range xs {
		if len(xh) < k {
			xh = append(xh, x)
			for j := len(xh) - 1; j > 0 && xh[(j-1)/2] < xh[j]; j = (j - 1) / 2 {
				xh[j], xh[(j-1)/2] = xh[(j-1)/2], xh[j]
			}
		} else if x < xh[0] {
			xh[0] = x
			siftDownMax(xh)
		}
	}
	*h = xh
	return xh[0]
}

// siftDownMax restores the max-heap h after its root was lowered.
func siftDownMax(h []uint64) {
	i, n := 0, len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if l+1 < n && h[l+1] > h[l] {
			m = l + 1
		}
		if h[m] <= h[i] {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
