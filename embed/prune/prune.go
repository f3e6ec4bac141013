// Package prune trains PRUNE node embeddings (Lai, Hsu, Chen, Feng & Lin,
// "PRUNE: Preserving Proximity and Global Ranking for Network Embedding",
// NIPS 2017), following the authors' reference implementation.
//
// Every node u has a free embedding e_u. A Siamese network maps it, with
// weights shared by all nodes, to
//
//	ranking score  pi_u = numeric.Softplus(w_or . elu(W_hr e_u + b_hr) + b_or)
//	proximity rep  z_u  = relu(W_op elu(W_hp e_u + b_hp) + b_op)
//
// and for every arc (u, v) of the graph (both directions of each undirected
// edge) the loss is
//
//	(z_v^T relu(W) z_u - PMI(u, v))^2 + lambda * deg(v) * (pi_u/deg(u) - pi_v/deg(v))^2
//
// with PMI(u, v) = max(0, log(|arcs| / (alpha deg(u) deg(v)))) (alpha = 5
// effective negative samples) and W a shared latent-by-latent matrix
// initialised near the identity. The first term preserves proximity (it is
// a factorisation of the shifted PMI matrix), the second a PageRank-like
// global ranking. Losses are averaged over mini-batches of arcs and
// minimised by Adam; the returned embedding is e.
//
// Forward and backward passes are written out by hand (the package test
// checks them against finite differences). Mini-batch matrix products use
// gonum's BLAS. The result is a deterministic function of the graph, the
// Config and the rng.
package prune

import (
	"context"
	"errors"
	"fmt"
	"github.com/dplp/dplp/internal/numeric"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/dplp/dplp/embed"
	"github.com/dplp/dplp/graph"
)

// Config holds PRUNE's hyperparameters. Start from Defaults().
type Config struct {
	Dim    int     // node embedding dimension (n_emb)
	Hidden int     // width of the hidden layer of both branches
	Latent int     // proximity representation dimension
	Lambda float64 // weight of the global-ranking term
	Alpha  float64 // effective negative samples in the PMI shift
	LR     float64 // Adam learning rate
	Epochs int
	Batch  int // arcs per mini-batch
}

// Defaults returns the settings of the DPLP paper's appendix (lambda 0.01,
// dimension 80, lr 1e-4, 50 epochs, batch 300) and the reference code's
// fixed sizes (hidden 128, latent 64, alpha 5).
func Defaults() Config {
	return Config{Dim: 80, Hidden: 128, Latent: 64, Lambda: 0.01, Alpha: 5, LR: 1e-4, Epochs: 50, Batch: 300}
}

func finitePos(x float64) bool { return x > 0 && !math.IsInf(x, 0) }

func (c Config) validate() error {
	switch {
	case c.Dim <= 0 || c.Hidden <= 0 || c.Latent <= 0:
		return fmt.Errorf("prune: sizes %d, %d, %d must be positive", c.Dim, c.Hidden, c.Latent)
	case !(c.Lambda >= 0) || math.IsInf(c.Lambda, 0):
		return fmt.Errorf("prune: lambda %v must be non-negative and finite", c.Lambda)
	case !finitePos(c.Alpha):
		return fmt.Errorf("prune: alpha %v must be positive and finite", c.Alpha)
	case !finitePos(c.LR):
		return fmt.Errorf("prune: learning rate %v must be positive and finite", c.LR)
	case c.Epochs < 0:
		return fmt.Errorf("prune: %d epochs", c.Epochs)
	case c.Batch <= 0:
		return fmt.Errorf("prune: batch size %d must be positive", c.Batch)
	}
	return nil
}

// Train learns PRUNE embeddings of g. Each epoch visits every arc once in an
// order drawn from rng; the last, partial mini-batch is kept (the reference
// drops it, which would skip training entirely on graphs with fewer arcs
// than a batch). progress, if not nil, receives the number of finished
// epochs and the total after each epoch. Cancelling ctx stops training
// between mini-batches; Train then returns ctx.Err() and no embedding.
func Train(ctx context.Context, g *graph.Graph, cfg Config, rng *rand.Rand, progress func(done, total int)) (*embed.Embedding, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if g == nil || g.M() == 0 {
		return nil, errors.New("prune: graph has no edges")
	}
	if rng == nil {
		return nil, errors.New("prune: nil random source")
	}
	m, _, err := fit(ctx, g, cfg, rng, progress)
	if err != nil {
		return nil, err
	}
	e := embed.NewEmbedding(g.N(), cfg.Dim)
	for i, v := range m.emb {
		e.Vec[i] = float32(v)
	}
	return e, nil
}

