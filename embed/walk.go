package embed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/internal/par"
	"github.com/dplp/dplp/randx"
)

// Random streams derived from a run's seed (randx.Derive(seed, stream, ...)).
const (
	streamPerm  = 1 // per-round permutation of start nodes
	streamWalk  = 2 // per walk chunk
	streamTrain = 3 // per training chunk and epoch
	streamInit  = 4 // initial vectors
)

// walkChunk is the number of walks that share one derived generator. Chunks,
// not workers, own generators, so walks do not depend on the worker count or
// GOMAXPROCS.
const walkChunk = 64

// noState is par.Run's per-worker state for loops that need none.
func noState(int) struct{} { return struct{}{} }

// walkFunc writes one walk starting at start into out (len(out) = walk
// length) and returns how many nodes it wrote.
type walkFunc func(start int32, r *rand.Rand, out []int32) int

// runWalks generates cfg.WalksPerNode rounds of walks. Round r starts one walk
// at every node, in an order given by a seeded permutation (as Node2Vec
// shuffles nodes per round), so walk j = r*n + i starts at perm_r[i].
// Cancelling ctx stops it between chunks of walkChunk walks with ctx.Err().
func runWalks(ctx context.Context, n int, cfg WalkConfig, workers int, seed uint64, gen walkFunc, pm *progressMeter) ([][]int32, error) {
	total := n * cfg.WalksPerNode
	L := cfg.WalkLength
	starts := make([]int32, total)
	for r := 0; r < cfg.WalksPerNode; r++ {
		perm := starts[r*n : (r+1)*n]
		for i := range perm {
			perm[i] = int32(i)
		}
		rr := randx.Derive(seed, streamPerm, uint64(r))
		rr.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	}
	flat := make([]int32, total*L)
	walks := make([][]int32, total)
	chunks := (total + walkChunk - 1) / walkChunk
	err := par.Run(ctx, chunks, par.Options{Workers: workers}, noState, func(_ struct{}, c int) error {
		r := randx.Derive(seed, streamWalk, uint64(c))
		lo, hi := c*walkChunk, min((c+1)*walkChunk, total)
		for j := lo; j < hi; j++ {
			out := flat[j*L : (j+1)*L : (j+1)*L]
			walks[j] = out[:gen(starts[j], r, out)]
		}
		pm.add((hi - lo) * L)
		return nil
	})
	if err == nil {
		err = ctx.Err() // cancelled while the last chunks ran
	}
	if err != nil {
		return nil, err
	}
	return walks, nil
}

// UniformWalks returns DeepWalk's walks: cfg.WalksPerNode rounds of uniform
// random walks of cfg.WalkLength nodes from every node. A walk from an
// isolated node has length 1. workers <= 0 means GOMAXPROCS; the result
// depends only on rng's state, not on workers. Cancelling ctx stops the
// walks between chunks; UniformWalks then returns ctx.Err() and no walks.
func UniformWalks(ctx context.Context, g *graph.Graph, cfg WalkConfig, workers int, rng *rand.Rand) ([][]int32, error) {
	if err := checkGraph(g); err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if rng == nil {
		return nil, errNilRand
	}
	return runWalks(ctx, g.N(), cfg, workerCount(workers), rng.Uint64(), uniformWalker(g), nil)
}

// Node2VecWalks returns Node2Vec's second-order walks with return parameter p
// and in-out parameter q (Grover & Leskovec 2016): after stepping t -> v the
// walk moves to x in N(v) with probability proportional to 1/p if x = t, 1 if
// x is adjacent to t, and 1/q otherwise. The first step is uniform.
//
// Steps are drawn by exact rejection sampling (KnightKing, Yang et al. 2019)
// instead of per-edge alias tables, which would need sum_v deg(v)^2 entries
// (about 20M on Facebook). See n2vWalker.step. ctx is as for UniformWalks.
func Node2VecWalks(ctx context.Context, g *graph.Graph, p, q float64, cfg WalkConfig, workers int, rng *rand.Rand) ([][]int32, error) {
	if err := checkGraph(g); err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := checkPQ(p, q); err != nil {
		return nil, err
	}
	if rng == nil {
		return nil, errNilRand
	}
	return runWalks(ctx, g.N(), cfg, workerCount(workers), rng.Uint64(), node2vecWalker(g, p, q), nil)
}

