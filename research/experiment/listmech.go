package experiment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/mech/list"
	"github.com/dplp/dplp/mech/topk"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/ranking"
	"github.com/dplp/dplp/research/evaluate"
	"github.com/dplp/dplp/research/protocol"
	"github.com/dplp/dplp/score"
)

// listVersion versions the cells of dplp-list, gaussVersion those of
// dplp-list-gauss (gauss-v2: CN's exact party-unit l2 bound), perturbVersion
// those of perturb-once, topkVersion those of joint-em and oneshot-topk
// (cellKey).
const (
	listVersion    = "list-v8"
	gaussVersion   = "gauss-v2"
	perturbVersion = "list-v6"
	topkVersion    = "topk-v1"
)

// The list-level methods (docs/privacy-model.md §16).
//
// dplp-list: for every evaluation query u, the private evidence
// e(v) = s - s_pub of every candidate is released once with Laplace noise
// of scale L1(u)/eps (score.Scorer.Evidence under the cell's unit) and the
// list is ranked by s_pub + W max(0, e~ - tau) (mech/list). The
// combination (W, T) is chosen by list.Fit on invariant data: the split's
// public training graph with a seeded share sigma of its edges marked
// pseudo-protected (evaluate.PseudoProtect, as DPLP-pub), scored with those
// marks, the dev positives and negatives as labelled candidates, the
// evidence bound L1 of the training scorer under the same unit, and noise
// at the cell's eps. A list costs eps (0 when the fit keeps W = 0 or
// L1(u) = 0); eps_list is the mean over queries.
//
// perturb-once: randomised response on every protected pair of the test
// graph at eps (list.PerturbOnce), then the non-private ranking of the
// unchanged scorer on the perturbed graph; eps_list is the release's cost
// (list.PerturbOnceCost: eps per pair, eps x the largest party under the
// party unit), paid once for every list.
//
// joint-em and oneshot-topk (mech/topk, docs/privacy-model.md §16.8): for
// every evaluation query u, the ranking score c(v) = L s_pub(v) + w e(v) of
// every candidate (the base score's public part, weighted by L = 1, or by
// the L of joint-em:L and oneshot-topk:L; the evidence score's private
// evidence, as dplp-list's; w the base score's mean weight per public
// wedge, 1 for CN, topk.Scores) is released through the joint
// exponential mechanism over length-K sequences or one-shot Gumbel top-K,
// calibrated to the per-coordinate bound w Linf(u) of the evidence under
// the cell's unit (Evidence(u, unit).Linf; monotone moves under the pair
// unit, topk.Monotone). Nothing is fitted. A list costs eps (0 when
// Linf(u) = 0); eps_list is the mean over queries.

// evidenceKind is list.EvidenceKind: the score whose private evidence
// dplp-list releases for a base score.
func evidenceKind(k score.Kind) score.Kind { return list.EvidenceKind(k) }

// listFitQueries caps the training queries a fit uses (evenly spaced).
const listFitQueries = 400

// listFitReps is the number of noise draws per training query.
const listFitReps = 4

// listTrainEntry memoises one split's training data for a predictor and
// unit; listFitEntry one fitted combination.
type listTrainEntry struct {
	once sync.Once
	qs   []list.TrainQuery
	err  error
	pub  []float64 // the evidence kind's public scores (listTrainPub)
}

type listFitEntry struct {
	once    sync.Once
	c       list.Combine
	rep     list.FitReport
	scale   float64
	evScale float64
	rho     float64
	secs    float64
	err     error
}

// listScaleEntry memoises the mean public score of a split's evaluation
// candidates for a predictor.
type listScaleEntry struct {
	once sync.Once
	mean float64
	err  error
}

