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
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

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

// Progress is what an Observer is told after each epoch.
type Progress struct {
	EpochStats     // the epoch just finished (Epoch >= 1), as recorded in Result.History
	Epochs     int // epochs planned (Config.Epochs); patience may end the run sooner
	BestEpoch  int // the best epoch so far (0: the initialisation)
}

// Observer follows a training run (Config.OnEpoch): Train calls it on its
// own goroutine after every epoch, once the epoch's held-out statistics are
// known and before the next epoch starts, so progress bars and logs need no
// locking against Train. It must not keep p beyond the call. To stop the
// run, cancel Train's context (from the observer or anywhere else): no
// further epoch starts, and Train returns the context's error.
type Observer func(p Progress)

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
// (initialisation, shuffling, noise) comes from r. cfg.OnEpoch, if set,
// observes every epoch. Cancelling ctx stops the run promptly (between
// epochs, every few dozen steps within one, and between held-out queries):
// Train then returns ctx.Err() and no result.
func Train(ctx context.Context, cfg Config, train, heldOut []Query, r *rand.Rand) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if r == nil {
		return nil, errors.New("train: nil random source")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pub := cfg.Variant.Public()
	tq, err := prepare(ctx, train, pub, cfg.Quantize, "training")
	if err != nil {
		return nil, err
	}
	hq, err := prepare(ctx, heldOut, pub, 0, "held-out")
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
		noisy, clean, atK, err := ev.run(ctx, t.f)
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
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		loss, err := t.epoch(ctx, r)
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return nil, err
			}
			return nil, fmt.Errorf("train: epoch %d: %w", epoch, err)
		}
		st, err := score(epoch, loss)
		if err != nil {
			return nil, err
		}
		res.History = append(res.History, st)
		improved := usable == 0 || st.HeldOutAUC > res.BestAUC
		if improved {
			res.BestAUC, res.BestEpoch = st.HeldOutAUC, epoch
			copy(best, t.theta)
			bad = 0
		} else {
			bad++
		}
		if cfg.OnEpoch != nil {
			cfg.OnEpoch(Progress{EpochStats: st, Epochs: epochs, BestEpoch: res.BestEpoch})
		}
		if !improved && cfg.Patience > 0 && bad >= cfg.Patience {
			res.EarlyStopped = true
			break
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := t.setParams(best); err != nil {
		return nil, err
	}
	res.F = t.f
	return res, nil
}

func nanf() float64 { return math.NaN() }

// spinWait is how long a waiting side spins before parking.
const spinWait = 20 * time.Microsecond
