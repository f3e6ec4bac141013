package embed

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dplp/dplp/embed/alias"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/internal/par"
)

// Struc2Vec embeds g so that nodes with similar neighbourhood structure (not
// nearby nodes) get similar vectors (Ribeiro, Saverese & Figueiredo, KDD 2017).
//
// Structural distance between u and v at layer k (rings R_j(u) = nodes at
// hop distance exactly j):
//
//	f_k(u,v) = f_{k-1}(u,v) + DTW(s(R_k(u)), s(R_k(v))),  f_{-1} = 0,
//
// where s(R) is the sorted degree sequence of a ring, defined while both
// rings are non-empty and k < Layers. As in the paper's OPT1 the sequences
// are compressed to (degree, count) runs with DTW cost
// (max(a,b)/min(a,b) - 1) * max(count_a, count_b), and the DTW is exact.
// (Degree 0 only occurs for isolated nodes; d(0,0) = 0 and d(0,b) = 2b, the
// value of the reference code's +0.5 smoothing.) As in OPT2 only pairs where
// one node is among the other's cfg.Candidates nearest nodes in degree
// order are compared; those pairs (symmetrised) are the edges of every layer.
//
// Layer k has edge weights exp(-f_k(u,v)). A walk starts at layer 0; at each
// step it moves inside the current layer with probability StayProb
// (transition ∝ exp(-f_k)), otherwise it changes layer: up with weight
// log(Γ_k(u) + e), down with weight 1, where Γ_k(u) counts u's layer-k edges
// heavier than the mean edge weight of layer k. Directions that do not exist
// (below layer 0, above the last layer holding u) are dropped and the rest
// renormalised; the node is appended only on in-layer moves. The walks train
// skip-gram as in DeepWalk. progress (may be nil) counts compared pairs,
// then walk and training tokens. Cancelling ctx stops the run between nodes
// (ring sequences, distances), chunks of walks or training chunks; Struc2Vec
// then returns ctx.Err() and no embedding.
func Struc2Vec(ctx context.Context, g *graph.Graph, cfg Struc2VecConfig, rng *rand.Rand, progress func(done, total int)) (*Embedding, error) {
	if err := checkAll(g, cfg.Walk, cfg.SkipGram, rng); err != nil {
		return nil, err
	}
	if g.N() < 2 {
		return nil, errors.New("embed: struc2vec needs at least 2 nodes")
	}
	if cfg.Layers < 1 {
		return nil, fmt.Errorf("embed: struc2vec layers %d < 1", cfg.Layers)
	}
	if !(cfg.StayProb > 0 && cfg.StayProb <= 1) {
		return nil, fmt.Errorf("embed: struc2vec stay probability %v outside (0,1]", cfg.StayProb)
	}
	if cfg.Candidates < 0 {
		return nil, fmt.Errorf("embed: struc2vec candidates %d < 0", cfg.Candidates)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	seed := rng.Uint64()
	workers := cfg.SkipGram.workers()
	n := g.N()
	cand := cfg.Candidates
	if cand == 0 {
		cand = 2 * int(math.Ceil(math.Log2(float64(n))))
	}
	cand = min(cand, n-1)
	pairs := candidatePairs(g, cand)
	nominal := n * cfg.Walk.WalksPerNode * cfg.Walk.WalkLength
	pm := newProgress(progress, len(pairs.v)/2+nominal*(1+cfg.SkipGram.Epochs))

	seqs, err := ringSequences(ctx, g, cfg.Layers, workers)
	if err != nil {
		return nil, err
	}
	dist, err := structuralDistances(ctx, seqs, pairs, cfg.Layers, workers, pm)
	if err != nil {
		return nil, err
	}
	ml := buildLayers(pairs, dist, cfg.Layers)
	walks, err := runWalks(ctx, n, cfg.Walk, workers, seed, ml.walker(cfg.StayProb), pm)
	if err != nil {
		return nil, err
	}
	tokens := 0
	for _, w := range walks {
		tokens += len(w)
	}
	return trainSkipGram(ctx, n, walks, tokens, cfg.SkipGram, seed, pm)
}

// degRun is a run of equal degrees in a sorted degree sequence (OPT1).
// Stored as floats because the DTW inner loop only does float arithmetic.
type degRun struct{ deg, count float64 }

// ringSequences returns, for every node u, the compressed sorted degree
// sequences of its rings R_0(u) = {u}, R_1(u), ... up to R_{layers-1}(u),
// stopping at the first empty ring. A cancelled ctx stops it between nodes
// with ctx.Err().
func ringSequences(ctx context.Context, g *graph.Graph, layers, workers int) ([][][]degRun, error) {
	n := g.N()
	out := make([][][]degRun, n)
	type scratch struct {
		mark            []int32 // mark[x] = u+1 when x was reached from u
		ring, nxt, degs []int32
	}
	newScratch := func(int) *scratch { return &scratch{mark: make([]int32, n)} }
	err := par.Run(ctx, n, par.Options{Workers: workers}, newScratch, func(sc *scratch, node int) error {
		u := int32(node)
		mark := sc.mark
		ring, nxt, degs := append(sc.ring[:0], u), sc.nxt, sc.degs
		mark[u] = u + 1
		var rs [][]degRun
		for k := 0; k < layers && len(ring) > 0; k++ {
			degs = degs[:0]
			for _, x := range ring {
				degs = append(degs, int32(g.Degree(x)))
			}
			slices.Sort(degs)
			var runs []degRun
			for _, d := range degs {
				if l := len(runs); l > 0 && runs[l-1].deg == float64(d) {
					runs[l-1].count++
				} else {
					runs = append(runs, degRun{float64(d), 1})
				}
			}
			rs = append(rs, slices.Clip(runs))
			if k+1 == layers {
				break
			}
			nxt = nxt[:0]
			for _, x := range ring {
				for _, y := range g.Neighbors(x) {
					if mark[y] != u+1 {
						mark[y] = u + 1
						nxt = append(nxt, y)
					}
				}
			}
			ring, nxt = nxt, ring
		}
		sc.ring, sc.nxt, sc.degs = ring, nxt, degs
		out[u] = rs
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// degCost is the OPT1 DTW cost between two degree runs.
func degCost(a, b degRun) float64 {
	// Plain comparisons instead of the builtin min/max (NaN handling).
	lo, hi := a.deg, b.deg
	if lo > hi {
		lo, hi = hi, lo
	}
	c := a.count
	if b.count > c {
		c = b.count
	}
	if lo > 0 {
		return (hi/lo - 1) * c
	}
	return 2 * hi * c
}

// dtw is the exact dynamic time warping distance between run sequences a
// and b (both non-empty) under degCost, using row as scratch (len >= len(b)).
func dtw(a, b []degRun, row []float64) float64 {
	m := len(b)
	row = row[:m]
	// First row: only horizontal moves.
	acc := 0.0
	for j := range m {
		acc += degCost(a[0], b[j])
		row[j] = acc
	}
	for i := 1; i < len(a); i++ {
		diag := row[0]
		row[0] += degCost(a[i], b[0])
		ai := a[i]
		left := row[0]
		for j := 1; j < m; j++ {
			up := row[j]
			// Plain comparisons: the builtin min's NaN handling is slower,
			// and costs are never NaN.
			best := diag
			if up < best {
				best = up
			}
			if left < best {
				best = left
			}
			left = best + degCost(ai, b[j])
			row[j] = left
			diag = up
		}
	}
	return row[m-1]
}

// pairGraph is the symmetric candidate graph of OPT2 in CSR form.
type pairGraph struct {
	off []int64
	v   []int32
}

func (p *pairGraph) of(u int32) []int32 { return p.v[p.off[u]:p.off[u+1]] }

// candidatePairs links every node to the c nodes closest to it in degree
// (ties broken by position in the (degree, id) order), then symmetrises.
func candidatePairs(g *graph.Graph, c int) *pairGraph {
	n := g.N()
	order := make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	deg := func(u int32) int { return g.Degree(u) }
	slices.SortFunc(order, func(a, b int32) int {
		return cmp.Or(cmp.Compare(deg(a), deg(b)), cmp.Compare(a, b))
	})
	var es []graph.Edge
	for i, u := range order {
		lo, hi := i-1, i+1 // next candidates on each side
		for range c {
			takeLo := false
			switch {
			case lo < 0:
			case hi >= n:
				takeLo = true
			default:
				takeLo = deg(u)-deg(order[lo]) <= deg(order[hi])-deg(u)
			}
			var v int32
			if takeLo {
				v, lo = order[lo], lo-1
			} else {
				v, hi = order[hi], hi+1
			}
			es = append(es, graph.Edge{U: min(u, v), V: max(u, v)})
		}
	}
	slices.SortFunc(es, func(a, b graph.Edge) int { return cmp.Or(cmp.Compare(a.U, b.U), cmp.Compare(a.V, b.V)) })
	es = slices.Compact(es)
	cnt := make([]int64, n+1)
	for _, e := range es {
		cnt[e.U+1]++
		cnt[e.V+1]++
	}
	for i := 1; i <= n; i++ {
		cnt[i] += cnt[i-1]
	}
	p := &pairGraph{off: cnt, v: make([]int32, 2*len(es))}
	fill := slices.Clone(cnt[:n])
	for _, e := range es { // es sorted by (U, V) keeps every list sorted
		p.v[fill[e.U]] = e.V
		fill[e.U]++
		p.v[fill[e.V]] = e.U
		fill[e.V]++
	}
	return p
}

// structuralDistances returns, for each directed candidate slot p.v[i] of
// node u, the distances f_0..f_{K-1}(u, v) for the layers where both rings
// exist (dist[i]; shared between the two directions of a pair). A cancelled
// ctx stops it between nodes with ctx.Err().
func structuralDistances(ctx context.Context, seqs [][][]degRun, p *pairGraph, layers, workers int, pm *progressMeter) ([][]float64, error) {
	n := len(seqs)
	dist := make([][]float64, len(p.v))
	err := par.Run(ctx, n, par.Options{Workers: workers}, func(int) *[]float64 { return new([]float64) }, func(row *[]float64, node int) error {
		u := int32(node)
		done := 0
		for i := p.off[u]; i < p.off[u+1]; i++ {
			v := p.v[i]
			if v < u {
				continue
			}
			su, sv := seqs[u], seqs[v]
			L := min(len(su), len(sv), layers)
			f := make([]float64, L)
			acc := 0.0
			for k := range L {
				if len(*row) < len(sv[k]) {
					*row = make([]float64, 2*len(sv[k]))
				}
				acc += dtw(su[k], sv[k], *row)
				f[k] = acc
			}
			dist[i] = f
			// The reverse slot belongs to v, which only reads it
			// after par.Run returns.
			j, _ := slices.BinarySearch(p.of(v), u)
			dist[p.off[v]+int64(j)] = f
			done++
		}
		pm.add(done)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return dist, nil
}

// multiLayer holds the struc2vec layer graphs: for layer k, node u's
// neighbours are the candidates v with at least k+1 common layers.
type multiLayer struct {
	layers int
	nbr    [][][]int32      // nbr[k][u]
	alias  [][]*alias.Table // alias[k][u] over nbr[k][u], weights exp(-f_k)
	up     [][]float64      // up[k][u] = log(Γ_k(u) + e)
}

func buildLayers(p *pairGraph, dist [][]float64, layers int) *multiLayer {
	n := len(p.off) - 1
	ml := &multiLayer{layers: layers, nbr: make([][][]int32, layers), alias: make([][]*alias.Table, layers), up: make([][]float64, layers)}
	var ws, wrel []float64
	for k := range layers {
		// Mean edge weight of layer k, each undirected edge once.
		var sum float64
		var cnt int
		for u := range n {
			for i := p.off[u]; i < p.off[u+1]; i++ {
				if p.v[i] > int32(u) && len(dist[i]) > k {
					sum += math.Exp(-dist[i][k])
					cnt++
				}
			}
		}
		if cnt == 0 {
			ml.layers = k
			break
		}
		mean := sum / float64(cnt)
		ml.nbr[k] = make([][]int32, n)
		ml.alias[k] = make([]*alias.Table, n)
		ml.up[k] = make([]float64, n)
		for u := range n {
			var vs []int32
			ws, wrel = ws[:0], wrel[:0]
			fmin := math.Inf(1)
			for i := p.off[u]; i < p.off[u+1]; i++ {
				if len(dist[i]) > k {
					vs = append(vs, p.v[i])
					ws = append(ws, dist[i][k])
					fmin = min(fmin, dist[i][k])
				}
			}
			if len(vs) == 0 {
				continue
			}
			gamma := 0
			for _, f := range ws {
				if math.Exp(-f) > mean {
					gamma++
				}
				// Shifting by the node's smallest distance leaves the
				// normalised transition unchanged and avoids underflow.
				wrel = append(wrel, math.Exp(-(f - fmin)))
			}
			ml.nbr[k][u] = vs
			ml.alias[k][u] = alias.New(wrel)
			ml.up[k][u] = math.Log(float64(gamma) + math.E)
		}
	}
	return ml
}

func (ml *multiLayer) has(k int, u int32) bool {
	return k >= 0 && k < ml.layers && ml.nbr[k][u] != nil
}

func (ml *multiLayer) walker(stay float64) walkFunc {
	return func(start int32, r *rand.Rand, out []int32) int {
		out[0] = start
		u, k := start, 0
		for s := 1; s < len(out); {
			canUp, canDown := ml.has(k+1, u), k > 0
			if (canUp || canDown) && r.Float64() >= stay {
				switch {
				case canUp && canDown:
					x := ml.up[k][u]
					if r.Float64()*(x+1) < x {
						k++
					} else {
						k--
					}
				case canUp:
					k++
				default:
					k--
				}
				continue
			}
			u = ml.nbr[k][u][ml.alias[k][u].Sample(r)]
			out[s] = u
			s++
		}
		return len(out)
	}
}