// listScale is the ratio of the mean positive public score of the
// evaluation candidates (scored on the test graph) to that of the training
// candidates (public training graph with pseudo-protected edges): the
// typical magnitude of a candidate's wedge evidence where there is some. The
// training graph holds a fraction of the test graph's edges, so its wedge
// counts, public and pseudo-private alike, are several times smaller while
// the noise is the same: Fit on the raw training data would see a far
// lower signal-to-noise ratio than the release. Scaling the training
// scores by this ratio restores the release's scale. It reads public
// scores only (invariant, §10), and the evaluation candidate sets, which
// the clean and deployment protocols draw from invariant data (§12).
func (r *runner) listScale(split *protocol.Split, c cell, kind score.Kind, train []float64) (float64, error) {
	e := r.listScales.get(fmt.Sprint(r.splitID(c), "\x00", kind))
	e.once.Do(func() {
		sc, err := score.New(split.Test, split.Prot, kind)
		if err != nil {
			e.err = err
			return
		}
		sums := make([]float64, len(split.Queries))
		cnts := make([]int, len(split.Queries))
		idx := make(map[int32]int, len(split.Queries))
		for i, q := range split.Queries {
			idx[q] = i
		}
		bufs := make([][]int32, runtime.GOMAXPROCS(0))
		e.err = sc.EachWorker(split.Queries, func(w int, wk *score.Worker, res *score.Result) {
			i := idx[res.U]
			bufs[w] = split.Candidates(i, bufs[w])
			for _, v := range bufs[w] {
				if _, ps := wk.At(v); ps > 0 {
					sums[i] += ps
					cnts[i]++
				}
			}
		})
		var s float64
		var n int
		for i := range sums {
			s += sums[i]
			n += cnts[i]
		}
		if n > 0 {
			e.mean = s / float64(n)
		}
	})
	if e.err != nil {
		return 0, e.err
	}
	return list.MeanRatio(e.mean, train), nil
}

// scaled is list.ScaleTrain.
func scaled(qs []list.TrainQuery, f, g float64) []list.TrainQuery { return list.ScaleTrain(qs, f, g) }

// splitID names a split within a run.
func (r *runner) splitID(c cell) string {
	return fmt.Sprint(r.p.datasets[c.ds], "\x00", c.prot, "\x00", c.sigma, "\x00", c.seed)
}

// listTrain returns the invariant training queries of dplp-list for the
// cell's split, predictor and unit.
func (r *runner) listTrain(split *protocol.Split, c cell) ([]list.TrainQuery, error) {
	e := r.listTrains.get(fmt.Sprint(r.splitID(c), "\x00", c.pred.name, "\x00", c.unit))
	e.once.Do(func() {
		seed := derivedSeed("list-pseudo", r.p.datasets[c.ds], c.prot, c.sigma, c.seed)
		marks, err := evaluate.PseudoProtect(split, 0, seed)
		if err != nil {
			e.err = err
			return
		}
		sc, err := score.New(split.Train, marks, c.pred.spec.Kind)
		if err != nil {
			e.err = err
			return
		}
		ev := sc
		if k := evidenceKind(c.pred.spec.Kind); k != c.pred.spec.Kind {
			if ev, err = score.New(split.Train, marks, k); err != nil {
				e.err = err
				return
			}
		}
		stride := max(1, (len(split.TrainQueries)+listFitQueries-1)/listFitQueries)
		var qids []int32
		var idx []int
		for i := 0; i < len(split.TrainQueries); i += stride {
			qids = append(qids, split.TrainQueries[i])
			idx = append(idx, i)
		}
		out, evPub, err := list.TrainData(sc, ev, c.unit, qids, func(j int) (pos, neg []int32) {
			return split.DevPos[idx[j]], split.DevNeg[idx[j]]
		})
		e.qs, e.err = out, err
		if ev != sc {
			pe := r.listTrains.get(fmt.Sprint(r.splitID(c), "\x00", c.pred.name, "\x00", c.unit, "\x00pub", ev.Kind()))
			for _, p := range evPub {
				pe.pub = append(pe.pub, p...)
			}
		}
	})
	return e.qs, e.err
}

