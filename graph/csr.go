package graph

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/dplp/dplp/internal/par"
)

// fromEdgeChunks is FromEdges on an edge list given in pieces (the parser's
// blocks); the chunks are not retained.
func fromEdgeChunks(n int, chunks [][]Edge, labels []string) (*Graph, BuildStats, error) {
	if n > 0 && n <= 1<<31-1 && labels != nil && len(labels) != n {
		return nil, BuildStats{}, fmt.Errorf("graph: %d labels for %d nodes", len(labels), n)
	}
	off, adj, st, err := buildCSR(n, chunks)
	if err != nil {
		return nil, st, err
	}
	g, err := newGraph(off, adj, labels)
	return g, st, err
}

// buildCSR is dplp's one CSR builder, behind every graph built from edges
// (FromEdges, Parse, the generators) and every protection set (protect.New
// builds through FromEdges): it counts degrees, places both directions of
// every pair, then sorts each list and merges repeats in parallel. Self-loops
// are dropped and repeated or reciprocal pairs merged, both counted. It
// returns ErrEmpty when no pair remains (or n <= 0).
func buildCSR(n int, chunks [][]Edge) ([]int64, []int32, BuildStats, error) {
	var st BuildStats
	if n <= 0 {
		return nil, nil, st, ErrEmpty
	}
	if n > 1<<31-1 {
		return nil, nil, st, fmt.Errorf("graph: %d nodes exceed the int32 id range", n)
	}
	// Count the degrees, then place both directions of every pair. On a
	// large list each core takes a range of nodes and reads the whole list,
	// counting and placing only the entries of its own nodes: no shared
	// counter (atomic increments of random counters from two cores cost
	// 3.7x the serial pass at 10 M nodes), and every list gets its entries
	// in the list's order, as on one core. The first pass also finds the
	// first out-of-range pair, in order.
	workers := 1
	if m := edgeCount(chunks); m >= parallelEdges {
		workers = min(runtime.GOMAXPROCS(0), max(1, n/1024))
	}
	deg := make([]int64, n+1)
	var bad error
	byRange(n, workers, func(w, lo, hi int) {
		lo32, hi32 := int32(lo), int32(hi)
		for _, edges := range chunks {
			for _, e := range edges {
				if w == 0 && bad == nil && (e.U < 0 || e.V < 0 || int(e.U) >= n || int(e.V) >= n) {
					bad = fmt.Errorf("graph: edge (%d,%d) out of range [0,%d)", e.U, e.V, n)
				}
				if e.U == e.V {
					if w == 0 && bad == nil {
						st.SelfLoopsDropped++
					}
					continue
				}
				if e.U >= lo32 && e.U < hi32 {
					deg[e.U+1]++
				}
				if e.V >= lo32 && e.V < hi32 {
					deg[e.V+1]++
				}
			}
		}
	})
	if bad != nil {
		return nil, nil, st, bad
	}
	for i := 1; i <= n; i++ {
		deg[i] += deg[i-1]
	}
	adj := make([]int32, deg[n])
	fill := make([]int64, n)
	copy(fill, deg[:n])
	byRange(n, workers, func(_, lo, hi int) {
		lo32, hi32 := int32(lo), int32(hi)
		for _, edges := range chunks {
			for _, e := range edges {
				if e.U == e.V {
					continue
				}
				if e.U >= lo32 && e.U < hi32 {
					adj[fill[e.U]] = e.V
					fill[e.U]++
				}
				if e.V >= lo32 && e.V < hi32 {
					adj[fill[e.V]] = e.U
					fill[e.V]++
				}
			}
		}
	})
	// Sort each list and drop repeats within its own segment, in parallel;
	// fill[u] becomes the deduplicated length of u's list.
	off := deg
	dupHalves := parallelNodes(n, off, func(lo, hi int) int64 {
		var dups int64
		for u := lo; u < hi; u++ {
			nb := adj[off[u]:off[u+1]]
			slices.Sort(nb)
			w := 0
			for i, v := range nb {
				if i > 0 && v == nb[w-1] {
					continue
				}
				nb[w] = v
				w++
			}
			dups += int64(len(nb) - w)
			fill[u] = int64(w)
		}
		return dups
	})
	if dupHalves > 0 {
		// Close the gaps left by repeats.
		var w int64
		for u := 0; u < n; u++ {
			start := off[u]
			off[u] = w
			copy(adj[w:], adj[start:start+fill[u]])
			w += fill[u]
		}
		off[n] = w
		adj = slices.Clip(adj[:w])
	}
	st.DuplicatesMerged = dupHalves / 2
	if off[n] == 0 {
		return nil, nil, st, ErrEmpty
	}
	return off, adj, st, nil
}

