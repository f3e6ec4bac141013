// Package line trains LINE node embeddings (Tang et al., "LINE: Large-scale
// Information Network Embedding", WWW 2015).
//
// First-order proximity models an edge (u, v) by sigma(x_u . x_v); second-order
// proximity models it by sigma(x_u . c_v) with a separate context table c.
// Both are trained by asynchronous SGD on arcs drawn from an alias table over
// the edges (each undirected edge contributes both directions, weight 1), with
// K negative targets per arc drawn from the degree^0.75 noise distribution and
// a learning rate decaying linearly from Rho0 (as LINE's reference code).
// The final embedding is the concatenation of the L2-normalised first-order
// and second-order vectors, as the paper recommends. Both orders are trained
// in one pass on the same sampled arcs and negatives (the reference trains
// them in two separate runs; the objectives share no parameters).
//
// By default training runs on one goroutine and the embedding is a
// deterministic function of the rng, for any GOMAXPROCS. Config.Hogwild opts
// in to LINE's reference parallelism: Workers goroutines update the shared
// float32 tables without locks, which is faster on several cores but not
// reproducible (and contains deliberate data races; -race builds always use
// one worker).
package line

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync/atomic"

	"github.com/dplp/dplp/embed"
	"github.com/dplp/dplp/embed/alias"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/internal/par"
)

// Order selects which proximities are trained.
type Order int

const (
	// Both trains first- and second-order proximity, Dim/2 each, and
	// concatenates them (the paper's recommended LINE(1st+2nd)).
	Both Order = iota
	// First trains first-order proximity only, with all Dim dimensions.
	First
	// Second trains second-order proximity only, with all Dim dimensions.
	Second
)

func (o Order) String() string {
	switch o {
	case Both:
		return "1st+2nd"
	case First:
		return "1st"
	case Second:
		return "2nd"
	}
	return fmt.Sprintf("Order(%d)", int(o))
}

// Config holds LINE's hyperparameters. Start from Defaults().
type Config struct {
	Dim       int     // total embedding dimension (Both: Dim/2 per order, Dim even)
	Order     Order   // proximities to train
	Negatives int     // negative targets per sampled arc
	Rho0      float64 // initial SGD learning rate, decayed linearly to Rho0*1e-4
	// Samples is the total number of arcs sampled. 0 means SamplesPerArc
	// times the number of arcs (2|E|), but at least MinSamples.
	Samples       int64
	SamplesPerArc int64
	MinSamples    int64
	// Hogwild opts in to lock-free parallel training with Workers
	// goroutines (0 means runtime.GOMAXPROCS(0)): faster, not reproducible.
	// Without it Workers is ignored and training is deterministic.
	Hogwild bool
	Workers int
}

// Defaults returns the paper's settings: dimension 80 split evenly over the
// two orders (the DPLP experiments use 80), 5 negatives, rho0 = 0.025.
//
// The sample budget is 100 arc samples per arc (so 200 per undirected edge),
// at least 10^6. LINE's paper uses a fixed 10^10 samples for graphs with
// millions of edges, i.e. a few hundred per edge; 100 per arc is in that range
// and is where link-prediction AUC on the DPLP datasets stops improving
// (see the package tests for measured numbers).
func Defaults() Config {
	return Config{
		Dim:           80,
		Order:         Both,
		Negatives:     5,
		Rho0:          0.025,
		SamplesPerArc: 100,
		MinSamples:    1_000_000,
	}
}

// TotalSamples is the sample budget Train uses for a graph with m undirected edges.
func (c Config) TotalSamples(m int64) int64 {
	if c.Samples > 0 {
		return c.Samples
	}
	s := c.SamplesPerArc * 2 * m
	if s < c.MinSamples {
		s = c.MinSamples
	}
	return s
}

func (c Config) validate() error {
	switch {
	case c.Dim <= 0:
		return fmt.Errorf("line: dimension %d must be positive", c.Dim)
	case c.Order == Both && (c.Dim%2 != 0 || c.Dim < 2):
		return fmt.Errorf("line: dimension %d must be even for order %v", c.Dim, c.Order)
	case c.Order < Both || c.Order > Second:
		return fmt.Errorf("line: unknown order %d", int(c.Order))
	case c.Negatives < 0:
		return fmt.Errorf("line: %d negatives", c.Negatives)
	case !(c.Rho0 > 0) || math.IsInf(c.Rho0, 0):
		return fmt.Errorf("line: learning rate %v must be positive and finite", c.Rho0)
	case c.Samples < 0 || c.SamplesPerArc < 0 || c.MinSamples < 0:
		return errors.New("line: negative sample budget")
	case c.Workers < 0:
		return fmt.Errorf("line: %d workers", c.Workers)
	}
	return nil
}

