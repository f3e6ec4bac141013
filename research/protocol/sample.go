package protocol

import (
	"context"

	"github.com/dplp/dplp/internal/par"
	"math/rand/v2"
	"slices"
)

// sampler is one worker's reusable state for drawing uniform k-subsets
// without per-pair allocation. Its generator is re-seeded for every
// (query, stream), so results do not depend on how queries are scheduled.
type sampler struct {
	src   *rand.PCG
	r     *rand.Rand
	stamp []uint32 // stamp[t] == cur marks rank t as taken in the current draw
	cur   uint32
	ranks []int32
	bufA  []int32
	bufB  []int32
}

func newSampler(n int) *sampler {
	src := rand.NewPCG(0, 0)
	return &sampler{src: src, r: rand.New(src), stamp: make([]uint32, n)}
}

// reset positions the generator on the stream of one (query, phase).
func (s *sampler) reset(seed, stream uint64) { s.src.Seed(seed, stream) }

// subset draws k distinct ranks from [0, m), uniformly among k-subsets, and
// returns them sorted ascending (Floyd's algorithm: k draws, no rejection).
func (s *sampler) subset(m, k int) []int32 {
	s.ranks = s.ranks[:0]
	if k <= 0 || m <= 0 {
		return s.ranks
	}
	if k > m {
		k = m
	}
	s.cur++
	if s.cur == 0 { // wrapped: clear stale marks
		clear(s.stamp)
		s.cur = 1
	}
	for j := m - k; j < m; j++ {
		t := s.r.IntN(j + 1)
		if s.stamp[t] == s.cur {
			t = j
		}
		s.stamp[t] = s.cur
		s.ranks = append(s.ranks, int32(t))
	}
	slices.Sort(s.ranks)
	return s.ranks
}

// fromList appends to dst a uniform k-subset of list (kept in list order).
func (s *sampler) fromList(dst, list []int32, k int) []int32 {
	for _, r := range s.subset(len(list), k) {
		dst = append(dst, list[r])
	}
	return dst
}

// fromComplement appends to dst, ascending, a uniform k-subset of
// [0, n) \ excl, where excl is sorted and duplicate-free.
func (s *sampler) fromComplement(dst []int32, n int, excl []int32, k int) []int32 {
	j := 0
	for _, r := range s.subset(n-len(excl), k) {
		// The r-th free id is r plus the number of excluded ids at or below it.
		id := r + int32(j)
		for j < len(excl) && excl[j] <= id {
			j++
			id = r + int32(j)
		}
		dst = append(dst, id)
	}
	return dst
}

// union returns the sorted duplicate-free union of sorted duplicate-free a
// and b, written into dst[:0].
func union(dst, a, b []int32) []int32 {
	dst = dst[:0]
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			dst = append(dst, a[i])
			i++
		case a[i] > b[j]:
			dst = append(dst, b[j])
			j++
		default:
			dst = append(dst, a[i])
			i++
			j++
		}
	}
	dst = append(dst, a[i:]...)
	return append(dst, b[j:]...)
}

// contains reports whether sorted list holds x.
func contains(list []int32, x int32) bool {
	_, ok := slices.BinarySearch(list, x)
	return ok
}

// seeds draws one stream seed per item from rng, in item order, so every
// later per-item draw is reproducible from rng alone.
func seeds(rng *rand.Rand, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = rng.Uint64()
	}
	return out
}

// parallel runs fn(worker, i) for i in [0, n) on up to GOMAXPROCS workers,
// giving each worker its own sampler over node ids [0, nodes).
func parallel(n, nodes int, fn func(s *sampler, i int)) {
	// Each item draws from its own stream (sampler.reset with the item's
	// seed), so the result does not depend on the worker.
	par.Run(context.Background(), n, par.Options{}, func(int) *sampler { return newSampler(nodes) },
		func(s *sampler, i int) error { fn(s, i); return nil })
}

// pairSet is a set of undirected pairs stored, for each lower endpoint, as a
// sorted list of higher endpoints; it backs graph.Without predicates.
type pairSet struct {
	off []int64
	adj []int32
}

func newPairSet(n int, lists func(emit func(a, b int32))) *pairSet {
	cnt := make([]int64, n+1)
	lists(func(a, b int32) {
		if a > b {
			a, b = b, a
		}
		cnt[a+1]++
	})
	for i := 1; i <= n; i++ {
		cnt[i] += cnt[i-1]
	}
	adj := make([]int32, cnt[n])
	fill := slices.Clone(cnt[:n])
	lists(func(a, b int32) {
		if a > b {
			a, b = b, a
		}
		adj[fill[a]] = b
		fill[a]++
	})
	for u := 0; u < n; u++ {
		slices.Sort(adj[cnt[u]:cnt[u+1]])
	}
	return &pairSet{off: cnt, adj: adj}
}

// has reports whether {a, b} is in the set.
func (p *pairSet) has(a, b int32) bool {
	if a > b {
		a, b = b, a
	}
	return contains(p.adj[p.off[a]:p.off[a+1]], b)
}
