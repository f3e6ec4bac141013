package train

import (
	"cmp"
	"context"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dplp/dplp/internal/par"
	"github.com/dplp/dplp/ranking"
	"github.com/dplp/dplp/transform"
)

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
// utility, and the mean AUC@K (ranking.Evaluate, K = Config.SelectK) of
// the list the mechanism releases from the query's candidates (its
// positives and negatives) with the fixed noise draw. For dplp-pub every
// comparison is lexicographic: the public x first, then the utility, as
// the lexicographic mechanism releases.
// Cancelling ctx stops it between queries with ctx's error.
func (e *evaluator) run(ctx context.Context, f transform.Transform) (noisy, clean, atK float64, err error) {
	tf, err := transform.Compile(f, e.cfg.TableGrid)
	if err != nil {
		return 0, 0, 0, err
	}
	lex := e.cfg.Variant.Public()
	k := e.cfg.SelectK
	if k < 1 {
		k = DefaultSelectK
	}
	// Per-query results summed in query order afterwards, so the mean does
	// not depend on the number of workers.
	if len(e.noisy) < len(e.qs) {
		e.noisy, e.clean, e.atK = make([]float64, len(e.qs)), make([]float64, len(e.qs)), make([]float64, len(e.qs))
	}
	type scratch struct {
		ps                 pairScratch
		fv, up, un, qp, qn []float64
		c                  cands
	}
	err = par.Run(ctx, len(e.qs), par.Options{}, func(int) *scratch { return new(scratch) }, func(s *scratch, i int) error {
		q := &e.qs[i]
		if len(q.pos) == 0 || len(q.neg) == 0 {
			e.noisy[i], e.clean[i], e.atK[i] = nanf(), nanf(), nanf()
			return nil
		}
		s.fv = tableValues(tf, q.xs, s.fv)
		s.up, s.un = grow(s.up, len(q.pos)), grow(s.un, len(q.neg))
		for j, d := range q.pos {
			s.up[j] = s.fv[d]
		}
		for j, d := range q.neg {
			s.un[j] = s.fv[d]
		}
		delta := tf.Delta(q.dx)
		s.qp, s.qn = grow(s.qp, len(s.up)), grow(s.qn, len(s.un))
		r := rand.New(rand.NewPCG(e.seed, uint64(i)))
		for j, u := range s.up {
			s.qp[j] = e.noisyKey(u, delta, r)
		}
		for j, u := range s.un {
			s.qn[j] = e.noisyKey(u, delta, r)
		}
		if lex {
			e.clean[i] = lexAUC(q, s.up, s.un)
			e.noisy[i] = lexAUC(q, s.qp, s.qn)
		} else {
			e.clean[i] = s.ps.auc(s.up, s.un)
			e.noisy[i] = s.ps.auc(s.qp, s.qn)
		}
		e.atK[i] = s.c.aucAtK(q, s.qp, s.qn, lex, k)
		return nil
	})
	if err != nil {
		return 0, 0, 0, err
	}
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
// key) and returns its AUC@K (ranking.Evaluate).
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
	return ranking.Evaluate(c.rel, P, k).AUC
}

func tableValues(t *transform.Table, xs, buf []float64) []float64 {
	buf = grow(buf, len(xs))
	for i, x := range xs {
		buf[i] = t.Eval(x)
	}
	return buf
}
