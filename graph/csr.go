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
	deg := make([]int64, n+1)
	for _, edges := range chunks {
		for _, e := range edges {
			if e.U < 0 || e.V < 0 || int(e.U) >= n || int(e.V) >= n {
				return nil, nil, st, fmt.Errorf("graph: edge (%d,%d) out of range [0,%d)", e.U, e.V, n)
			}
			if e.U == e.V {
				st.SelfLoopsDropped++
				continue
			}
			deg[e.U+1]++
			deg[e.V+1]++
		}
	}
	for i := 1; i <= n; i++ {
		deg[i] += deg[i-1]
	}
	adj := make([]int32, deg[n])
	fill := make([]int64, n)
	copy(fill, deg[:n])
	for _, edges := range chunks {
		for _, e := range edges {
			if e.U == e.V {
				continue
			}
			adj[fill[e.U]] = e.V
			fill[e.U]++
			adj[fill[e.V]] = e.U
			fill[e.V]++
		}
	}
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
	// check (symmetricCheck) at the same time, alongside the label index.
	// bad is the first node (lowest id) whose list breaks a rule, whichever
	// range finds one first, so the message does not depend on scheduling.
	var bad atomic.Int64
	bad.Store(int64(n))
	var index labelIndex
	var labelErr error
	key := rand.Uint64() | 1
	var up, down atomic.Uint64
	par.Run(context.Background(), 2, par.Options{}, noState, func(_ struct{}, i int) error {
		if i == 0 {
			index, labelErr = newLabelIndex(labels)
			return nil
		}
		parallelNodes(n, off, func(lo, hi int) int64 {
			var a, b uint64
			for u := lo; u < hi; u++ {
				prev := int32(-1)
				for _, v := range adj[off[u]:off[u+1]] {
					if v <= prev || v >= int32(n) || v == int32(u) {
						for b := bad.Load(); int64(u) < b && !bad.CompareAndSwap(b, int64(u)); b = bad.Load() {
						}
						return 0
					}
					prev = v
					if v > int32(u) {
						a += pairHash(uint64(u)<<32|uint64(v), key)
					} else {
						b += pairHash(uint64(v)<<32|uint64(u), key)
					}
				}
			}
			up.Add(a)
			down.Add(b)
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
	if up.Load() != down.Load() {
		u, _ := symmetric(off, adj)
		return nil, fmt.Errorf("graph: adjacency is not symmetric at node %d", u)
	}
	return &Graph{Off: off, Adj: adj, labels: labels, index: index}, nil
}

// The symmetry check. The lists hold no repeats, so the adjacency is
// symmetric exactly when the set of pairs {u, v} listed as v in N(u) with
// v > u equals the set listed with v < u. FromCSR compares, reading the
// arrays once in order on all cores, the sums of a keyed 64-bit hash over
// the two sets: equal sets always give equal sums; unequal sets give equal
// sums with probability about 2^-64 for a key drawn at random per call (a
// file cannot be crafted against a key it does not know). On a mismatch the
// sequential check (symmetric) names the node.

// pairHash mixes a pair's 64-bit code with key (the murmur3 finaliser of
// x xor key, multiplied by the odd key again): a keyed function whose sums
// over different sets collide with negligible probability for random keys.
func pairHash(x, key uint64) uint64 {
	x ^= key
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x * key
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
