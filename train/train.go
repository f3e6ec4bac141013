// Package train fits DPLP's monotone transform (paper Section 4.3,
// Algorithm 1's TRAIN; privacy-model §5) on per-query score lists.
//
// Objective. For a query u with dx = Delta_s(u)/S_max(u) > 0, each
// candidate v gets the utility the mechanism would sample from,
//
//	q(v) = f(x_v) / Delta_f(u) + (2/eps_p) G_v,   G_v ~ Gumbel(0, 1),
//
// with the noise redrawn every epoch (the reparameterisation of the paper's
// expectation), and the loss is the paper's pairwise hinge summed over the
// query's (positive, negative) pairs: sum max(0, rho + q(neg) - q(pos)).
// For dplp-pub, released with the lexicographic mechanism (candidates
// ranked by s_pub exactly, the exponential mechanism on f(s) only within
// groups of equal s_pub; privacy-model §11), only f is trained and the
// hinge runs over the pairs of equal x_pub only: every other pair's order
// is fixed by the public scores whatever f is. Dividing
// by Delta_f(u) makes the objective, like the release distribution,
// invariant to f -> c f, so the transform cannot win by outgrowing fixed
// noise (the flaw of the reference code, reference §9.3).
//
// Delta_f(u) = sup_x f(min(x+dx, 1)) - f(x) is approximated during training
// by the exact Delta of the piecewise-linear interpolant of f on DeltaGrid
// uniform points (the deployed table's construction on a coarser grid, so
// one evaluation of f per grid point), differentiated through its
// maximiser. The deployed model uses the exact Delta of the compiled table
// (transform.Table.Delta).
//
// Queries with Delta_s(u) = 0 are skipped in training: nothing can change
// their scores, the mechanism releases their exact top-K with no noise,
// and that list is the same for every strictly increasing f, so they carry
// no signal about f (their noise-free hinge would only reward scale). They
// are still scored in held-out evaluation.
//
// The objective is invariant to f -> c f, so nothing in it fixes f's
// overall scale and Adam lets it random-walk; for the networks (exp in the
// integrand) it can drift until f underflows. ScaleAnchor adds the weak
// penalty ScaleAnchor * ln(f(1) - f(0))^2 per step, which pins the scale
// near 1; along the pure scale direction the hinge term is flat, so the
// anchor does not compete with it there.
//
// Optimisation follows the authors: Adam (lr 0.1, weight decay 1e-5 as L2
// added to the gradient), one query per step, queries shuffled every epoch.
// Held-out queries select the best epoch (see Selection; dplp-pub selects
// by AUC@K of its lexicographic lists, the metric the experiments report).
//
// Speed: the transform is evaluated once per distinct x of a query (with
// its gradient row, so the backward pass is a weighted sum of rows). Steps
// are sequential, so the parallelism is within a step: a helper goroutine
// evaluates part of the distinct values and the Delta grid on its own copy
// of the transform and then draws the next query's noise. Results do not
// depend on GOMAXPROCS or scheduling.
package train

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dplp/dplp/metrics"
	"github.com/dplp/dplp/transform"
)

// EpochStats is one row of the training history.
type EpochStats struct {
	Epoch      int     // 0 = before training
	Loss       float64 // mean training objective per pair during the epoch (NaN for epoch 0)
	HeldOutAUC float64 // selection criterion (Config.Select); NaN without held-out queries
	NoisyAUC   float64 // held-out AUC of the noisy utility (fixed draw)
	CleanAUC   float64 // held-out AUC of the noise-free utility
	AUCAtK     float64 // held-out mean AUC@K of the released list (Config.SelectK, fixed draw)
}

// Result is a trained transform and how it was obtained.
type Result struct {
	Config         Config
	F              transform.Transform // f, at the best epoch
	H              transform.Transform // always nil (dplp-pub no longer has a public transform h)
	History        []EpochStats        // epochs 0..last run
	BestEpoch      int                 // epoch whose parameters F and H hold
	BestAUC        float64             // its HeldOutAUC
	EarlyStopped   bool
	TrainQueries   int // queries used for gradient steps
	SkippedQueries int // training queries without pairs or with Delta_s = 0
}

// Tables compiles F (and H) into deployable tables with grid points.
func (r *Result) Tables(grid int) (f, h *transform.Table, err error) {
	if f, err = transform.Compile(r.F, grid); err != nil {
		return nil, nil, err
	}
	if r.H != nil {
		if h, err = transform.Compile(r.H, grid); err != nil {
			return nil, nil, err
		}
	}
	return f, h, nil
}

