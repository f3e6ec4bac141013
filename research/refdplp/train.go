package refdplp

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/dplp/dplp/internal/numeric"
	"github.com/dplp/dplp/internal/par"
)

// TrainQuery is one query's training (dev) pairs: normalised scores of its
// positives and negatives with their node ids (the noise keys), which
// positives are protected, and whether the authors add noise (a(q) > 0).
type TrainQuery struct {
	Q       int32
	Noisy   bool
	Pos     []float64
	PosID   []int32
	PosProt []bool
	Neg     []float64
	NegID   []int32
}

// LinResult is a trained DPLP-Lin: Eval is the model after LinEpochs-1
// epochs (what the authors evaluate, model_epoch_last_but_one), Last after
// LinEpochs (what DPLP is trained on). Loss[e] is the summed training loss
// of epoch e.
type LinResult struct {
	Eval, Last *LinModel
	Loss       []float64
}

// parallel runs fn(i) for i in [0, n) on all cores (internal/par); it
// returns ctx's error if ctx is cancelled before every item started.
func parallel(ctx context.Context, n int, fn func(i int)) error {
	return par.Run(ctx, n, par.Options{}, func(int) struct{} { return struct{}{} }, func(_ struct{}, i int) error {
		fn(i)
		return nil
	})
}

// linData builds the noisy feature rows of DPLP-Lin's training pairs: the
// non-protected positives and every negative of each query, with
// x_pj + G_pj / e for queries with noise (training table, columns 20..189).
func linData(ctx context.Context, data []TrainQuery, cfg *Config) ([]*linQuery, error) {
	out := make([]*linQuery, len(data))
	sc := cfg.scale()
	err := parallel(ctx, len(data), func(i int) {
		d := &data[i]
		var nPos int
		for _, p := range d.PosProt {
			if !p {
				nPos++
			}
		}
		q := &linQuery{nPos: nPos, nNeg: len(d.Neg), x: make([]float32, (nPos+len(d.Neg))*NumFeatures)}
		var feat [NumFeatures]float64
		ns := newNoiseStream()
		row := 0
		add := func(s float64, v int32) {
			features(s, feat[:])
			dst := q.x[row*NumFeatures : (row+1)*NumFeatures]
			if d.Noisy {
				ns.pair(cfg.Seed, tableTrain, d.Q, v)
				for j := range dst {
					dst[j] = float32(feat[j] + sc*ns.next())
				}
			} else {
				for j := range dst {
					dst[j] = float32(feat[j])
				}
			}
			row++
		}
		for j, s := range d.Pos {
			if !d.PosProt[j] {
				add(s, d.PosID[j])
			}
		}
		for j, s := range d.Neg {
			add(s, d.NegID[j])
		}
		out[i] = q
	})
	return out, err
}

// TrainLin trains DPLP-Lin the authors' way (reference-implementation §5):
// non-protected positives and all negatives of each query, noisy features
// from one fixed training draw, SubBatch queries a step in list order,
// Adam, LinEpochs epochs. Cancelling ctx stops it between steps.
func TrainLin(ctx context.Context, data []TrainQuery, cfg Config) (*LinResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	all, err := linData(ctx, data, &cfg)
	if err != nil {
		return nil, err
	}
	var qs []*linQuery
	for _, q := range all {
		if q.nPos > 0 && q.nNeg > 0 {
			qs = append(qs, q)
		}
	}
	if len(qs) == 0 {
		return nil, fmt.Errorf("refdplp: no query with a non-protected positive and a negative to train DPLP-Lin on")
	}
	m := NewLin()
	bias := []float64{m.B}
	params := [][]float64{m.Beta, bias}
	grad := make([]float64, NumFeatures+1)
	grads := [][]float64{grad[:NumFeatures], grad[NumFeatures:]}
	opt := numeric.NewAdam(params, cfg.LR, []float64{cfg.WeightDecay, cfg.WeightDecay}, false)
	res := &LinResult{}
	var sc hingeScratch
	w := make([]float64, 0, NumFeatures)
	for epoch := range cfg.LinEpochs {
		if epoch == cfg.LinEpochs-1 {
			res.Eval = m.Clone()
		}
		var loss float64
		for start := 0; start < len(qs); start += cfg.SubBatch {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			clear(grad)
			w = m.Weights(w)
			loss += linLoss(m, w, qs[start:min(start+cfg.SubBatch, len(qs))], cfg.Margin, grad, &sc)
			opt.Step(params, grads)
			m.B = bias[0]
		}
		if math.IsNaN(loss) || math.IsInf(loss, 0) {
			return nil, fmt.Errorf("refdplp: DPLP-Lin loss not finite at epoch %d", epoch)
		}
		res.Loss = append(res.Loss, loss)
	}
	res.Last = m.Clone()
	return res, nil
}

// mnnQuery is one query's pairs for the UMNN: per pair, the index of its
// input among the query's distinct inputs, and its training noise
// G / e (0 without noise), positives first.
type mnnQuery struct {
	nPos  int
	in    []float64 // distinct inputs of f (nu for DPLP, x for DPLP-UMNN)
	idx   []int32
	noise []float64
}