// parallelNodes runs fn over node ranges [lo, hi) covering [0, n) on all
// cores (par.Run), ranges cut so each holds about the same number of entries
// of off, and returns the sum of fn's results.
func parallelNodes(n int, off []int64, fn func(lo, hi int) int64) int64 {
	workers := runtime.GOMAXPROCS(0)
	total := off[n]
	if workers == 1 || total < 1<<16 {
		return fn(0, n)
	}
	// Ranges of about total/(8*workers) entries, claimed in order.
	step := max(total/int64(8*workers), 1)
	var cuts []int
	for u, next := 0, step; u < n; {
		v, _ := slices.BinarySearch(off[u+1:n+1], next)
		v = min(v+u+1, n)
		cuts = append(cuts, v)
		u = v
		next = off[v] + step
	}
	var sum atomic.Int64
	par.Run(context.Background(), len(cuts), par.Options{Workers: workers}, noState, func(_ struct{}, i int) error {
		lo := 0
		if i > 0 {
			lo = cuts[i-1]
		}
		sum.Add(fn(lo, cuts[i]))
		return nil
	})
	return sum.Load()
}

// parallelEdges is the fewest edges for which buildCSR's passes run on
// all cores.
const parallelEdges = 1 << 20

// edgeCount is the number of edges in chunks.
func edgeCount(chunks [][]Edge) int {
	m := 0
	for _, c := range chunks {
		m += len(c)
	}
	return m
}

// byRange runs fn(w, lo, hi) for workers ranges [lo, hi) that cover [0, n)
// in order, on up to workers goroutines (par.Run); worker 0 has the first
// range.
func byRange(n, workers int, fn func(w, lo, hi int)) {
	if workers <= 1 {
		fn(0, 0, n)
		return
	}
	par.Run(context.Background(), workers, par.Options{Workers: workers, Chunk: 1}, noState, func(_ struct{}, w int) error {
		fn(w, n*w/workers, n*(w+1)/workers)
		return nil
	})
}

// noState is par.Run's per-worker state for loops that need none.
func noState(int) struct{} { return struct{}{} }

// FromCSR makes a graph of the given CSR arrays and labels (nil: labels are
// the decimal ids), which the graph then owns. It checks every invariant of
// Graph and returns an error, never panics, when one fails: off starts at 0,
// never decreases and ends at len(adj); every list is strictly increasing,
// in range and without self-loops; the adjacency is symmetric; labels, if
// given, number N and are distinct.
func FromCSR(off []int64, adj []int32, labels []string) (*Graph, error) {
	if len(off) < 2 {
		return nil, errors.New("graph: CSR with no nodes")
	}
	n := len(off) - 1
	if n > 1<<31-1 {
		return nil, fmt.Errorf("graph: %d nodes exceed the int32 id range", n)
	}
	if off[0] != 0 || off[n] != int64(len(adj)) {
		return nil, fmt.Errorf("graph: CSR offsets run from %d to %d for %d entries", off[0], off[n], len(adj))
	}
	for u := 0; u < n; u++ {
		if off[u+1] < off[u] {
			return nil, fmt.Errorf("graph: CSR offsets decrease at node %d", u)
		}
	}
	if labels != nil && len(labels) != n {
		return nil, fmt.Errorf("graph: %d labels for %d nodes", len(labels), n)
	}
	// One parallel pass over the lists checks each (strictly increasing, in
	// range, no self-loop) and sums the keyed pair hashes of the symmetry
	// check (see pairHash) at the same time, alongside the label index.
	// bad is the first node (lowest id) whose list breaks a rule, whichever
	// range finds one first, so the message does not depend on scheduling.
	var bad atomic.Int64
	bad.Store(int64(n))
	var index labelIndex
	var labelErr error
	key := rand.Uint64() | 1
	var diff atomic.Uint64 // sum over the pairs listed upwards minus downwards
	par.Run(context.Background(), 2, par.Options{}, noState, func(_ struct{}, i int) error {
		if i == 0 {
			index, labelErr = newLabelIndex(labels)
			return nil
		}
		parallelNodes(n, off, func(lo, hi int) int64 {
			d, u := checkLists(off, adj, lo, hi, key)
			if u < hi {
				for b := bad.Load(); int64(u) < b && !bad.CompareAndSwap(b, int64(u)); b = bad.Load() {
				}
				return 0
			}
			diff.Add(d)
			return 0
		})
		return nil
	})
	if u := bad.Load(); u < int64(n) {
		return nil, fmt.Errorf("graph: neighbour list of node %d is not strictly increasing within [0,%d) without self-loops", u, n)
	}
	if labelErr != nil {
		return nil, labelErr
	}
	if diff.Load() != 0 {
		u, _ := symmetric(off, adj)
		return nil, fmt.Errorf("graph: adjacency is not symmetric at node %d", u)
	}
	return &Graph{Off: off, Adj: adj, labels: labels, index: index}, nil
}

