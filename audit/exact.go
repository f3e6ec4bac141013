package audit

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"slices"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/mech"
	"github.com/dplp/dplp/mech/exact"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/randx"
)

// ExactMethod names the exact sampler's rows in a Report.
const ExactMethod = "exponential-exact"

// ExactLazyMethod names the chi-square rows of the exact sampler with
// utilities computed on demand (exact.Sampler.TopKLazy, the deployment
// path): the same exact distribution.
const ExactLazyMethod = "exponential-exact-lazy"

// ExactAnonMethod names the chi-square rows of the deployment path with a
// block of equal utilities (the zero block): exact.Sampler.TopKLazyAnon,
// whose block picks are anonymous, mapped to a uniformly random injection
// into the block's members as release does. The same exact distribution.
const ExactAnonMethod = "exponential-exact-lazy-anon"

// chiMode is how a chi-square row samples: TopK, TopKLazy, or
// TopKLazyAnon with a block.
type chiMode uint8

const (
	chiEager chiMode = iota
	chiLazy
	chiAnon
)

var chiMethods = [...]string{chiEager: ExactMethod, chiLazy: ExactLazyMethod, chiAnon: ExactAnonMethod}

// RunExact is the exact audit of the exact base-2 exponential mechanism
// (package mech/exact, docs/SAMPLING.md) with the rigorous pipeline: on the
// same random graphs as Run, for every query u it builds the exponential
// plan (utilities and Delta from invariant data), the sampler
// exact.New(eps_p, Delta), and the exact probability of every ordered list
// of length K <= MaxK (exact.Sampler.ListLogProbs: exact rationals,
// converted to logarithms at the end); it does the same on every
// u-neighbouring G' with G”s own plan and sampler, and checks
//
//	|ln P_G(list) - ln P_G'(list)| <= K * EpsPerPick
//
// with EpsPerPick the proven per-pick eps of G's sampler (<= eps_p, so the
// bound is at most the claimed K*eps_p; the Row bound shows K*eps_p). For
// the worst list of each case the ratio is also checked without floating
// point: P/P' and P'/P <= (1/b)^(2*Dg*K) as exact rationals (ListProb),
// b^(-2 Dg) <= exp(EpsPerPick) being what the sampler proves. Score-bound
// checks are as in Run; with ChiSamples > 0 the sampler's list frequencies
// (read from a seeded ChaCha8 stream) are compared with the exact
// distribution. cfg.Methods and cfg.Calibration other than rigorous are
// ignored / refused: only the exponential mechanism has an exact sampler.
// Lexicographic plans (DPLP-pub) are not covered.
func RunExact(cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Calibration != calib.Rigorous {
		return nil, fmt.Errorf("audit: the exact sampler is audited with the rigorous calibration only")
	}
	if cfg.Unit != privunit.Party || cfg.neighbours() != privunit.Party {
		return nil, fmt.Errorf("audit: the exact sampler is audited under the party unit only")
	}
	rep := &Report{Calibration: cfg.Calibration.String(), Unit: privunit.Party.String(), Neighbours: privunit.Party.String(),
		Eps: cfg.Eps, Seed: cfg.Seed, Transform: "none", MinChiP: 1}
	if cfg.Transforms != nil {
		rep.Transform = cfg.Label
	}
	rows := map[int]*Row{}
	worstRel := math.Inf(-1)
	r := randx.Derive(cfg.Seed, 0xa0d17)
	var seed [32]byte
	for i := range 8 {
		seed[i] = byte(cfg.Seed >> (8 * i))
	}
	seed[8] = 0xe7
	rd := rand.NewChaCha8(seed)
	for _, kind := range cfg.Kinds {
		var tr calib.Transform
		if cfg.Transforms != nil {
			if tr = cfg.Transforms[kind]; tr == nil {
				continue
			}
		}
		cc := calib.Config{Method: calib.Exponential, Calibration: cfg.Calibration, Kind: kind, Eps: cfg.Eps, Transform: tr}
		if err := cc.Validate(); err != nil {
			return nil, err
		}
		chiDone := 0
		for gi := 0; gi < cfg.Graphs; gi++ {
			g, p, edges, err := randomGraph(&cfg, r)
			if err != nil {
				return nil, err
			}
			n := g.N()
			for u := int32(0); int(u) < n; u++ {
				q, err := buildQuery(g, p, kind, u)
				if err != nil {
					return nil, err
				}
				if len(q.cands) == 0 {
					continue
				}
				plan := cc.Plan(q.info)
				if plan.Lexicographic() {
					return nil, fmt.Errorf("audit: the exact sampler does not implement lexicographic plans")
				}
				vals := utilities(&plan, &q)
				s, err := exact.New(cfg.Eps, plan.Delta, nil)
				if err != nil {
					return nil, err
				}
				var dists []dist
				for k := 1; k <= min(cfg.MaxK, len(q.cands)); k++ {
					lists := allLists(len(vals), k)
					lp, err := s.ListLogProbs(vals, lists)
					if err != nil {
						return nil, err
					}
					dists = append(dists, dist{lists: lists, logp: lp})
				}
				if chiDone < cfg.ChiCases && cfg.ChiSamples > 0 && len(q.cands) >= 3 {
					chiDone++
					for _, d := range dists {
						for _, mode := range []chiMode{chiEager, chiLazy, chiAnon} {
							res, ok, err := exactChiTest(s, vals, d, cfg.ChiSamples, rd, mode)
							if err != nil {
								return nil, err
							}
							if !ok {
								continue // no block of equal utilities
							}
							res.Method, res.Score = chiMethods[mode], kind.String()
							rep.Chi = append(rep.Chi, res)
							rep.MinChiP = min(rep.MinChiP, res.P)
							if !(res.P >= chiAlpha) {
								rep.ChiFailures++
							}
						}
					}
				}
				err = eachNeighbour(g, p, kind, u, &q, rep, func(w int32, xs []int32, q2 *query) error {
					plan2 := cc.Plan(q2.info)
					vals2 := utilities(&plan2, q2)
					s2, err := exact.New(cfg.Eps, plan2.Delta, nil)
					if err != nil {
						return err
					}
					for _, d := range dists {
						k := len(d.lists[0])
						lp2, err := s2.ListLogProbs(vals2, d.lists)
						if err != nil {
							return err
						}
						bound := float64(k) * s.EpsPerPick()
						row := rows[k]
						if row == nil {
							row = &Row{Method: ExactMethod, K: k, Bound: float64(k) * cfg.Eps, Proven: true}
							rows[k] = row
						}
						row.Cases++
						rep.Cases++
						worstI, worst := -1, 0.0
						for li := range d.lists {
							if lr := logRatio(d.logp[li], lp2[li]); lr > worst || worstI < 0 {
								worst, worstI = lr, li
							}
						}
						row.Worst = max(row.Worst, worst)
						ok, err := exactRatioOK(s, vals, vals2, d.lists[worstI])
						if err != nil {
							return err
						}
						if worst > bound+tol*(1+bound) || !ok {
							row.Violations++
							rep.Violations++
						}
						if rel := relToBound(worst, bound); rel > worstRel {
							worstRel = rel
							rep.WorstLogRatio, rep.Bound = worst, bound
							list := make([]int32, k)
							for j, c := range d.lists[worstI] {
								list[j] = q.cands[c]
							}
							rep.Worst = &Case{Method: ExactMethod, Score: kind.String(), K: k, Nodes: n, Edges: edges,
								Protected: p.Pairs(), U: u, W: w, Toggled: xs, List: list,
								LogP: finite(d.logp[worstI]), LogPPrime: finite(lp2[worstI]), LogRatio: worst, Bound: bound}
						}
					}
					return nil
				})
				if err != nil {
					return nil, err
				}
			}
		}
	}
	for _, row := range rows {
		rep.Rows = append(rep.Rows, *row)
	}
	slices.SortFunc(rep.Rows, func(a, b Row) int { return a.K - b.K })
	return rep, nil
}