// fit trains the model on valid inputs; a cancelled ctx stops it between
// mini-batches with ctx.Err().
func fit(ctx context.Context, g *graph.Graph, cfg Config, rng *rand.Rand, progress func(done, total int)) (*model, *arcs, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	arcs := newArcs(g, cfg.Alpha)
	m := newModel(g.N(), cfg, rng)
	opt := numeric.NewAdam(m.params(), cfg.LR, nil, true)
	b := newBatch(cfg, min(cfg.Batch, len(arcs.head)))
	perm := make([]int32, len(arcs.head))
	for i := range perm {
		perm[i] = int32(i)
	}
	for ep := 0; ep < cfg.Epochs; ep++ {
		rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		for lo := 0; lo < len(perm); lo += cfg.Batch {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			b.load(arcs, perm[lo:min(lo+cfg.Batch, len(perm))])
			m.zeroGrad()
			m.forwardBackward(b)
			opt.Step(m.params(), m.grads())
		}
		if progress != nil {
			progress(ep+1, cfg.Epochs)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err // cancelled during the last report
	}
	return m, arcs, nil
}

// arcs lists every arc with its endpoint degrees and PMI target.
type arcs struct {
	head, tail []int32
	outDeg     []float64 // degree of the head
	inDeg      []float64 // degree of the tail
	pmi        []float64
}

func newArcs(g *graph.Graph, alpha float64) *arcs {
	na := len(g.Adj)
	a := &arcs{head: make([]int32, na), tail: make([]int32, na), outDeg: make([]float64, na), inDeg: make([]float64, na), pmi: make([]float64, na)}
	for u := 0; u < g.N(); u++ {
		for i := g.Off[u]; i < g.Off[u+1]; i++ {
			v := g.Adj[i]
			du, dv := float64(g.Degree(int32(u))), float64(g.Degree(v))
			a.head[i], a.tail[i] = int32(u), v
			a.outDeg[i], a.inDeg[i] = du, dv
			a.pmi[i] = max(0, math.Log(float64(na)/alpha/du/dv))
		}
	}
	return a
}

// model holds parameters and their gradients.
type model struct {
	d, hid, lat int
	lambda      float64

	emb []float64 // n×d node embeddings
	// Both branches' hidden layers share one product: wh = [W_hr | W_hp] (d × 2hid).
	wh, bh   []float64
	wor, bor []float64 // hid (rank output weights), 1
	wop, bop []float64 // hid×lat, lat
	ws       []float64 // lat×lat shared proximity matrix (used through relu)

	dEmb, dWh, dBh, dWor, dBor, dWop, dBop, dWs []float64
}

func newModel(n int, cfg Config, rng *rand.Rand) *model {
	d, h, l := cfg.Dim, cfg.Hidden, cfg.Latent
	m := &model{d: d, hid: h, lat: l, lambda: cfg.Lambda}
	// Xavier-uniform, as the reference's variable-scope initialiser; biases
	// start at zero (the reference draws them from Xavier too, which only
	// adds noise).
	xavier := func(rows, cols int) []float64 {
		lim := math.Sqrt(6 / float64(rows+cols))
		w := make([]float64, rows*cols)
		for i := range w {
			w[i] = (2*rng.Float64() - 1) * lim
		}
		return w
	}
	m.emb = xavier(n, d)
	// The two hidden-layer blocks are initialised as separate d×h matrices.
	whr, whp := xavier(d, h), xavier(d, h)
	m.wh = make([]float64, d*2*h)
	for i := 0; i < d; i++ {
		copy(m.wh[i*2*h:], whr[i*h:(i+1)*h])
		copy(m.wh[i*2*h+h:], whp[i*h:(i+1)*h])
	}
	m.bh = make([]float64, 2*h)
	m.wor, m.bor = xavier(h, 1), make([]float64, 1)
	m.wop, m.bop = xavier(h, l), make([]float64, l)
	m.ws = make([]float64, l*l)
	for i := 0; i < l; i++ {
		for j := 0; j < l; j++ {
			m.ws[i*l+j] = math.Abs(rng.NormFloat64()) / 1000
		}
		m.ws[i*l+i]++
	}
	m.dEmb, m.dWh, m.dBh = make([]float64, len(m.emb)), make([]float64, len(m.wh)), make([]float64, len(m.bh))
	m.dWor, m.dBor = make([]float64, len(m.wor)), make([]float64, 1)
	m.dWop, m.dBop = make([]float64, len(m.wop)), make([]float64, len(m.bop))
	m.dWs = make([]float64, len(m.ws))
	return m
}

func (m *model) params() [][]float64 {
	return [][]float64{m.emb, m.wh, m.bh, m.wor, m.bor, m.wop, m.bop, m.ws}
}

func (m *model) grads() [][]float64 {
	return [][]float64{m.dEmb, m.dWh, m.dBh, m.dWor, m.dBor, m.dWop, m.dBop, m.dWs}
}

func (m *model) zeroGrad() {
	for _, g := range m.grads() {
		clear(g)
	}
}

// batch holds one mini-batch: inputs and activations. Rows 0..B-1 are the
// heads, rows B..2B-1 the tails.
type batch struct {
	n                 int // arcs in the batch
	idx               []int32
	outDeg, inDeg     []float64
	pmi               []float64
	x                 []float64 // 2B×d gathered embeddings
	a, l              []float64 // 2B×2hid pre-activations and elu outputs
	or, pi            []float64 // 2B rank logits and scores
	op, z             []float64 // 2B×lat prox pre-activations and outputs
	wsPos             []float64 // relu(W_s)
	t                 []float64 // B×lat: z_t relu(W_s)
	s                 []float64 // B scores z_t^T relu(W_s) z_h
	loss              float64
	dz, dt, dl, dx    []float64
	dor, dop, dWsPos  []float64
	capRows, d, h, lt int
}

func newBatch(cfg Config, rows int) *batch {
	d, h, l := cfg.Dim, cfg.Hidden, cfg.Latent
	r2 := 2 * rows
	return &batch{
		idx: make([]int32, r2), outDeg: make([]float64, rows), inDeg: make([]float64, rows), pmi: make([]float64, rows),
		x: make([]float64, r2*d), a: make([]float64, r2*2*h), l: make([]float64, r2*2*h),
		or: make([]float64, r2), pi: make([]float64, r2),
		op: make([]float64, r2*l), z: make([]float64, r2*l),
		wsPos: make([]float64, l*l), t: make([]float64, rows*l), s: make([]float64, rows),
		dz: make([]float64, r2*l), dt: make([]float64, rows*l), dl: make([]float64, r2*2*h), dx: make([]float64, r2*d),
		dor: make([]float64, r2), dop: make([]float64, r2*l), dWsPos: make([]float64, l*l),
		capRows: rows, d: d, h: h, lt: l,
	}
}

// load gathers the arcs sel into the batch (len(sel) <= capacity).
func (b *batch) load(a *arcs, sel []int32) {
	b.n = len(sel)
	for i, k := range sel {
		b.idx[i] = a.head[k]
		b.idx[b.n+i] = a.tail[k]
		b.outDeg[i], b.inDeg[i], b.pmi[i] = a.outDeg[k], a.inDeg[k], a.pmi[k]
	}
}

func general(rows, cols int, data []float64) blas64.General {
	return blas64.General{Rows: rows, Cols: cols, Stride: cols, Data: data[:rows*cols]}
}

// generalView views columns [c0, c0+cols) of a rows×stride matrix.
func generalView(rows, cols, stride, c0 int, data []float64) blas64.General {
	return blas64.General{Rows: rows, Cols: cols, Stride: stride, Data: data[c0 : (rows-1)*stride+c0+cols]}
}

func elu(x float64) float64 {
	if x > 0 {
		return x
	}
	return math.Expm1(x)
}

// forwardBackward computes the batch loss (mean over arcs) and adds its
// gradient to the model's gradient buffers.
func (m *model) forwardBackward(b *batch) {
	B, r2, d, h, l := b.n, 2*b.n, m.d, m.hid, m.lat
	h2 := 2 * h
	// Gather X.
	for i := 0; i < r2; i++ {
		u := int(b.idx[i])
		copy(b.x[i*d:(i+1)*d], m.emb[u*d:(u+1)*d])
	}
	X := general(r2, d, b.x)
	A := general(r2, h2, b.a)
	// A = X Wh + bh; L = elu(A).
	for i := 0; i < r2; i++ {
		copy(b.a[i*h2:(i+1)*h2], m.bh)
	}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, X, general(d, h2, m.wh), 1, A)
	for i := range b.a[:r2*h2] {
		b.l[i] = elu(b.a[i])
	}
	// Rank: or = L[:, :h] w_or + b_or; pi = numeric.Softplus(or).
	for i := 0; i < r2; i++ {
		s := m.bor[0]
		for j, w := range m.wor {
			s += b.l[i*h2+j] * w
		}
		b.or[i] = s
		b.pi[i] = numeric.Softplus(s)
	}
	// Prox: Op = L[:, h:] W_op + b_op; Z = relu(Op).
	Lp := generalView(r2, h, h2, h, b.l)
	for i := 0; i < r2; i++ {
		copy(b.op[i*l:(i+1)*l], m.bop)
	}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, Lp, general(h, l, m.wop), 1, general(r2, l, b.op))
	for i := range b.op[:r2*l] {
		b.z[i] = max(b.op[i], 0)
	}
	// s_i = z_t^T relu(W_s) z_h = sum_k T[i,k] Zh[i,k], T = Zt relu(W_s).
	for i, w := range m.ws {
		b.wsPos[i] = max(w, 0)
	}
	Zt := general(B, l, b.z[B*l:])
	T := general(B, l, b.t)
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, Zt, general(l, l, b.wsPos), 0, T)
	invB := 1 / float64(B)
	var proxLoss, rankLoss float64
	for i := 0; i < B; i++ {
		var s float64
		for k := 0; k < l; k++ {
			s += b.t[i*l+k] * b.z[i*l+k]
		}
		b.s[i] = s
		e := s - b.pmi[i]
		proxLoss += e * e
		ds := 2 * e * invB
		// dZh = ds T; dT = ds Zh.
		for k := 0; k < l; k++ {
			b.dz[i*l+k] = ds * b.t[i*l+k]
			b.dt[i*l+k] = ds * b.z[i*l+k]
		}
		// Ranking term r = in (pi_h/out - pi_t/in)^2.
		delta := b.pi[i]/b.outDeg[i] - b.pi[B+i]/b.inDeg[i]
		rankLoss += b.inDeg[i] * delta * delta
		dpiH := m.lambda * invB * 2 * b.inDeg[i] * delta / b.outDeg[i]
		dpiT := -m.lambda * invB * 2 * delta
		b.dor[i] = dpiH * numeric.Sigmoid(b.or[i])
		b.dor[B+i] = dpiT * numeric.Sigmoid(b.or[B+i])
	}
	b.loss = (proxLoss + m.lambda*rankLoss) * invB
	// dZt = dT relu(W_s)^T; d relu(W_s) = Zt^T dT.
	dT := general(B, l, b.dt)
	blas64.Gemm(blas.NoTrans, blas.Trans, 1, dT, general(l, l, b.wsPos), 0, general(B, l, b.dz[B*l:]))
	blas64.Gemm(blas.Trans, blas.NoTrans, 1, Zt, dT, 0, general(l, l, b.dWsPos))
	for i, w := range m.ws {
		if w > 0 {
			m.dWs[i] += b.dWsPos[i]
		}
	}
	// Through relu: dOp = dZ * [Op > 0].
	for i := range b.dop[:r2*l] {
		if b.op[i] > 0 {
			b.dop[i] = b.dz[i]
		} else {
			b.dop[i] = 0
		}
	}
	dOp := general(r2, l, b.dop)
	// dW_op = Lp^T dOp; db_op = sum rows dOp; dLp = dOp W_op^T.
	blas64.Gemm(blas.Trans, blas.NoTrans, 1, Lp, dOp, 1, general(h, l, m.dWop))
	for i := 0; i < r2; i++ {
		for k := 0; k < l; k++ {
			m.dBop[k] += b.dop[i*l+k]
		}
	}
	blas64.Gemm(blas.NoTrans, blas.Trans, 1, dOp, general(h, l, m.wop), 0, generalView(r2, h, h2, h, b.dl))
	// Rank branch: dLr = dor w_or^T; dw_or = Lr^T dor; db_or = sum dor.
	for i := 0; i < r2; i++ {
		g := b.dor[i]
		m.dBor[0] += g
		for j, w := range m.wor {
			b.dl[i*h2+j] = g * w
			m.dWor[j] += g * b.l[i*h2+j]
		}
	}
	// Through elu: dA = dL * elu'(A), elu'(a) = 1 for a > 0, else elu(a)+1.
	for i := range b.dl[:r2*h2] {
		if b.a[i] <= 0 {
			b.dl[i] *= b.l[i] + 1
		}
	}
	dA := general(r2, h2, b.dl)
	blas64.Gemm(blas.Trans, blas.NoTrans, 1, X, dA, 1, general(d, h2, m.dWh))
	for i := 0; i < r2; i++ {
		for j := 0; j < h2; j++ {
			m.dBh[j] += b.dl[i*h2+j]
		}
	}
	blas64.Gemm(blas.NoTrans, blas.Trans, 1, dA, general(d, h2, m.wh), 0, general(r2, d, b.dx))
	// Scatter into the embedding gradient (repeated nodes accumulate).
	for i := 0; i < r2; i++ {
		u := int(b.idx[i])
		g := m.dEmb[u*d : (u+1)*d]
		for j, v := range b.dx[i*d : (i+1)*d] {
			g[j] += v
		}
	}
}