// The symmetry check. The lists hold no repeats, so the adjacency is
// symmetric exactly when the set of pairs {u, v} listed as v in N(u) with
// v > u equals the set listed with v < u. FromCSR compares, reading the
// arrays once in order on all cores, the sums of a keyed 64-bit hash over
// the two sets (as one sum, the first set's hashes minus the second's, 0
// modulo 2^64 exactly when the two sums are equal): equal sets always give
// equal sums; unequal sets give equal sums with probability about 2^-64 for
// a key drawn at random per call and differences that are not structured (a
// file cannot be crafted against a key it does not know). On a mismatch the
// sequential check (symmetric) names the node.
//
// Crafted differences can be structured, though: four asymmetric entries
// whose codes are x, x^a^b against x^a, x^b, for disjoint sets of bits a and
// b (a "parallelogram": the first two sum to the same integer as the last
// two, also after the xor with any key). For pairHash the sum of such a
// difference is below 2^32 in absolute value for about one key in 2^12 to
// 2^14 when a and b are near bit 30 or bit 62 (codes differing in the top
// bits of v or u), where a random sum would be for one key in 2^31; spread
// evenly there, it vanishes for about one key in 2^46 (measured over 2^24
// keys; three- and four-bit cubes of this kind did no worse). That is the
// weakest case found, and still out of reach: each try is a load with a fresh
// key. A cheaper hash, the 64x64->128 multiply folded (hi ^ lo of
// bits.Mul64(x^k1, k2)), is not safe: the multiply keeps the parallelogram
// (the 128-bit products' sums are equal), and the fold's differences are then
// so small that they vanish for about one random key in 2^16 (2^19 for the
// lowest bits of both u and v): four crafted entries would pass about once
// every 65,000 loads. TestPairHashStructuredDifferences checks both.

// pairHash mixes a pair's 64-bit code with key: the murmur3 finaliser of
// x xor key. (It used to multiply the result by the odd key as well; sums of
// those products are equal exactly when the sums without it are, an odd key
// being invertible modulo 2^64, so that multiply, one of three, is left out:
// the check accepts and rejects the same inputs for the same key.)
// checkList computes it inline, merging the xor by key into the forming of
// the code.
func pairHash(x, key uint64) uint64 { return fmix64(x ^ key) }

// fmix64 is the murmur3 64-bit finaliser, a bijection.
func fmix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// checkLists checks the lists of nodes [lo, hi) (strictly increasing, in
// [0, n) where n = len(off)-1, no self-loop) and returns the sum of
// pairHash over their pairs {u, v} listed as v in N(u) with v > u (code
// u<<32 | v) minus the sum over those listed with v < u (code v<<32 | u),
// and hi; or, at the first node whose list breaks a rule, 0 and that node.
// Off must be non-decreasing and within adj.
func checkLists(off []int64, adj []int32, lo, hi int, key uint64) (uint64, int) {
	n := int32(len(off) - 1)
	var d uint64
	for u := lo; u < hi; u++ {
		nb := adj[off[u]:off[u+1]]
		s, ok := checkList(nb, int32(u), key)
		if !ok || len(nb) > 0 && nb[len(nb)-1] >= n {
			return 0, u
		}
		d += s
	}
	return d, hi
}

// checkList is checkLists for one list nb = N(u), except for the bound n
// (nb's last entry, its largest, is compared by the caller). It reads the
// list in two loops, the entries below u and then those above, so the side
// of an entry costs no test of its own. It is a function of its own, not
// inlined, so that its loops keep everything in registers.
//
//go:noinline
func checkList(nb []int32, u int32, key uint64) (uint64, bool) {
	var d uint64
	prev := int32(-1)
	low := uint64(uint32(u)) ^ key // v<<32 | u, xor key = v<<32 ^ low
	i := 0
	for ; i < len(nb); i++ {
		v := nb[i]
		if v >= u {
			break
		}
		if v <= prev {
			return 0, false
		}
		prev = v
		d -= fmix64(uint64(uint32(v))<<32 ^ low)
	}
	nb = nb[i:]
	if len(nb) == 0 {
		return d, true
	}
	if nb[0] == u {
		return 0, false
	}
	high := uint64(uint32(u))<<32 ^ key // u<<32 | v, xor key = v ^ high
	for _, v := range nb {
		if v <= prev {
			return 0, false
		}
		prev = v
		d += fmix64(uint64(uint32(v)) ^ high)
	}
	return d, true
}

// symmetric checks that v is in N(u) exactly when u is in N(v), for a CSR
// whose lists are strictly increasing and in range, in O(entries): going
// through u in increasing order, the pairs (u, v) with v > u must meet the
// entries below v of N(v) in order. cur[v] is the next entry of N(v) to meet;
// it is allowed to run past N(v) (into the next list, where entries are never
// mistaken for a match that the check at v would not catch), which saves
// reading off[v+1] on every step. It returns the first node where this fails.
func symmetric(off []int64, adj []int32) (int32, bool) {
	n := len(off) - 1
	cur := make([]int64, n)
	copy(cur, off[:n])
	end := int64(len(adj))
	for u := 0; u < n; u++ {
		// Every entry of N(u) below u was met by an earlier node, and no
		// earlier node met more than N(u) holds.
		p := cur[u]
		if p > off[u+1] || p < off[u+1] && adj[p] < int32(u) {
			return int32(u), false
		}
		for _, v := range adj[off[u]:off[u+1]] {
			if v <= int32(u) {
				continue
			}
			p := cur[v]
			if p >= end || adj[p] != int32(u) {
				return int32(u), false
			}
			cur[v] = p + 1
		}
	}
	return 0, true
}