// Train fits the transform(s) of cfg.Variant on train, selecting the epoch
// by heldOut (epoch 0, the initialisation, is a candidate; with no usable
// held-out query the last epoch is kept). All randomness
// (initialisation, shuffling, noise) comes from r.
func Train(cfg Config, train, heldOut []Query, r *rand.Rand) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if r == nil {
		return nil, errors.New("train: nil random source")
	}
	pub := cfg.Variant.Public()
	tq, err := prepare(train, pub, cfg.Quantize, "training")
	if err != nil {
		return nil, err
	}
	hq, err := prepare(heldOut, pub, 0, "held-out")
	if err != nil {
		return nil, err
	}
	t, err := newTrainer(cfg, r)
	if err != nil {
		return nil, err
	}
	t.startHelper()
	defer t.stopHelper()
	res := &Result{Config: cfg}
	for i := range tq {
		q := &tq[i]
		if q.dx > 0 && len(q.pos) > 0 && len(q.neg) > 0 && (!pub && len(q.xs) > 1 || pub && len(q.groups) > 0) {
			t.queries = append(t.queries, q)
		}
	}
	res.TrainQueries = len(t.queries)
	res.SkippedQueries = len(tq) - len(t.queries)
	if len(t.queries) == 0 && !pub {
		return nil, errors.New("train: no training query has both positives and negatives and Delta_s > 0")
	}
	// dplp-pub without a single tie of s_pub between a positive and a
	// negative: the public order decides every pair f could, so f is kept
	// at its initialisation (epoch 0 only; it decides nothing the data
	// shows).
	epochs := cfg.Epochs
	if len(t.queries) == 0 {
		epochs = 0
	}
	usable := 0
	for i := range hq {
		if len(hq[i].pos) > 0 && len(hq[i].neg) > 0 {
			usable++
		}
	}
	ev := newEvaluator(hq, cfg, r.Uint64())

	best := append([]float64(nil), t.theta...)
	score := func(epoch int, loss float64) (EpochStats, error) {
		st := EpochStats{Epoch: epoch, Loss: loss, HeldOutAUC: nanf(), NoisyAUC: nanf(), CleanAUC: nanf()}
		if usable == 0 {
			return st, nil
		}
		noisy, clean, atK, err := ev.run(t.f)
		if err != nil {
			return st, err
		}
		st.NoisyAUC, st.CleanAUC, st.AUCAtK = noisy, clean, atK
		switch cfg.Select {
		case SelectClean:
			st.HeldOutAUC = clean
		case SelectTopK:
			st.HeldOutAUC = atK
		default:
			st.HeldOutAUC = noisy
		}
		return st, nil
	}
	st, err := score(0, nanf())
	if err != nil {
		return nil, err
	}
	res.History = append(res.History, st)
	res.BestAUC = st.HeldOutAUC
	bad := 0
	for epoch := 1; epoch <= epochs; epoch++ {
		loss, err := t.epoch(r)
		if err != nil {
			return nil, fmt.Errorf("train: epoch %d: %w", epoch, err)
		}
		st, err := score(epoch, loss)
		if err != nil {
			return nil, err
		}
		res.History = append(res.History, st)
		if cfg.OnEpoch != nil {
			cfg.OnEpoch(epoch, loss, st.HeldOutAUC)
		}
		if usable == 0 || st.HeldOutAUC > res.BestAUC {
			res.BestAUC, res.BestEpoch = st.HeldOutAUC, epoch
			copy(best, t.theta)
			bad = 0
			continue
		}
		bad++
		if cfg.Patience > 0 && bad >= cfg.Patience {
			res.EarlyStopped = true
			break
		}
	}
	if err := t.setParams(best); err != nil {
		return nil, err
	}
	res.F = t.f
	return res, nil
}

func nanf() float64 { return math.NaN() }

