package train

import (
	"context"
	"math"
	"math/rand/v2"

	"github.com/dplp/dplp/internal/numeric"
	"github.com/dplp/dplp/transform"
)

// trainer holds the parameters, the optimiser state and per-step buffers.
type trainer struct {
	cfg     Config
	lex     bool                // dplp-pub: hinge within groups of equal public x only
	f, h    transform.Transform // h is always nil (no public transform)
	nf, nh  int
	theta   []float64 // [f params, h params]
	grad    []float64
	adam    *numeric.Adam
	sigma   float64 // noise scale 2/eps_p
	queries []*prepQuery

	fv, hv             []float64 // transform values per distinct x
	jf, jh             []float64 // Jacobian rows per distinct x (row-major)
	gf, gh             []float64 // dL/dq summed per distinct x
	qp, qn             []float64 // utilities
	gp, gn             []float64 // dL/dq per candidate
	sqp, sqn, sgp, sgn []float64 // one public group's utilities and dL/dq (dplp-pub)
	np, nn             []float64 // noise per candidate
	ps                 pairScratch
	gv                 []float64 // f on the Delta grid
	xa, xb             float64   // maximiser of the Delta_f approximation
	f0, f1             float64   // f(0), f(1)
	cur                []float64 // parameters the transforms hold
	version            int       // bumped by setParams
	hp                 *helper   // evaluates part of each step on another core; nil = sequential
	nbuf               [2]noiseBuf
	task               noiseTask // handed to the helper with the next job
}

func newTrainer(cfg Config, r *rand.Rand) (*trainer, error) {
	t := &trainer{cfg: cfg, sigma: 2 / cfg.Eps}
	var err error
	if t.f, err = transform.New(cfg.Spec(), r); err != nil {
		return nil, err
	}
	t.nf = t.f.NumParams()
	t.theta = t.f.Params()
	t.lex = cfg.Variant.Public()
	n := len(t.theta)
	t.grad = make([]float64, n)
	t.adam = numeric.NewAdam([][]float64{t.theta}, cfg.LR, []float64{cfg.WeightDecay}, false)
	t.adam.SetBetas(cfg.Beta1, cfg.Beta2, cfg.AdamEps)
	t.cur = append([]float64(nil), t.theta...)
	return t, nil
}

func (t *trainer) setParams(p []float64) error {
	if err := t.f.SetParams(p[:t.nf]); err != nil {
		return err
	}
	if t.h != nil {
		if err := t.h.SetParams(p[t.nf:]); err != nil {
			return err
		}
	}
	t.cur = append(t.cur[:0], p...)
	t.version++
	return nil
}

func grow(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n, n+n/4)
	}
	return b[:n]
}

// epoch runs one shuffled pass and returns the mean objective per pair.
// The noise does not depend on the parameters and comes from its own
// stream (seeded from r) in query order; with a helper goroutine, the
// helper draws query i+1's noise while the trainer finishes step i.
// It returns ctx's error, checked every ctxEvery steps, if ctx is cancelled.
func (t *trainer) epoch(ctx context.Context, r *rand.Rand) (float64, error) {
	r.Shuffle(len(t.queries), func(i, j int) { t.queries[i], t.queries[j] = t.queries[j], t.queries[i] })
	nr := rand.New(rand.NewPCG(r.Uint64(), r.Uint64()))
	var sum, pairs float64
	if t.hp != nil {
		t.hp.idle.await(t.hp.posted.n.Load(), spinWait, nil)
		drawInto(nr, t.sigma, t.queries[0], &t.nbuf[0])
		defer func() { t.hp.idle.await(t.hp.posted.n.Load(), spinWait, nil) }()
	}
	for i, q := range t.queries {
		if i%ctxEvery == ctxEvery-1 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
		b := &t.nbuf[i%2]
		if t.hp == nil {
			drawInto(nr, t.sigma, q, b)
		} else {
			t.hp.idle.await(t.hp.posted.n.Load(), spinWait, nil) // b is complete
			if i+1 < len(t.queries) {
				t.task = noiseTask{q: t.queries[i+1], buf: &t.nbuf[(i+1)%2], r: nr}
			}
		}
		clear(t.grad)
		loss, err := t.lossGrad(q, b.p, b.n, t.grad)
		if err != nil {
			return 0, err
		}
		sum += loss
		pairs += q.pairs()
		if err := t.adamStep(); err != nil {
			return 0, err
		}
	}
	return sum / pairs, nil
}

// ctxEvery is how many steps (about 100 µs each) an epoch takes between
// looks at its context.
const ctxEvery = 64

// noiseBuf holds one query's scaled noise.
type noiseBuf struct{ p, n []float64 }

// noiseTask asks the helper to fill buf for q from r after its next job.
type noiseTask struct {
	q   *prepQuery
	buf *noiseBuf
	r   *rand.Rand
}

func drawInto(r *rand.Rand, sigma float64, q *prepQuery, b *noiseBuf) {
	b.p, b.n = grow(b.p, len(q.pos)), grow(b.n, len(q.neg))
	gumbel(r, sigma, b.p)
	gumbel(r, sigma, b.n)
}

// gumbel fills b with sigma * Gumbel(0, 1) draws; -ln E with E ~ Exp(1) is
// Gumbel(0, 1) exactly.
func gumbel(r *rand.Rand, sigma float64, b []float64) {
	if sigma == 0 {
		clear(b)
		return
	}
	for i := range b {
		b[i] = -sigma * math.Log(r.ExpFloat64())
	}
}

// drawNoise fills t.np, t.nn for q (tests).
func (t *trainer) drawNoise(q *prepQuery, r *rand.Rand) {
	t.np, t.nn = grow(t.np, len(q.pos)), grow(t.nn, len(q.neg))
	gumbel(r, t.sigma, t.np)
	gumbel(r, t.sigma, t.nn)
}

// values evaluates tr at xs, writing each value to vals and each gradient
// row to jac (len(xs) * n).
func values(tr transform.Transform, n int, xs []float64, vals, jac []float64) {
	for d, x := range xs {
		row := jac[d*n : (d+1)*n]
		clear(row)
		vals[d] = tr.Grad(x, 1, row)
	}
}

func axpy(a float64, x, y []float64) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += a * v
	}
}