// Train learns a LINE embedding of g. Randomness comes only from rng (the
// initial vectors and one generator per worker are drawn from it). progress,
// if not nil, receives the number of arcs sampled so far and the total budget,
// from one goroutine, with done non-decreasing and ending at total.
// Cancelling ctx stops every worker within rhoEvery samples; Train then
// returns ctx.Err() and no embedding.
func Train(ctx context.Context, g *graph.Graph, cfg Config, rng *rand.Rand, progress func(done, total int)) (*embed.Embedding, error) {
	if g == nil || g.M() == 0 {
		return nil, errors.New("line: graph has no edges")
	}
	return train(ctx, g, nil, cfg, rng, progress)
}

// model holds the trained tables for one run.
type model struct {
	n, d   int       // nodes, dimension per order
	first  []float32 // first-order vertex vectors, n×d (nil if unused)
	second []float32 // second-order vertex vectors
	ctx    []float32 // second-order context vectors
}

// sampler draws arcs (u, v) and negative targets.
type sampler struct {
	arcs  *alias.Table // over arc indices into g.Adj
	src   []int32      // source node of each arc
	adj   []int32      // target node of each arc (g.Adj)
	noise *alias.Table // over nodes, weight degree^0.75
}

// newSampler builds the samplers. arcW (length len(g.Adj), may be nil for
// unit weights) weighs the arcs; the noise distribution uses weighted degrees
// as LINE does.
func newSampler(g *graph.Graph, arcW []float64) *sampler {
	na := len(g.Adj)
	w := arcW
	if w == nil {
		w = make([]float64, na)
		for i := range w {
			w[i] = 1
		}
	}
	src := make([]int32, na)
	deg := make([]float64, g.N())
	for u := 0; u < g.N(); u++ {
		for a := g.Off[u]; a < g.Off[u+1]; a++ {
			src[a] = int32(u)
			deg[u] += w[a]
		}
	}
	for u := range deg {
		deg[u] = math.Pow(deg[u], 0.75)
	}
	return &sampler{arcs: alias.New(w), src: src, adj: g.Adj, noise: alias.New(deg)}
}