// listFit returns the combination of dplp-list for the cell (memoised per
// split, predictor, unit, eps and k).
func (r *runner) listFit(split *protocol.Split, c cell) (*listFitEntry, error) {
	gauss := c.method.list == "dplp-list-gauss"
	e := r.listFits.get(fmt.Sprint(r.splitID(c), "\x00", c.pred.name, "\x00", c.unit, "\x00", c.eps, "\x00", c.k, "\x00", gauss))
	e.once.Do(func() {
		t0 := time.Now()
		qs, err := r.listTrain(split, c)
		if err != nil {
			e.err = err
			return
		}
		// Public scores scale with the base score's public part, evidence
		// with the evidence score's (listScale).
		pubScale, err := r.listScale(split, c, c.pred.spec.Kind, r.listTrainPub(split, c, c.pred.spec.Kind, qs))
		if err != nil {
			e.err = err
			return
		}
		evScale := pubScale
		if k := evidenceKind(c.pred.spec.Kind); k != c.pred.spec.Kind {
			if evScale, err = r.listScale(split, c, k, r.listTrainPub(split, c, k, qs)); err != nil {
				e.err = err
				return
			}
		}
		qs = scaled(qs, pubScale, evScale)
		e.scale, e.evScale = pubScale, evScale
		seed := derivedSeed("list-fit", r.p.datasets[c.ds], c.pred.name, c.prot, c.sigma, c.unit, c.eps, c.k, c.seed)
		e.rho = listRho(split)
		grid := list.DefaultPosterior(e.rho)
		if gauss {
			grid = grid.Gaussian()
			seed = derivedSeed("list-fit-gauss", seed)
		}
		e.c, e.rep, e.err = list.Fit(qs, c.eps, c.k, grid, listFitReps, randx.Derive(seed))
		e.secs = time.Since(t0).Seconds()
		if e.err == nil {
			r.lg.detail("experiment: fitted %s %s %s unit=%s eps=%v: scales %.2f/%.2f rho %.3f chose %+v (training AUC@K %.4f vs public-only %.4f; top %+v gain %.4f se %.4f; %d queries, %.1fs)",
				c.method.list, r.p.datasets[c.ds], c.pred.display(), c.unit, c.eps, e.scale, e.evScale, e.rho, e.c, e.rep.AUC, e.rep.PublicAUC, e.rep.Top, e.rep.TopGain, e.rep.TopSE, e.rep.Queries, e.secs)
		}
	})
	return e, e.err
}

