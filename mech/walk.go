package mech

import (
	"math"
	"math/rand/v2"
)

// Candidates classifies the ids of a universe [0, n) for WalkTopK: At(v)
// is v's utility and whether v is a candidate at all.
type Candidates interface {
	At(v int32) (val float64, ok bool)
}

// WalkTopK is the exponential mechanism's top-k list (Gumbel top-K, as
// ExpTopK) over the candidates among the ids [0, n), drawn in time
// proportional to the draws that can matter rather than to the number of
// candidates. Every id gets an i.i.d. Gumbel(0, scale) draw; the list is
// the k candidates with the largest utility plus draw, in decreasing
// order. The draws are generated from r in decreasing order (the Rényi
// representation of the order statistics of n i.i.d. exponentials: E_(1)
// = X_1/n, E_(j+1) = E_(j) + X_(j+1)/(n-j), g_(j) = -ln E_(j)), and the
// j-th largest is given to the j-th id of a uniformly random order of
// [0, n) (uniform draws from r, an id drawn before drawn again): the
// permutation of n i.i.d. values' order statistics is n i.i.d. values, so
// every id's draw is Gumbel and independent. Ids that are not candidates
// (cands.At false) use up their draw and are skipped. The walk stops once
// hi + scale*g_(j), an upper bound of every later key, is below the k-th
// largest key so far (or the ids run out).
//
// The list depends only on n, the candidates' utilities by id, k, scale
// and r: not on any order in which the candidates could be listed. Its
// expected length of walk is about k (n/c) e^((hi-lo)/scale) ids for c
// candidates with utilities in [lo, hi] (about k when the utilities span
// little of the noise scale, as a private release's do), and up to n when
// they span much of it or c is close to k; callers choose ExpTopKKeyed
// then (WalkSteps estimates it). Every utility must be finite and at most
// hi (an error otherwise); scale must be > 0; picks are ids.
func WalkTopK[C Candidates](n int, cands C, hi float64, k int, scale float64, r *rand.Rand, dst []int32) ([]int32, error) {
	dst = dst[:0]
	if n < 0 || k < 1 || r == nil {
		return dst, invalid("walk over %d ids, k = %d, random source %v", n, k, r != nil)
	}
	if !(scale > 0) || math.IsInf(scale, 0) {
		return dst, invalid("walk needs a finite noise scale > 0, got %v", scale)
	}
	if math.IsNaN(hi) || math.IsInf(hi, 0) {
		return dst, invalid("utility bound %v", hi)
	}
	w := getWS()
	defer putWS(w)
	w.h = w.h[:0]
	w.seen32.reset(32)
	z := 0.0
	for j := range n {
		z += r.ExpFloat64() / float64(n-j)
		g := -math.Log(z)
		if len(w.h) == k && hi+scale*g < w.h[0].p {
			break // every later draw is smaller
		}
		var v int32
		for {
			v = int32(r.IntN(n))
			if w.seen32.add(v) {
				break
			}
		}
		val, ok := cands.At(v)
		if !ok {
			continue
		}
		if math.IsNaN(val) || math.IsInf(val, 0) || val > hi {
			return dst, invalid("utility of id %d is %v (bound %v)", v, val, hi)
		}
		w.offer(item{p: val + scale*g, s: g, idx: int(v), blk: -1, id: v}, k)
	}
	for _, it := range w.sorted() {
		dst = append(dst, it.id)
	}
	return dst, nil
}

// WalkSteps is the expected number of ids WalkTopK visits, about
// k (n/c) e^((hi-lo)/scale), for c candidates with utilities in [lo, hi]
// (+Inf when c < k or the estimate overflows).
func WalkSteps(n, c, k int, lo, hi, scale float64) float64 {
	if c < k || c == 0 || !(scale > 0) {
		return math.Inf(1)
	}
	return float64(k) * float64(n) / float64(c) * math.Exp((hi-lo)/scale)
}

// idSet is a set of int32 ids (open addressing, linear probing), cleared
// in time proportional to its size.
type idSet struct {
	slot []int32 // id + 1; 0 is empty
	used int
}

// reset empties the set and sizes it for about n ids.
func (s *idSet) reset(n int) {
	size := 64
	for size < 2*n {
		size *= 2
	}
	if cap(s.slot) < size {
		s.slot = make([]int32, size)
	} else {
		s.slot = s.slot[:size] // a table grown for an earlier walk keeps its memory
		clear(s.slot)
	}
	s.used = 0
}

// add inserts v and reports whether it was absent. The table doubles when
// half full.
func (s *idSet) add(v int32) bool {
	if 2*(s.used+1) > len(s.slot) {
		old := s.slot
		s.slot = make([]int32, 2*len(old))
		s.used = 0
		for _, x := range old {
			if x != 0 {
				s.add(x - 1)
			}
		}
	}
	mask := uint32(len(s.slot) - 1)
	h := uint32(v) * 0x9e3779b1
	for i := (h ^ h>>15) & mask; ; i = (i + 1) & mask {
		switch s.slot[i] {
		case 0:
			s.slot[i] = v + 1
			s.used++
			return true
		case v + 1:
			return false
		}
	}
}