func checkGraph(g *graph.Graph) error {
	if g == nil || g.N() == 0 {
		return errors.New("embed: empty graph")
	}
	if g.N() > math.MaxInt32 {
		return fmt.Errorf("embed: %d nodes exceed the int32 id range", g.N())
	}
	return nil
}

func checkPQ(p, q float64) error {
	if !(p > 0) || math.IsInf(p, 0) || !(q > 0) || math.IsInf(q, 0) {
		return fmt.Errorf("embed: node2vec p=%v, q=%v must be positive and finite", p, q)
	}
	return nil
}

func uniformWalker(g *graph.Graph) walkFunc {
	return func(start int32, r *rand.Rand, out []int32) int {
		out[0] = start
		cur := start
		for k := 1; k < len(out); k++ {
			nb := g.Neighbors(cur)
			if len(nb) == 0 {
				return k
			}
			cur = nb[r.IntN(len(nb))]
			out[k] = cur
		}
		return len(out)
	}
}

func node2vecWalker(g *graph.Graph, p, q float64) walkFunc {
	if p == 1 && q == 1 {
		return uniformWalker(g)
	}
	nw := newN2VWalker(g, p, q)
	return func(start int32, r *rand.Rand, out []int32) int {
		out[0] = start
		if len(out) == 1 {
			return 1
		}
		nb := g.Neighbors(start)
		if len(nb) == 0 {
			return 1
		}
		prev, cur := start, nb[r.IntN(len(nb))]
		out[1] = cur
		for k := 2; k < len(out); k++ {
			prev, cur = cur, nw.step(prev, cur, r)
			out[k] = cur
		}
		return len(out)
	}
}

// n2vWalker draws second-order Node2Vec steps by rejection from an envelope.
// Unnormalised weights of x in N(v) after t -> v: 1/p (x = t), 1 (x ~ t),
// 1/q (otherwise). Every x gets a bar of height h = max(1, 1/q) >= all
// non-return weights; if 1/p > h, the return edge gets an extra "appendix"
// of area 1/p - h (KnightKing's outlier folding), so the envelope never has
// to be as tall as 1/p. A point uniform in the total area is accepted when
// it lies under the target weight, which makes the draw exact. The expected
// number of trials is area / sum of weights <= max(1,1/q)/min(1,1/q) (plus
// the return appendix), and points below min(1,1/q) are accepted without
// the adjacency test.
type n2vWalker struct {
	g        *graph.Graph
	h        float64 // envelope height
	lo       float64 // lowest non-return weight: accept without looking up t~x
	invQ     float64
	retIn    float64 // part of the return weight inside the envelope: min(1/p, h)
	appendix float64 // part above it: max(0, 1/p - h)
}

func newN2VWalker(g *graph.Graph, p, q float64) *n2vWalker {
	invP, invQ := 1/p, 1/q
	h := max(1, invQ)
	return &n2vWalker{g: g, h: h, lo: min(1, invQ), invQ: invQ, retIn: min(invP, h), appendix: max(0, invP-h)}
}

// step returns the node after t -> v (v must have t as a neighbour).
func (w *n2vWalker) step(t, v int32, r *rand.Rand) int32 {
	nb := w.g.Neighbors(v)
	bars := float64(len(nb)) * w.h
	area := bars + w.appendix
	for {
		y := r.Float64() * area
		if y >= bars {
			return t // appendix belongs to the return edge
		}
		i := int(y / w.h)
		if i >= len(nb) {
			i = len(nb) - 1
		}
		// The position inside the bar is uniform on [0, h) and independent of
		// i, so it serves as the acceptance variate.
		u := y - float64(i)*w.h
		x := nb[i]
		if x == t {
			if u < w.retIn {
				return t
			}
			continue
		}
		if u < w.lo {
			return x
		}
		wx := w.invQ
		if w.g.HasEdge(t, x) {
			wx = 1
		}
		if u < wx {
			return x
		}
	}
}