// oneList evaluates a cell of a list-level method.
func (r *runner) oneList(ctx context.Context, split *protocol.Split, u *unit, scorer func(cell, string) (*score.Scorer, error)) error {
	c := u.c
	if err := ctx.Err(); err != nil {
		return err
	}
	var res Result
	seed := derivedSeed("eval", u.hash)
	t0 := time.Now()
	switch c.method.list {
	case "dplp-list", "dplp-list-gauss":
		fe, err := r.listFit(split, c)
		if err != nil {
			return fmt.Errorf("experiment: %s: %w", r.describe(c), err)
		}
		sc, err := scorer(c, roleTest)
		if err != nil {
			return err
		}
		ev := sc
		if k := evidenceKind(c.pred.spec.Kind); k != c.pred.spec.Kind {
			e := r.listTests.get(fmt.Sprint(r.splitID(c), "\x00", k))
			e.once.Do(func() { e.sc, e.err = score.New(split.Test, split.Prot, k) })
			if e.err != nil {
				return e.err
			}
			ev = e.sc
		}
		if fe.c.W == 0 {
			// The fit kept public-only: the list is the public-only release
			// (cost 0), evaluated with the public-only cell's random ties so
			// that the two rows are paired exactly.
			po, _ := parseMethod(calib.PublicOnly.String())
			c2 := c
			c2.method = po
			pseed := derivedSeed("eval", hashKey(r.p.key(c2, u.key.GraphSHA)))
			cfg := calib.Config{Method: calib.PublicOnly, Calibration: calib.Rigorous, Kind: c.pred.spec.Kind}
			er, err := r.h.eval(split, sc, cfg, c.k, pseed)
			if err != nil {
				return fmt.Errorf("experiment: %s: %w", r.describe(c), err)
			}
			res.TopK, res.Queries, res.ZeroNoise = er.Mean, er.Queries, er.Queries
			res.ListCost = finitePtr(0)
		} else {
			lr, err := evalList(split, sc, ev, c.unit, c.eps, fe.c, c.k, seed)
			if err != nil {
				return fmt.Errorf("experiment: %s: %w", r.describe(c), err)
			}
			res.TopK, res.Queries, res.ZeroNoise = lr.mean, lr.queries, lr.zero
			res.ListCost = finitePtr(lr.cost)
		}
		comb, rep := fe.c, fe.rep
		res.Combine, res.ListFit = &comb, &rep
		res.TrainSeconds = fe.secs
	case "joint-em", "oneshot-topk":
		m, err := topk.Parse(c.method.list)
		if err != nil {
			return err
		}
		sc, err := scorer(c, roleTest)
		if err != nil {
			return err
		}
		ev := sc
		if k := evidenceKind(c.pred.spec.Kind); k != c.pred.spec.Kind {
			e := r.listTests.get(fmt.Sprint(r.splitID(c), "\x00", k))
			e.once.Do(func() { e.sc, e.err = score.New(split.Test, split.Prot, k) })
			if e.err != nil {
				return e.err
			}
			ev = e.sc
		}
		lr, err := evalTopK(split, sc, ev, c.unit, m, max(1, c.method.pubW), c.eps, c.k, seed)
		if err != nil {
			return fmt.Errorf("experiment: %s: %w", r.describe(c), err)
		}
		res.TopK, res.Queries, res.ZeroNoise = lr.mean, lr.queries, lr.zero
		res.ListCost = finitePtr(lr.cost)
	case "perturb-once":
		rr := randx.Derive(derivedSeed("perturb-once", r.p.datasets[c.ds], c.prot, c.sigma, c.eps, c.seed))
		pert, err := list.PerturbOnce(split.Test, split.Prot, c.eps, rr)
		if err != nil {
			return fmt.Errorf("experiment: %s: %w", r.describe(c), err)
		}
		sc, err := score.New(pert, split.Prot, c.pred.spec.Kind)
		if err != nil {
			return err
		}
		s2 := *split
		s2.Test = pert
		cfg := calib.Config{Method: calib.NonPrivate, Calibration: calib.Rigorous, Kind: c.pred.spec.Kind}
		er, err := r.h.eval(&s2, sc, cfg, c.k, seed)
		if err != nil {
			return fmt.Errorf("experiment: %s: %w", r.describe(c), err)
		}
		res.TopK, res.Queries = er.Mean, er.Queries
		res.ROCAUC = finitePtr(er.ROCAUC)
		res.ListCost = finitePtr(list.PerturbOnceCost(split.Prot, c.unit, c.eps))
	default:
		return fmt.Errorf("experiment: unknown list method %q", c.method.list)
	}
	res.Seconds = time.Since(t0).Seconds()
	n, err := r.record(u, &res)
	if err != nil {
		return err
	}
	r.lg.detail("[%d/%d] %s: AUC@K %.4f over %d queries, eps per list %.3g (%.2fs)", n, r.total, r.describe(c), res.AUC, res.Queries, deref(res.ListCost), res.Seconds)
	return nil
}

func deref(x *float64) float64 {
	if x == nil {
		return math.NaN()
	}
	return *x
}

// listResult is evalList's outcome.
type listResult struct {
	mean    ranking.TopK
	queries int
	zero    int     // lists released at cost 0
	cost    float64 // mean charged eps per list
}