// exactRatioOK checks, in exact integer arithmetic, that the list's
// probabilities p = n/d under s on vals and p2 = n2/d2 on vals2 are within
// a factor (1/b)^e = 2^(64e)/X^e of each other, e = 2*Dg*K: n*d2*X^e <=
// n2*d*2^(64e) and symmetrically (both zero also passes; Delta == 0 needs
// equality).
func exactRatioOK(s *exact.Sampler, vals, vals2 []float64, list []int) (bool, error) {
	n, d, err := s.ListProbFrac(&mech.Utilities{Vals: vals}, list)
	if err != nil {
		return false, err
	}
	n2, d2, err := s.ListProbFrac(&mech.Utilities{Vals: vals2}, list)
	if err != nil {
		return false, err
	}
	if n.Sign() == 0 || n2.Sign() == 0 {
		return n.Sign() == n2.Sign(), nil
	}
	a, b := new(big.Int).Mul(n, d2), new(big.Int).Mul(n2, d) // p/p2 = a/b
	base := s.Base()
	if base == nil {
		return a.Cmp(b) == 0, nil
	}
	e := 2 * s.GridDelta() * int64(len(list))
	xe := new(big.Int).Exp(base.Num(), big.NewInt(e), nil)
	de := new(big.Int).Exp(base.Denom(), big.NewInt(e), nil)
	// a/b <= de/xe and b/a <= de/xe.
	return new(big.Int).Mul(a, xe).Cmp(new(big.Int).Mul(b, de)) <= 0 &&
		new(big.Int).Mul(b, xe).Cmp(new(big.Int).Mul(a, de)) <= 0, nil
}