// mnnData builds the UMNN's training pairs: every positive (protected ones
// included) and every negative; input(s) maps a normalised score to f's
// input; col is the training noise column.
func mnnData(ctx context.Context, data []TrainQuery, cfg *Config, input func(s float64) float64, col int) ([]*mnnQuery, error) {
	out := make([]*mnnQuery, len(data))
	sc := cfg.scale()
	err := parallel(ctx, len(data), func(i int) {
		d := &data[i]
		n := len(d.Pos) + len(d.Neg)
		q := &mnnQuery{nPos: len(d.Pos), idx: make([]int32, n), noise: make([]float64, n)}
		ns := newNoiseStream()
		ss := make([]float64, 0, n)
		ss = append(append(ss, d.Pos...), d.Neg...)
		uniq := slices.Clone(ss)
		slices.Sort(uniq)
		uniq = slices.Compact(uniq)
		for p, s := range ss {
			j, _ := slices.BinarySearch(uniq, s)
			q.idx[p] = int32(j)
			if d.Noisy {
				var v int32
				if p < len(d.Pos) {
					v = d.PosID[p]
				} else {
					v = d.NegID[p-len(d.Pos)]
				}
				ns.pair(cfg.Seed, tableTrain, d.Q, v)
				q.noise[p] = sc * ns.column(col)
			}
		}
		q.in = make([]float64, len(uniq))
		for j, s := range uniq {
			q.in[j] = input(s)
		}
		out[i] = q
	})
	return out, err
}

// MNNResult is a trained UMNN with its per-epoch summed training loss.
type MNNResult struct {
	F    *MNN
	Loss []float64
}

// TrainDPLP trains the authors' DPLP: the UMNN on the noise-free nu of the
// frozen lin (its state after the last epoch), released in training as
// f(nu) + (sum beta) G / e with the training draw's column 20; all dev
// pairs, one query a step, DPLPEpochs epochs.
func TrainDPLP(ctx context.Context, data []TrainQuery, lin *LinModel, cfg Config) (*MNNResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	qs, err := mnnData(ctx, data, &cfg, lin.Nu, colDPLPTrain)
	if err != nil {
		return nil, err
	}
	return trainMNN(ctx, qs, cfg, lin.BetaSum(), false)
}

// TrainUMNN trains the DPLP-UMNN variant: the UMNN on x = s^(1/pv_90),
// released in training as f(x) + f(1) G / e with the training draw's
// column 90 (gradients flow through f(1)).
func TrainUMNN(ctx context.Context, data []TrainQuery, cfg Config) (*MNNResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	qs, err := mnnData(ctx, data, &cfg, umnnInput, colUMNN)
	if err != nil {
		return nil, err
	}
	return trainMNN(ctx, qs, cfg, 0, true)
}

// umnnInput is the DPLP-UMNN variant's input, the authors' column 90.
func umnnInput(s float64) float64 {
	if !(s > 0) {
		return 0
	}
	return math.Pow(s, umnnExponent)
}

// trainMNN runs the UMNN training loop. The noise multiplier is mult, or
// f(1) when fOne.
func trainMNN(ctx context.Context, all []*mnnQuery, cfg Config, mult float64, fOne bool) (*MNNResult, error) {
	var qs []*mnnQuery
	for _, q := range all {
		if q.nPos > 0 && q.nPos < len(q.idx) {
			qs = append(qs, q)
		}
	}
	if len(qs) == 0 {
		return nil, fmt.Errorf("refdplp: no query with a positive and a negative to train the UMNN on")
	}
	m := NewMNN(cfg.Hidden, cfg.QuadSteps)
	scal := make([]float64, 3)
	params := m.params(scal)
	wd := make([]float64, len(params))
	for i := range wd {
		wd[i] = cfg.WeightDecay
	}
	opt := numeric.NewAdam(params, cfg.LR, wd, false)
	grad := make([]float64, m.numParams())
	grads := m.splitGrad(grad)
	var (
		g     groups
		sc    hingeScratch
		fu    []float64
		du    []float64
		gu    = make([]float64, 3*cfg.Hidden)
		res   = &MNNResult{F: m}
		y, cs []float64
	)
	for epoch := range cfg.DPLPEpochs {
		var loss float64
		for _, q := range qs {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			m.groups(&g)
			fu = grow(fu, len(q.in))
			for j, x := range q.in {
				fu[j] = m.eval(&g, x)
			}
			k := mult
			if fOne {
				k = m.eval(&g, 1)
			}
			n := len(q.idx)
			y, cs = grow(y, n), grow(cs, n)
			for p, j := range q.idx {
				y[p] = fu[j] + k*q.noise[p]
			}
			loss += hinge(y[:q.nPos], y[q.nPos:n], cfg.Margin, cs[:q.nPos], cs[q.nPos:n], &sc)
			du = grow(du, len(q.in))
			clear(du)
			var dk float64 // dL/d(multiplier)
			for p, j := range q.idx {
				du[j] += cs[p]
				dk += cs[p] * q.noise[p]
			}
			clear(grad)
			for j, x := range q.in {
				m.addGrad(&g, x, du[j], grad, gu)
			}
			if fOne {
				m.addGrad(&g, 1, dk, grad, gu)
			}
			opt.Step(params, grads)
			m.setScalars(scal)
		}
		if math.IsNaN(loss) || math.IsInf(loss, 0) || math.IsInf(m.LogScale, 0) || math.IsNaN(m.LogScale) {
			return nil, fmt.Errorf("refdplp: UMNN loss not finite at epoch %d", epoch)
		}
		res.Loss = append(res.Loss, loss)
	}
	return res, nil
}