func train(ctx context.Context, g *graph.Graph, arcW []float64, cfg Config, rng *rand.Rand, progress func(done, total int)) (*embed.Embedding, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if rng == nil {
		return nil, errors.New("line: nil random source")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := g.N()
	m := &model{n: n, d: cfg.Dim}
	if cfg.Order == Both {
		m.d = cfg.Dim / 2
	}
	// Vertex vectors start uniform in ±0.5/d, contexts at zero (reference code).
	initTab := func() []float32 {
		t := make([]float32, n*m.d)
		for i := range t {
			t[i] = float32((rng.Float64() - 0.5) / float64(m.d))
		}
		return t
	}
	if cfg.Order != Second {
		m.first = initTab()
	}
	if cfg.Order != First {
		m.second = initTab()
		m.ctx = make([]float32, n*m.d)
	}
	s := newSampler(g, arcW)
	total := cfg.TotalSamples(g.M())
	if total <= 0 {
		return nil, errors.New("line: sample budget is zero")
	}
	workers := 1 // deterministic by default
	if cfg.Hogwild {
		workers = cfg.Workers
		if workers == 0 {
			workers = runtime.GOMAXPROCS(0)
		}
	}
	if embed.RaceEnabled {
		workers = 1 // Hogwild races are deliberate; keep -race runs meaningful
	}
	if int64(workers) > total {
		workers = int(total)
	}
	// Generators and shares are fixed before the workers start, in worker
	// order; one worker (the default) makes training deterministic.
	shares := make([]int64, workers)
	rs := make([]*rand.Rand, workers)
	for w := range workers {
		shares[w] = total / int64(workers)
		if int64(w) < total%int64(workers) {
			shares[w]++
		}
		rs[w] = rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
	}
	var done atomic.Int64
	err := par.Team(ctx, workers, func(ctx context.Context, w int) error {
		var prog func(done, total int)
		if w == 0 {
			prog = progress
		}
		return m.worker(ctx, s, cfg, rs[w], shares[w], total, &done, prog)
	})
	if err == nil {
		err = ctx.Err() // cancelled after the last look
	}
	if err != nil {
		return nil, err
	}
	if progress != nil {
		progress(int(total), int(total))
	}
	return m.output(), nil
}

// rhoEvery is how many samples a worker takes between learning-rate updates
// (LINE uses 10^4); it bounds the contention on the shared counter.
const rhoEvery = 10_000

// worker takes share samples; it stops early with ctx's error when ctx is
// cancelled (looked at every rhoEvery samples).
func (m *model) worker(ctx context.Context, s *sampler, cfg Config, r *rand.Rand, share, total int64, done *atomic.Int64, progress func(done, total int)) error {
	d := m.d
	rho0 := float32(cfg.Rho0)
	minRho := rho0 * 1e-4
	rho := rho0
	targets := make([]int32, 1+cfg.Negatives)
	errv := make([]float32, d)
	var local int64
	for i := int64(0); i < share; i++ {
		if i%rhoEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
			if local > 0 {
				done.Add(local)
				local = 0
				if progress != nil {
					progress(int(done.Load()), int(total))
				}
			}
			rho = rho0 * float32(1-float64(done.Load())/float64(total+1))
			if rho < minRho {
				rho = minRho
			}
		}
		local++
		a := s.arcs.Sample(r)
		u := s.src[a]
		targets = append(targets[:0], s.adj[a])
		for k := 0; k < cfg.Negatives; k++ {
			// A node is never its own negative (its x_u . x_u term would
			// update the vector in place while it is being read).
			t := int32(s.noise.Sample(r))
			for try := 0; t == u && try < 16; try++ {
				t = int32(s.noise.Sample(r))
			}
			if t != u {
				targets = append(targets, t)
			}
		}
		if m.first != nil {
			step(m.first, m.first, d, u, targets, rho, errv)
		}
		if m.second != nil {
			step(m.second, m.ctx, d, u, targets, rho, errv)
		}
	}
	done.Add(local)
	return nil
}

// step is one SGD update of LINE's loss for source u:
//
//	L = -log sigma(x_u . y_t0) - sum_{k>=1} log sigma(-x_u . y_tk)
//
// with x rows of src and y rows of tgt (the same table for first order).
// Target rows move by -rho dL/dy immediately; the source row accumulates its
// gradient in errv and moves once at the end, as in the reference code, so
// for distinct targets the update is exactly -rho times the gradient at the
// starting point.
func step[F float32 | float64](src, tgt []F, d int, u int32, targets []int32, rho F, errv []F) {
	xu := src[int(u)*d : int(u)*d+d]
	clear(errv[:d])
	for k, t := range targets {
		yt := tgt[int(t)*d : int(t)*d+d]
		var x F
		for c, v := range xu {
			x += v * yt[c]
		}
		label := F(0)
		if k == 0 {
			label = 1
		}
		gr := (label - sigmoid(x)) * rho
		for c, v := range xu {
			errv[c] += gr * yt[c]
			yt[c] += gr * v
		}
	}
	for c := range xu {
		xu[c] += errv[c]
	}
}

func sigmoid[F float32 | float64](x F) F {
	return F(1 / (1 + math.Exp(-float64(x))))
}

// output concatenates the L2-normalised tables (first order first).
func (m *model) output() *embed.Embedding {
	tabs := make([][]float32, 0, 2)
	if m.first != nil {
		tabs = append(tabs, m.first)
	}
	if m.second != nil {
		tabs = append(tabs, m.second)
	}
	dim := m.d * len(tabs)
	e := embed.NewEmbedding(m.n, dim)
	for u := 0; u < m.n; u++ {
		row := e.Row(int32(u))
		for i, t := range tabs {
			x := t[u*m.d : (u+1)*m.d]
			var ss float64
			for _, v := range x {
				ss += float64(v) * float64(v)
			}
			inv := float32(1)
			if ss > 0 {
				inv = float32(1 / math.Sqrt(ss))
			}
			out := row[i*m.d : (i+1)*m.d]
			for c, v := range x {
				out[c] = v * inv
			}
		}
	}
	return e
}