// exactChiTest samples s.TopK on vals and compares list frequencies with
// the exact distribution d. With chiLazy it samples s.TopKLazy instead, the
// values served on demand within the bounds [min, max] of vals (the
// deployment path's evaluation of proposed candidates only,
// calib.Plan.SampleScores: on one bucket's width it computes only what it
// proposes, otherwise every value). With chiAnon the candidates of the
// most frequent utility (at least two: the zero block of the graph's
// non-candidates, usually) are a block for s.TopKLazyAnon, the others
// served on demand, and each list's anonymous block picks are mapped to a
// uniformly random injection into the block's candidates (a partial
// Fisher-Yates from rd), as release's mapPicks does, and the bound below
// the individuals is a quarter of their spread under their smallest value
// (the deployment path's bound is not always attained); ok is false when
// no utility repeats.
func exactChiTest(s *exact.Sampler, vals []float64, d dist, samples int, rd *rand.ChaCha8, mode chiMode) (res ChiResult, ok bool, err error) {
	u := &mech.Utilities{Vals: vals}
	k := len(d.lists[0])
	switch mode {
	case chiLazy:
		lv := lazyVals(vals)
		lo, hi := slices.Min(vals), slices.Max(vals)
		res, err = chiAgainst(d, samples, func(dst []int) ([]int, error) { return s.TopKLazy(lv, lo, hi, nil, k, rd, dst) })
		return res, true, err
	case chiAnon:
		ind, blk := splitBlock(vals)
		if len(blk) < 2 {
			return ChiResult{}, false, nil
		}
		var iv lazyVals
		for _, i := range ind {
			iv = append(iv, vals[i])
		}
		lo, hi := vals[blk[0]], vals[blk[0]]
		if len(iv) > 0 {
			lo, hi = slices.Min(iv), slices.Max(iv)
		}
		// The deployment path states a lower bound of the scores that
		// need not be attained (score.Worker.ScoreHeld: the smallest
		// weight of a wedge), so this row's lower bound lies below the
		// smallest value: the lists must not depend on it.
		lo -= (hi - lo) / 4
		blocks := []mech.Block{{Val: vals[blk[0]], Size: len(blk)}}
		members := slices.Clone(blk)
		inj := rand.New(rd)
		res, err = chiAgainst(d, samples, func(dst []int) ([]int, error) {
			dst, err := s.TopKLazyAnon(iv, lo, hi, blocks, k, rd, dst)
			if err != nil {
				return dst, err
			}
			for j, p := range dst {
				if p < len(ind) {
					dst[j] = ind[p]
					continue
				}
				t := p - len(ind) // the t-th block pick
				x := t
				if !anonUnmapped {
					x += inj.IntN(len(members) - t)
				}
				members[t], members[x] = members[x], members[t]
				dst[j] = members[t]
			}
			return dst, nil
		})
		return res, true, err
	}
	res, err = chiAgainst(d, samples, func(dst []int) ([]int, error) { return s.TopK(u, k, rd, dst) })
	return res, true, err
}

// anonUnmapped maps the t-th anonymous block pick to the t-th member (no
// injection): the negative control of the chiAnon rows (tests only).
var anonUnmapped = false

// splitBlock splits the indices of vals into the candidates of the most
// frequent value (blk; the smallest such value on ties) and the others
// (ind), both ascending.
func splitBlock(vals []float64) (ind, blk []int) {
	count := map[float64]int{}
	for _, v := range vals {
		count[v]++
	}
	best, bestN := 0.0, 0
	for v, n := range count {
		if n > bestN || (n == bestN && v < best) {
			best, bestN = v, n
		}
	}
	for i, v := range vals {
		if v == best {
			blk = append(blk, i)
		} else {
			ind = append(ind, i)
		}
	}
	return ind, blk
}

// lazyVals serves a slice as exact.Lazy.
type lazyVals []float64

func (v lazyVals) Len() int         { return len(v) }
func (v lazyVals) At(i int) float64 { return v[i] }