// trainer holds the parameters, the optimiser state and per-step buffers.
type trainer struct {
	cfg     Config
	lex     bool                // dplp-pub: hinge within groups of equal public x only
	f, h    transform.Transform // h is always nil (no public transform)
	nf, nh  int
	theta   []float64 // [f params, h params]
	grad    []float64
	m, v    []float64 // Adam moments
	steps   int
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
	t.grad, t.m, t.v = make([]float64, n), make([]float64, n), make([]float64, n)
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
func (t *trainer) epoch(r *rand.Rand) (float64, error) {
	r.Shuffle(len(t.queries), func(i, j int) { t.queries[i], t.queries[j] = t.queries[j], t.queries[i] })
	nr := rand.New(rand.NewPCG(r.Uint64(), r.Uint64()))
	var sum, pairs float64
	if t.hp != nil {
		t.hp.idle.await(t.hp.posted.n.Load(), spinWait, nil)
		drawInto(nr, t.sigma, t.queries[0], &t.nbuf[0])
		defer func() { t.hp.idle.await(t.hp.posted.n.Load(), spinWait, nil) }()
	}
	for i, q := range t.queries {
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

// deltaApprox returns the training approximation of Delta_f for dx > 0:
// the exact Delta (as transform.Table.Delta computes it) of the
// piecewise-linear interpolant of f on DeltaGrid uniform points (t.gv,
// filled by evaluate), which is the deployed table's construction on a
// coarser grid. It records the maximising pair in t.xa, t.xb for the
// gradient.
func (t *trainer) deltaApprox(dx float64) float64 {
	if dx >= 1 {
		t.xa, t.xb = 0, 1
		return t.f1 - t.f0
	}
	G := len(t.gv)
	best := math.Inf(-1)
	for i, v := range t.gv {
		z := float64(i) / float64(G-1)
		xb := min(z+dx, 1)
		if d := t.interp(xb) - v; d > best {
			best, t.xa, t.xb = d, z, xb
		}
		if xa := z - dx; xa >= 0 {
			if d := v - t.interp(xa); d > best {
				best, t.xa, t.xb = d, xa, z
			}
		}
	}
	return best
}

// cell locates x in [0, 1] on the Delta grid: x = (1-lam) z_j + lam z_{j+1}.
func (t *trainer) cell(x float64) (int, float64) {
	G := len(t.gv)
	pos := x * float64(G-1)
	j := int(pos)
	if j >= G-1 {
		return G - 2, 1
	}
	return j, pos - float64(j)
}

func (t *trainer) interp(x float64) float64 {
	j, lam := t.cell(x)
	return t.gv[j] + lam*(t.gv[j+1]-t.gv[j])
}

// deltaGrad adds w * dDelta/dtheta at the recorded maximiser to d.
func (t *trainer) deltaGrad(dx, w float64, d []float64) {
	if dx >= 1 {
		t.f.Grad(1, w, d)
		t.f.Grad(0, -w, d)
		return
	}
	G := float64(len(t.gv) - 1)
	for _, pt := range [2]struct{ x, s float64 }{{t.xb, w}, {t.xa, -w}} {
		j, lam := t.cell(pt.x)
		if lam != 1 {
			t.f.Grad(float64(j)/G, pt.s*(1-lam), d)
		}
		if lam != 0 {
			t.f.Grad(float64(j+1)/G, pt.s*lam, d)
		}
	}
}

// evaluate computes f (and h) with gradient rows at the query's distinct
// values, f on the Delta grid (if dx < 1), and f(0), f(1), splitting the
// work with the helper goroutine when there is one. The split changes
// nothing in the results: both sides run the same code on the same
// parameters.
func (t *trainer) evaluate(q *prepQuery) {
	D := len(q.xs)
	t.fv, t.jf, t.gf = grow(t.fv, D), grow(t.jf, D*t.nf), grow(t.gf, D)
	pub := t.h != nil
	Dp := len(q.xp)
	if pub {
		t.hv, t.jh, t.gh = grow(t.hv, Dp), grow(t.jh, Dp*t.nh), grow(t.gh, Dp)
	}
	G := 0
	if q.dx < 1 {
		G = t.cfg.DeltaGrid
	}
	t.gv = grow(t.gv, G)
	if t.hp == nil {
		values(t.f, t.nf, q.xs, t.fv, t.jf)
		if pub {
			values(t.h, t.nh, q.xp, t.hv, t.jh)
		}
		grid(t.f, t.gv)
	} else {
		// Balance: main takes split gradient rows, the helper the rest
		// plus the grid (an Eval costs about 0.8 of a gradient row); the
		// offset adapts to the measured waiting. The split never affects
		// results. After acknowledging, the helper draws the next query's
		// noise while this goroutine finishes the step.
		split := min(D, max(0, (D+G*4/5)/2+t.hp.bias))
		hsplit := Dp / 2
		t.hp.idle.await(t.hp.posted.n.Load(), spinWait, nil) // the job struct is free again
		j := &t.hp.job
		*j = helpJob{version: t.version, params: t.cur,
			xs: q.xs[split:], vals: t.fv[split:D], jac: t.jf[split*t.nf : D*t.nf], grid: t.gv,
			noise: t.task, sigma: t.sigma}
		t.task = noiseTask{}
		if pub {
			j.xp, j.hvals, j.hjac = q.xp[hsplit:], t.hv[hsplit:Dp], t.jh[hsplit*t.nh:Dp*t.nh]
		}
		t.hp.posted.raise()
		values(t.f, t.nf, q.xs[:split], t.fv[:split], t.jf[:split*t.nf])
		if pub {
			values(t.h, t.nh, q.xp[:hsplit], t.hv[:hsplit], t.jh[:hsplit*t.nh])
		}
		if t.hp.acked.await(t.hp.posted.n.Load(), spinWait, nil) {
			// the helper was slower: give it less next time
			t.hp.bias = min(t.hp.bias+1, 1<<20)
		} else {
			t.hp.bias = max(t.hp.bias-1, -(1 << 20))
		}
	}
	if G > 0 {
		t.f0, t.f1 = t.gv[0], t.gv[G-1]
	} else {
		t.f0, t.f1 = t.f.Eval(0), t.f.Eval(1)
	}
}

// grid fills g with tr at len(g) uniform points of [0, 1].
func grid(tr transform.Transform, g []float64) {
	for i := range g {
		g[i] = tr.Eval(float64(i) / float64(len(g)-1))
	}
}

// helper is a second goroutine with its own copies of the transforms. Jobs
// and completions are signalled with a short spin before parking: a step
// takes about 100 µs, comparable to waking a parked goroutine, which a plain
// channel would pay twice per step; parking after the spin keeps a loaded
// machine from wasting a core.
type helper struct {
	f, h    transform.Transform
	nf      int
	version int
	bias    int // adaptive offset of the work split
	job     helpJob

	posted, acked, idle signal // jobs posted; evaluations done; noise done too
	stop                atomic.Bool
}

// spinWait is how long a waiting side spins before parking.
const spinWait = 20 * time.Microsecond

type helpJob struct {
	version         int
	params          []float64 // read-only while the job runs
	xs, vals, jac   []float64
	xp, hvals, hjac []float64
	grid            []float64
	noise           noiseTask // drawn after the evaluations are acknowledged
	sigma           float64
}

// signal is a counter one goroutine raises and another awaits.
type signal struct {
	n      atomic.Int64
	parked atomic.Bool
	wake   chan struct{} // capacity 1
}

func newSignal() signal { return signal{wake: make(chan struct{}, 1)} }

func (s *signal) raise() {
	s.n.Add(1)
	s.unpark()
}

func (s *signal) unpark() {
	if s.parked.CompareAndSwap(true, false) {
		s.wake <- struct{}{}
	}
}

// await returns once the counter reaches target (or stop is set, if
// non-nil), spinning for about spin before parking. It reports whether the
// counter was not yet there on entry.
func (s *signal) await(target int64, spin time.Duration, stop *atomic.Bool) bool {
	if s.n.Load() >= target {
		return false
	}
	var deadline time.Time
	for i := 1; s.n.Load() < target; i++ {
		if stop != nil && stop.Load() {
			break
		}
		if i&63 != 0 {
			continue
		}
		runtime.Gosched()
		if deadline.IsZero() {
			deadline = time.Now().Add(spin)
			continue
		}
		if time.Now().Before(deadline) {
			continue
		}
		s.parked.Store(true)
		if s.n.Load() >= target || stop != nil && stop.Load() {
			if !s.parked.CompareAndSwap(true, false) {
				<-s.wake // the raiser already claimed the wake-up: take its token
			}
		} else {
			<-s.wake
		}
		deadline = time.Time{}
	}
	return true
}

func (hp *helper) run() {
	var last int64
	for {
		hp.posted.await(last+1, spinWait, &hp.stop)
		if hp.stop.Load() {
			return
		}
		last++
		j := &hp.job
		if j.version != hp.version {
			// The parameters were validated by the trainer's setParams.
			_ = hp.f.SetParams(j.params[:hp.nf])
			if hp.h != nil {
				_ = hp.h.SetParams(j.params[hp.nf:])
			}
			hp.version = j.version
		}
		values(hp.f, hp.nf, j.xs, j.vals, j.jac)
		if hp.h != nil {
			values(hp.h, hp.h.NumParams(), j.xp, j.hvals, j.hjac)
		}
		grid(hp.f, j.grid)
		hp.acked.raise()
		if j.noise.q != nil {
			drawInto(j.noise.r, j.sigma, j.noise.q, j.noise.buf)
		}
		hp.idle.raise()
	}
}

// startHelper starts the helper goroutine if more than one CPU is usable.
func (t *trainer) startHelper() {
	if runtime.GOMAXPROCS(0) < 2 {
		return
	}
	t.startHelperForTest()
}

func (t *trainer) startHelperForTest() {
	if t.hp != nil {
		return
	}
	hp := &helper{f: t.f.Clone(), nf: t.nf, version: -1, posted: newSignal(), acked: newSignal(), idle: newSignal()}
	if t.h != nil {
		hp.h = t.h.Clone()
	}
	t.hp = hp
	go hp.run()
}

// stopHelper ends the helper goroutine.
func (t *trainer) stopHelper() {
	if t.hp != nil {
		t.hp.stop.Store(true)
		t.hp.posted.unpark()
		t.hp = nil
	}
}

// lossGrad returns the query's hinge loss for the given (scaled) noise and
// adds its gradient with respect to theta to grad.
func (t *trainer) lossGrad(q *prepQuery, noiseP, noiseN []float64, grad []float64) (float64, error) {
	t.evaluate(q)
	pub := t.h != nil
	delta := t.deltaApprox(q.dx)
	if t.cfg.ScaleAnchor > 0 && !(t.f1 > t.f0) {
		return 0, fmt.Errorf("f(1) - f(0) = %v (transform degenerate or diverged)", t.f1-t.f0)
	}
	if !(delta > 0) || math.IsInf(delta, 0) {
		return 0, fmt.Errorf("Delta_f approximation is %v (transform degenerate or diverged)", delta)
	}
	inv := 1 / delta
	// The hinge is shift-invariant (its dL/dq sum to zero), so utilities
	// are taken relative to f(0) and h at the smallest public value: the
	// same loss and gradient, without cancellation when f has a large offset.
	f0, h0 := t.f0, 0.0
	if pub && len(t.hv) > 0 {
		h0 = t.hv[0]
	}
	P, N := len(q.pos), len(q.neg)
	t.qp, t.qn = grow(t.qp, P), grow(t.qn, N)
	t.gp, t.gn = grow(t.gp, P), grow(t.gn, N)
	for i, d := range q.pos {
		u := t.fv[d] - f0
		if pub {
			u += t.hv[q.ppos[i]] - h0
		}
		t.qp[i] = u*inv + noiseP[i]
	}
	for i, d := range q.neg {
		u := t.fv[d] - f0
		if pub {
			u += t.hv[q.pneg[i]] - h0
		}
		t.qn[i] = u*inv + noiseN[i]
	}
	var loss float64
	if t.lex {
		loss = t.groupHinge(q)
	} else {
		loss = t.ps.hinge(t.qp, t.qn, t.cfg.Margin, t.gp, t.gn)
	}

	// Accumulate dL/dq per distinct value; then dL/dtheta = sum_d g_d/Delta
	// * df(x_d)/dtheta - (sum_d g_d u_d)/Delta^2 * dDelta/dtheta.
	clear(t.gf)
	for i, d := range q.pos {
		t.gf[d] += t.gp[i]
	}
	for i, d := range q.neg {
		t.gf[d] += t.gn[i]
	}
	var gu float64 // sum over candidates of dL/dq * numerator
	gF := grad[:t.nf]
	for d, g := range t.gf {
		if g != 0 {
			gu += g * (t.fv[d] - f0)
			axpy(g*inv, t.jf[d*t.nf:(d+1)*t.nf], gF)
		}
	}
	if pub {
		clear(t.gh)
		for i, d := range q.ppos {
			t.gh[d] += t.gp[i]
		}
		for i, d := range q.pneg {
			t.gh[d] += t.gn[i]
		}
		gH := grad[t.nf:]
		for d, g := range t.gh {
			if g != 0 {
				gu += g * (t.hv[d] - h0)
				axpy(g*inv, t.jh[d*t.nh:(d+1)*t.nh], gH)
			}
		}
	}
	wd := -(gu * inv) * inv // this order cannot overflow when Delta is tiny
	if a := t.cfg.ScaleAnchor; a > 0 {
		// anchor: a * ln(f(1)-f(0))^2, d/dtheta = 2a ln(R)/R * dR/dtheta
		R := t.f1 - t.f0
		c := 2 * a * math.Log(R) / R
		loss += a * math.Log(R) * math.Log(R)
		t.f.Grad(1, c, gF)
		t.f.Grad(0, -c, gF)
	}
	if wd != 0 {
		t.deltaGrad(q.dx, wd, gF)
	}
	return loss, nil
}

// groupHinge is the lexicographic mechanism's hinge: summed over the groups
// of equal public x, over the group's (positive, negative) pairs only (the
// order of any other pair is fixed by s_pub whatever f is). It reads
// t.qp, t.qn and writes dL/dq to t.gp, t.gn (0 outside every group).
func (t *trainer) groupHinge(q *prepQuery) float64 {
	clear(t.gp)
	clear(t.gn)
	var loss float64
	for _, g := range q.groups {
		t.sqp, t.sqn = grow(t.sqp, len(g.pos)), grow(t.sqn, len(g.neg))
		t.sgp, t.sgn = grow(t.sgp, len(g.pos)), grow(t.sgn, len(g.neg))
		for i, j := range g.pos {
			t.sqp[i] = t.qp[j]
		}
		for i, j := range g.neg {
			t.sqn[i] = t.qn[j]
		}
		loss += t.ps.hinge(t.sqp, t.sqn, t.cfg.Margin, t.sgp, t.sgn)
		for i, j := range g.pos {
			t.gp[j] = t.sgp[i]
		}
		for i, j := range g.neg {
			t.gn[j] = t.sgn[i]
		}
	}
	return loss
}

func axpy(a float64, x, y []float64) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += a * v
	}
}

// adamStep applies Adam with L2 weight decay to theta using t.grad.
func (t *trainer) adamStep() error {
	c := t.cfg
	t.steps++
	b1c := 1 - math.Pow(c.Beta1, float64(t.steps))
	b2c := 1 - math.Pow(c.Beta2, float64(t.steps))
	for i, g := range t.grad {
		g += c.WeightDecay * t.theta[i]
		t.m[i] = c.Beta1*t.m[i] + (1-c.Beta1)*g
		t.v[i] = c.Beta2*t.v[i] + (1-c.Beta2)*g*g
		t.theta[i] -= c.LR * (t.m[i] / b1c) / (math.Sqrt(t.v[i]/b2c) + c.AdamEps)
	}
	if err := t.setParams(t.theta); err != nil {
		return fmt.Errorf("parameters diverged: %w", err)
	}
	return nil
}

// evaluator scores held-out queries with the compiled tables, in parallel.
type evaluator struct {
	qs                []prepQuery
	cfg               Config
	sigma             float64
	seed              uint64 // fixed noise: query i uses PCG(seed, i) every epoch
	noisy, clean, atK []float64
}

func newEvaluator(qs []prepQuery, cfg Config, seed uint64) *evaluator {
	return &evaluator{qs: qs, cfg: cfg, sigma: 2 / cfg.Eps, seed: seed}
}

// run returns, over held-out queries that have both positives and
// negatives, the mean full-list AUC of the noisy and of the noise-free
// utility, and the mean AUC@K (metrics.Evaluate, K = Config.SelectK) of
// the list the mechanism releases from the query's candidates (its
// positives and negatives) with the fixed noise draw. For dplp-pub every
// comparison is lexicographic: the public x first, then the utility, as
// the lexicographic mechanism releases.
func (e *evaluator) run(f transform.Transform) (noisy, clean, atK float64, err error) {
	tf, err := transform.Compile(f, e.cfg.TableGrid)
	if err != nil {
		return 0, 0, 0, err
	}
	lex := e.cfg.Variant.Public()
	k := e.cfg.SelectK
	if k < 1 {
		k = DefaultSelectK
	}
	workers := min(runtime.GOMAXPROCS(0), max(1, len(e.qs)))
	// Per-query results summed in query order afterwards, so the mean does
	// not depend on the number of workers.
	if len(e.noisy) < len(e.qs) {
		e.noisy, e.clean, e.atK = make([]float64, len(e.qs)), make([]float64, len(e.qs)), make([]float64, len(e.qs))
	}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var ps pairScratch
			var fv, up, un, qp, qn []float64
			var c cands
			for i := w; i < len(e.qs); i += workers {
				q := &e.qs[i]
				if len(q.pos) == 0 || len(q.neg) == 0 {
					e.noisy[i], e.clean[i], e.atK[i] = nanf(), nanf(), nanf()
					continue
				}
				fv = tableValues(tf, q.xs, fv)
				up, un = grow(up, len(q.pos)), grow(un, len(q.neg))
				for j, d := range q.pos {
					up[j] = fv[d]
				}
				for j, d := range q.neg {
					un[j] = fv[d]
				}
				delta := tf.Delta(q.dx)
				qp, qn = grow(qp, len(up)), grow(qn, len(un))
				r := rand.New(rand.NewPCG(e.seed, uint64(i)))
				for j, u := range up {
					qp[j] = e.noisyKey(u, delta, r)
				}
				for j, u := range un {
					qn[j] = e.noisyKey(u, delta, r)
				}
				if lex {
					e.clean[i] = lexAUC(q, up, un)
					e.noisy[i] = lexAUC(q, qp, qn)
				} else {
					e.clean[i] = ps.auc(up, un)
					e.noisy[i] = ps.auc(qp, qn)
				}
				e.atK[i] = c.aucAtK(q, qp, qn, lex, k)
			}
		}(w)
	}
	wg.Wait()
	var n float64
	for i := range e.qs {
		if !math.IsNaN(e.clean[i]) {
			noisy += e.noisy[i]
			clean += e.clean[i]
			atK += e.atK[i]
			n++
		}
	}
	if n == 0 {
		return nanf(), nanf(), nanf(), nil
	}
	return noisy / n, clean / n, atK / n, nil
}