// evalList releases a dplp-list list for every evaluation query of the
// split (candidates and labels from the split, scores from sc on
// split.Test) and averages the metrics; query i's noise comes from
// randx.Derive(seed, i), so results do not depend on scheduling.
func evalList(s *protocol.Split, sc, ev *score.Scorer, unit privunit.Unit, eps float64, comb list.Combine, k int, seed uint64) (listResult, error) {
	if sc.Graph() != s.Test || ev.Graph() != s.Test {
		return listResult{}, errors.New("the scorers must score the split's test graph")
	}
	// Evidence first (ev may be another scorer than sc), then the release.
	idx0 := make(map[int32]int, len(s.Queries))
	for i, q := range s.Queries {
		idx0[q] = i
	}
	evid, counts, bounds, err := gatherEvidence(s, ev, ev != sc, unit, idx0)
	if err != nil {
		return listResult{}, err
	}
	l1 := make([]float64, len(s.Queries))
	l2 := make([]float64, len(s.Queries))
	for i, b := range bounds {
		l1[i], l2[i] = b.L1, b.L2
	}
	nw := runtime.GOMAXPROCS(0)
	type acc struct {
		cands []int32
		q     list.Query
		scr   list.Scratch
		rel   []bool
	}
	accs := make([]acc, nw)
	perQ := make([]ranking.TopK, len(s.Queries))
	costQ := make([]float64, len(s.Queries))
	idx := idx0
	var mu sync.Mutex
	var firstErr error
	err = sc.EachWorker(s.Queries, func(w int, wk *score.Worker, r *score.Result) {
		a := &accs[w]
		i := idx[r.U]
		a.cands = s.Candidates(i, a.cands)
		a.q.Pub, a.q.Zero = a.q.Pub[:0], 0
		for _, v := range a.cands {
			_, pv := wk.At(v)
			a.q.Pub = append(a.q.Pub, pv)
		}
		a.q.Evid, a.q.L1, a.q.L2 = evid[i], l1[i], l2[i]
		a.q.Count, a.q.MaxEvid = nil, s.Test.Degree(r.U)
		if counts != nil {
			a.q.Count = counts[i]
		}
		out, err := list.Release(&a.q, eps, comb, k, randx.Derive(seed, uint64(i)), &a.scr)
		if err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
			return
		}
		a.rel = a.rel[:0]
		for _, id := range out.IDs {
			a.rel = append(a.rel, s.Label(i, a.cands[id]))
		}
		perQ[i] = ranking.Evaluate(a.rel, len(s.TestPos[i]), k)
		costQ[i] = out.Cost
		if comb.Gauss {
			// rho-zCDP, not pure DP: eps_list is the eps with the same zCDP
			// (rho = eps^2 / 2), the axis on which Laplace lists are compared.
			costQ[i] = math.Sqrt(2 * out.Rho)
		}
	})
	if err == nil {
		err = firstErr
	}
	if err != nil {
		return listResult{}, err
	}
	return summariseList(perQ, costQ), nil
}

// evalTopK releases a joint-em or oneshot-topk list (mechanism m) for
// every evaluation query of the split: candidates and labels from the
// split, public scores from sc and private evidence from ev (both on
// split.Test), c = topk.Scores (the public score weighted by lambda >= 1,
// the evidence by the base score's mean weight per public wedge when ev is
// another score), calibrated to
// w x ev.Evidence(u, unit).Linf; query i's noise comes from
// randx.Derive(seed, i).
func evalTopK(s *protocol.Split, sc, ev *score.Scorer, unit privunit.Unit, m topk.Mechanism, lambda, eps float64, k int, seed uint64) (listResult, error) {
	if sc.Graph() != s.Test || ev.Graph() != s.Test {
		return listResult{}, errors.New("the scorers must score the split's test graph")
	}
	idx := make(map[int32]int, len(s.Queries))
	for i, q := range s.Queries {
		idx[q] = i
	}
	nw := runtime.GOMAXPROCS(0)
	evid, counts, bounds, err := gatherEvidence(s, ev, ev != sc, unit, idx)
	if err != nil {
		return listResult{}, err
	}
	linf := make([]float64, len(s.Queries))
	for i, b := range bounds {
		linf[i] = b.Linf
	}
	mono := topk.Monotone(ev.Kind(), unit)
	type acc struct {
		cands   []int32
		pub, c  []float64
		scratch topk.Scratch
		rel     []bool
	}
	accs := make([]acc, nw)
	perQ := make([]ranking.TopK, len(s.Queries))
	costQ := make([]float64, len(s.Queries))
	var mu sync.Mutex
	var firstErr error
	err = sc.EachWorker(s.Queries, func(w int, wk *score.Worker, r *score.Result) {
		a := &accs[w]
		i := idx[r.U]
		a.cands = s.Candidates(i, a.cands)
		a.pub = a.pub[:0]
		for _, v := range a.cands {
			_, pv := wk.At(v)
			a.pub = append(a.pub, pv)
		}
		var cnt []float64
		if counts != nil {
			cnt = counts[i]
		}
		var wt float64
		a.c, wt = topk.Scores(a.c, a.pub, evid[i], cnt, lambda)
		ids, cost, err := topk.Release(m, a.c, wt*linf[i], mono, eps, k, randx.Derive(seed, uint64(i)), &a.scratch)
		if err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
			return
		}
		a.rel = a.rel[:0]
		for _, id := range ids {
			a.rel = append(a.rel, s.Label(i, a.cands[id]))
		}
		perQ[i] = ranking.Evaluate(a.rel, len(s.TestPos[i]), k)
		costQ[i] = cost
	})
	if err == nil {
		err = firstErr
	}
	if err != nil {
		return listResult{}, err
	}
	return summariseList(perQ, costQ), nil
}

