package train

import (
	"math"
	"slices"
)

// pairScratch holds reusable buffers for hinge and auc.
type pairScratch struct {
	perm   []int32
	sorted []float64
	cnt    []float64
	rank   ranker
}

func (s *pairScratch) sortSide(q []float64, shift float64) {
	n := len(q)
	if cap(s.perm) < n {
		s.perm = make([]int32, n)
		s.sorted = make([]float64, n)
	}
	s.perm, s.sorted = s.perm[:n], s.sorted[:n]
	for i := range s.perm {
		s.perm[i] = int32(i)
	}
	slices.SortFunc(s.perm, func(a, b int32) int {
		switch {
		case q[a] < q[b]:
			return -1
		case q[a] > q[b]:
			return 1
		}
		return int(a - b)
	})
	for i, j := range s.perm {
		s.sorted[i] = shift + q[j]
	}
	if cap(s.cnt) < n+1 {
		s.cnt = make([]float64, n+1)
	}
	s.cnt = s.cnt[:n+1]
	clear(s.cnt)
}

// lowerBound returns the number of elements of the ascending a that are < v.
// The loop has a fixed trip count for a given len(a) and a conditional move
// instead of an unpredictable branch.
func lowerBound(a []float64, v float64) int {
	n := len(a)
	if n == 0 {
		return 0
	}
	base := 0
	for n > 1 {
		half := n >> 1
		if a[base+half-1] < v {
			base += half
		}
		n -= half
	}
	if a[base] < v {
		base++
	}
	return base
}

// upperBound returns the number of elements of the ascending a that are <= v.
func upperBound(a []float64, v float64) int {
	n := len(a)
	if n == 0 {
		return 0
	}
	base := 0
	for n > 1 {
		half := n >> 1
		if a[base+half-1] <= v {
			base += half
		}
		n -= half
	}
	if a[base] <= v {
		base++
	}
	return base
}

// ranker counts elements of a sorted slice below a value in expected O(1)
// for spread-out data: a bucket table over [s_0, s_{n-1}] gives a starting
// rank that a short scan corrects (in either direction, so bucket-edge
// rounding cannot make it wrong). Small or degenerate inputs use binary
// search.
type ranker struct {
	s       []float64
	lo, inv float64 // bucket b holds [lo + b/inv, lo + (b+1)/inv)
	start   []int32 // start[b] = #{s < lo + b/inv}
}

func (r *ranker) build(s []float64) {
	r.s, r.inv = s, 0
	n := len(s)
	if n < 8 {
		return
	}
	lo, hi := s[0], s[n-1]
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return
	}
	B := 2 * n
	if cap(r.start) < B {
		r.start = make([]int32, B)
	}
	r.start = r.start[:B]
	r.lo, r.inv = lo, float64(B)/(hi-lo)
	w := (hi - lo) / float64(B)
	k := 0
	for b := range r.start {
		edge := lo + float64(b)*w
		for k < n && s[k] < edge {
			k++
		}
		r.start[b] = int32(k)
	}
}

func (r *ranker) bucket(v float64) int {
	b := int((v - r.lo) * r.inv)
	return min(max(b, 0), len(r.start)-1)
}

// less returns #{s < v}.
func (r *ranker) less(v float64) int {
	s := r.s
	if r.inv == 0 {
		return lowerBound(s, v)
	}
	n := len(s)
	if !(v > s[0]) {
		return 0
	}
	if v > s[n-1] {
		return n
	}
	k := int(r.start[r.bucket(v)])
	for k > 0 && s[k-1] >= v {
		k--
	}
	for k < n && s[k] < v {
		k++
	}
	return k
}

// lessEq returns #{s <= v}.
func (r *ranker) lessEq(v float64) int {
	s := r.s
	if r.inv == 0 {
		return upperBound(s, v)
	}
	n := len(s)
	if v < s[0] {
		return 0
	}
	if !(v < s[n-1]) {
		if v >= s[n-1] {
			return n
		}
		return upperBound(s, v) // NaN
	}
	k := int(r.start[r.bucket(v)])
	for k > 0 && s[k-1] > v {
		k--
	}
	for k < n && s[k] <= v {
		k++
	}
	return k
}

// hinge returns L = sum over p, n of max(0, rho + qn[n] - qp[p]) and writes
// dL/dqp into gp and dL/dqn into gn (subgradient 0 at the kink), in
// O((P+N) log min(P, N)) worst case (expected O(P log P + N) with the
// bucket ranker) instead of O(P N).
//
// The pair (p, n) is active iff (rho + qn) - qp > 0, which for finite
// floats (gradual underflow) is exactly a > qp with a = rho + qn rounded
// once, the same test the naive double loop performs. Sorting the smaller
// side once, each element of the other side finds its active partners as a
// prefix (or suffix) by binary search; a histogram of those boundaries then
// gives the sorted side's counts by a running sum.
func (s *pairScratch) hinge(qp, qn []float64, rho float64, gp, gn []float64) float64 {
	P, N := len(qp), len(qn)
	if P == 0 || N == 0 {
		clear(gp)
		clear(gn)
		return 0
	}
	var loss float64
	if P <= N {
		s.sortSide(qp, 0) // sorted positives
		sp := s.sorted
		s.rank.build(sp)
		for n, v := range qn {
			a := rho + v
			k := s.rank.less(a) // positives with qp < a: a prefix
			gn[n] = float64(k)
			loss += float64(k) * a
			s.cnt[k]++
		}
		var run float64
		for i := P - 1; i >= 0; i-- {
			run += s.cnt[i+1] // negatives whose prefix covers positive i
			gp[s.perm[i]] = -run
			loss -= run * sp[i]
		}
		return loss
	}
	s.sortSide(qn, rho) // sorted a = rho + qn
	sa := s.sorted
	s.rank.build(sa)
	for p, v := range qp {
		j := s.rank.lessEq(v) // negatives with a > qp: the suffix from j
		c := float64(N - j)
		gp[p] = -c
		loss -= c * v
		s.cnt[j]++
	}
	var run float64
	for i := 0; i < N; i++ {
		run += s.cnt[i] // positives whose suffix starts at or before i
		gn[s.perm[i]] = run
		loss += run * sa[i]
	}
	return loss
}

// auc returns the fraction of (p, n) pairs with qp > qn, ties counting 1/2
// (NaN if either side is empty).
func (s *pairScratch) auc(qp, qn []float64) float64 {
	P, N := len(qp), len(qn)
	if P == 0 || N == 0 {
		return nanf()
	}
	var wins float64
	if P <= N {
		s.sortSide(qp, 0)
		s.rank.build(s.sorted)
		for _, v := range qn {
			lo, hi := s.rank.less(v), s.rank.lessEq(v)
			wins += float64(P-hi) + 0.5*float64(hi-lo)
		}
	} else {
		s.sortSide(qn, 0)
		s.rank.build(s.sorted)
		for _, v := range qp {
			lo, hi := s.rank.less(v), s.rank.lessEq(v)
			wins += float64(lo) + 0.5*float64(hi-lo)
		}
	}
	return wins / (float64(P) * float64(N))
}