// noisyKey is the mechanism's sampling key u/Delta + (2/eps_p) Gumbel (the
// Gumbel-max form of the exponential mechanism at scale 2 Delta/eps_p); at
// Delta = 0 the utility itself (ties then go by candidate order). The draw
// is consumed either way, so keys stay paired across epochs.
func (e *evaluator) noisyKey(u, delta float64, r *rand.Rand) float64 {
	g := -math.Log(r.ExpFloat64())
	if delta > 0 {
		return u/delta + e.sigma*g
	}
	return u
}

// lexAUC is the fraction of (positive, negative) pairs ordered correctly
// by (public x, key), ties counting 1/2.
func lexAUC(q *prepQuery, kp, kn []float64) float64 {
	var wins float64
	for i, a := range kp {
		pa := q.xp[q.ppos[i]]
		for j, b := range kn {
			pb := q.xp[q.pneg[j]]
			switch {
			case pa > pb || pa == pb && a > b:
				wins++
			case pa == pb && a == b:
				wins += 0.5
			}
		}
	}
	return wins / (float64(len(kp)) * float64(len(kn)))
}

// cands is scratch for aucAtK.
type cands struct {
	idx []int32
	rel []bool
}

// aucAtK releases the top k of the query's candidates by (public x if lex,
// key) and returns its AUC@K (metrics.Evaluate).
func (c *cands) aucAtK(q *prepQuery, kp, kn []float64, lex bool, k int) float64 {
	P := len(kp)
	c.idx = c.idx[:0]
	for i := range P + len(kn) {
		c.idx = append(c.idx, int32(i))
	}
	key := func(i int32) (float64, float64) {
		if int(i) < P {
			if lex {
				return q.xp[q.ppos[i]], kp[i]
			}
			return 0, kp[i]
		}
		j := int(i) - P
		if lex {
			return q.xp[q.pneg[j]], kn[j]
		}
		return 0, kn[j]
	}
	slices.SortFunc(c.idx, func(a, b int32) int {
		pa, ka := key(a)
		pb, kb := key(b)
		if r := cmp.Compare(pb, pa); r != 0 {
			return r
		}
		if r := cmp.Compare(kb, ka); r != 0 {
			return r
		}
		return cmp.Compare(a, b)
	})
	c.rel = c.rel[:0]
	for _, i := range c.idx[:min(k, len(c.idx))] {
		c.rel = append(c.rel, int(i) < P)
	}
	return metrics.Evaluate(c.rel, P, k).AUC
}

func tableValues(t *transform.Table, xs, buf []float64) []float64 {
	buf = grow(buf, len(xs))
	for i, x := range xs {
		buf[i] = t.Eval(x)
	}
	return buf
}