// listTrainPub returns the public scores of kind on the training
// candidates: the training queries' Pub when kind is the base score, else
// the evidence kind's public scores on the training graph (pseudo marks),
// from listTrainPubs.
func (r *runner) listTrainPub(split *protocol.Split, c cell, kind score.Kind, qs []list.TrainQuery) []float64 {
	if kind == c.pred.spec.Kind {
		var out []float64
		for _, q := range qs {
			out = append(out, q.Pub...)
		}
		return out
	}
	e := r.listTrains.get(fmt.Sprint(r.splitID(c), "\x00", c.pred.name, "\x00", c.unit, "\x00pub", kind))
	return e.pub
}

// listRho is list.PriorRho of the split's test graph and marks.
func listRho(s *protocol.Split) float64 { return list.PriorRho(s.Test, s.Prot) }

// gatherEvidence scores every evaluation query of the split with ev (on
// split.Test) and returns, per query (idx maps a query to its position),
// the private evidence s - s_pub of each of its split candidates, their
// public counts when withCounts (the evidence score is not the base score),
// and the evidence bounds under unit: what the list-level methods release.
func gatherEvidence(s *protocol.Split, ev *score.Scorer, withCounts bool, unit privunit.Unit, idx map[int32]int) (evid, counts [][]float64, bounds []score.EvidenceBound, err error) {
	evid = make([][]float64, len(s.Queries))
	bounds = make([]score.EvidenceBound, len(s.Queries))
	if withCounts {
		counts = make([][]float64, len(s.Queries))
	}
	cbuf := make([][]int32, runtime.GOMAXPROCS(0))
	err = ev.EachWorker(s.Queries, func(w int, wk *score.Worker, r *score.Result) {
		i := idx[r.U]
		cbuf[w] = s.Candidates(i, cbuf[w])
		e := make([]float64, len(cbuf[w]))
		var cn []float64
		if counts != nil {
			cn = make([]float64, len(cbuf[w]))
			counts[i] = cn
		}
		for j, v := range cbuf[w] {
			sv, pv := wk.At(v)
			e[j] = sv - pv
			if cn != nil {
				cn[j] = pv
			}
		}
		evid[i] = e
		bounds[i] = ev.Evidence(r.U, unit)
	})
	return evid, counts, bounds, err
}

// summariseList averages the per-query metrics and charges of a list-level
// cell, in query order (so the total does not depend on scheduling), and
// counts the lists released at cost 0.
func summariseList(perQ []ranking.TopK, costQ []float64) listResult {
	var res listResult
	for i := range perQ {
		res.mean.Add(perQ[i])
		res.cost += costQ[i]
		if costQ[i] == 0 {
			res.zero++
		}
	}
	res.queries = len(perQ)
	if res.queries > 0 {
		res.mean.Scale(1 / float64(res.queries))
		res.cost /= float64(res.queries)
	}
	return res
}
