// Package audit is the exact privacy audit of privacy-model §8. On seeded
// random small graphs it enumerates, for every query u, every other node w
// and every subset of w's toggleable protected pairs, the u-neighbouring
// graph G', runs each mechanism's whole pipeline (scores, sensitivity,
// calibration, utilities) on G and on G' independently, and compares the
// exact probabilities of every released list:
//
//   - exponential mechanism and exact top-K: every ordered list of length
//     K <= MaxK, by the product of softmax factors;
//   - Laplace peeling: every ordered list of length K <= 2, as the product
//     of per-round selection probabilities (fresh noise every round);
//   - one-shot Laplace and staircase: K = 1 selection probabilities by
//     numerical integration.
//
// The worst |ln(P_G / P_G')| is compared with the guarantee the mechanism
// claims (calib.Config.Guarantee). The audit also checks the base-score
// bound of privacy-model §4 (|s - s'| <= Delta_s(u)), that s_pub, Delta_s and
// S_max are unchanged (they are invariant by construction), and, with a
// chi-square test, that each sampler's empirical list frequencies match the
// exact distribution.
package audit

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/mech"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/score"
)

// Config selects what the audit covers.
type Config struct {
	Seed               uint64
	Graphs             int // random graphs per score kind
	MinNodes, MaxNodes int
	EdgeProb           float64 // edge probability of the random graphs
	ProtEdgeFrac       float64 // fraction of edges protected
	ProtNonEdgeFrac    float64 // fraction of non-edges protected
	Kinds              []score.Kind
	Methods            []calib.Method
	Calibration        calib.Calibration
	Eps                float64
	MaxK               int // longest list audited (exponential / exact)
	// Transforms, when set for a kind, audits the learned utility (DPLP:
	// compiled table, Delta_f) instead of the raw score.
	Transforms map[score.Kind]calib.Transform
	// Label names the transform family in the report (e.g. "dplp").
	Label      string
	ChiSamples int // draws per chi-square test (0: no sampler test)
	ChiCases   int // (graph, query) cases tested per method and kind
	// Unit is the privacy unit the mechanisms are calibrated for
	// (calib.Config.Unit; party: Delta_s(u), pair: the pair-unit
	// per-candidate bound, privacy-model §16.6). Neighbours is the unit of
	// the neighbouring graphs enumerated: party (every non-empty subset of
	// one party's pairs) or pair (one protected pair). Run uses Unit when
	// Neighbours is unset (NeighboursSet false); a pair calibration
	// audited against party neighbours is the negative control that must
	// fail (a party with several pairs exceeds the pair-unit eps).
	Unit          privunit.Unit
	Neighbours    privunit.Unit
	NeighboursSet bool
}

// neighbours is the unit of the neighbouring graphs Run enumerates.
func (c *Config) neighbours() privunit.Unit {
	if c.NeighboursSet {
		return c.Neighbours
	}
	return c.Unit
}

// Default is the configuration `dplp audit` runs: every triad score, every
// mechanism that claims a guarantee, rigorous calibration.
func Default() Config {
	return Config{
		Seed: 1, Graphs: 12, MinNodes: 6, MaxNodes: 9, EdgeProb: 0.45, ProtEdgeFrac: 0.3, ProtNonEdgeFrac: 0.15,
		Kinds:   score.Kinds(),
		Methods: []calib.Method{calib.Exponential, calib.LaplacePeeling, calib.Laplace, calib.Staircase, calib.PublicOnly},
		Eps:     0.5, MaxK: 3, ChiSamples: 20000, ChiCases: 2,
	}
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	switch {
	case c.Graphs < 1:
		return fmt.Errorf("audit: graphs must be >= 1")
	case c.MinNodes < 3 || c.MaxNodes < c.MinNodes || c.MaxNodes > 12:
		return fmt.Errorf("audit: need 3 <= min nodes <= max nodes <= 12, got %d..%d", c.MinNodes, c.MaxNodes)
	case !(c.Eps > 0) || math.IsInf(c.Eps, 1):
		return fmt.Errorf("audit: eps must be a finite number > 0")
	case c.MaxK < 1 || c.MaxK > 4:
		return fmt.Errorf("audit: max K must be in [1,4]")
	case !(c.EdgeProb > 0 && c.EdgeProb < 1):
		return fmt.Errorf("audit: edge probability must be in (0,1)")
	case !(c.ProtEdgeFrac >= 0 && c.ProtEdgeFrac <= 1 && c.ProtNonEdgeFrac >= 0 && c.ProtNonEdgeFrac <= 1):
		return fmt.Errorf("audit: protection fractions must be in [0,1]")
	case len(c.Kinds) == 0 || len(c.Methods) == 0:
		return fmt.Errorf("audit: need at least one score kind and one method")
	case !c.Unit.Valid() || !c.neighbours().Valid():
		return fmt.Errorf("audit: invalid privacy unit (calibration %v, neighbours %v)", c.Unit, c.neighbours())
	}
	return nil
}

// Case describes one audited pair of neighbouring graphs.
type Case struct {
	Method    string       `json:"method"`
	Score     string       `json:"score"`
	K         int          `json:"k"`
	Nodes     int          `json:"nodes"`
	Edges     []graph.Edge `json:"edges"`
	Protected []graph.Edge `json:"protected"`
	U         int32        `json:"u"`
	W         int32        `json:"w"`
	Toggled   []int32      `json:"toggled"` // x such that {w, x} is toggled
	List      []int32      `json:"list"`    // released list (candidate ids)
	LogP      float64      `json:"log_p_g"`
	LogPPrime float64      `json:"log_p_g_prime"`
	LogRatio  float64      `json:"log_ratio"`
	Bound     float64      `json:"bound"`
}

// Row summarises one (method, K) combination.
type Row struct {
	Method     string  `json:"method"`
	K          int     `json:"k"`
	Cases      int64   `json:"cases"`
	Worst      float64 `json:"worst_log_ratio"`
	Bound      float64 `json:"bound"`
	Proven     bool    `json:"proven"`
	Violations int64   `json:"violations"`
}

// ChiResult is one sampler test.
type ChiResult struct {
	Method string  `json:"method"`
	Score  string  `json:"score"`
	K      int     `json:"k"`
	Stat   float64 `json:"stat"`
	DF     int     `json:"df"`
	P      float64 `json:"p_value"`
}

// Report is the audit's outcome. WorstLogRatio and Bound are those of the
// case closest to (or furthest beyond) its bound.
type Report struct {
	Calibration     string      `json:"calibration"`
	Unit            string      `json:"unit"`       // the unit the mechanisms are calibrated for
	Neighbours      string      `json:"neighbours"` // the unit of the neighbouring graphs enumerated
	Transform       string      `json:"transform"`
	Eps             float64     `json:"eps"`
	Seed            uint64      `json:"seed"`
	Cases           int64       `json:"cases"`
	WorstLogRatio   float64     `json:"worst_log_ratio"`
	Bound           float64     `json:"bound"`
	Violations      int64       `json:"violations"`
	ScoreChecks     int64       `json:"score_checks"`
	ScoreViolations int64       `json:"score_violations"` // |s - s'| > Delta_s, or s_pub/Delta_s/S_max changed
	Worst           *Case       `json:"worst_case"`
	Rows            []Row       `json:"by_method"`
	Chi             []ChiResult `json:"chi_square"`
	ChiFailures     int         `json:"chi_square_failures"`
	MinChiP         float64     `json:"min_chi_square_p"`
}

// Infinite log-ratios (a list possible in one graph and not the other) are
// reported as this value so that JSON stays numeric.
const InfRatio = 1e9

// chiAlpha is the per-test rejection level; tests are few, so a sampler bug
// shows up as p far below it while correct samplers pass with overwhelming
// probability.
const chiAlpha = 1e-6

const tol = 1e-9

// Passed reports whether no privacy violation, score-bound violation or
// sampler mismatch was found.
func (r *Report) Passed() bool {
	return r.Violations == 0 && r.ScoreViolations == 0 && r.ChiFailures == 0
}

// query is one query's view of a graph under the audited pipeline.
type query struct {
	cands  []int32
	s, pub []float64
	info   calib.Query
}

func buildQuery(g *graph.Graph, p *protect.Set, k score.Kind, u int32) (query, error) {
	sc, err := score.New(g, p, k)
	if err != nil {
		return query{}, err
	}
	var q query
	for v := int32(0); int(v) < g.N(); v++ {
		if v != u && !g.HasEdge(u, v) {
			q.cands = append(q.cands, v)
			s, pub := score.Pair(g, p, k, u, v)
			q.s = append(q.s, s)
			q.pub = append(q.pub, pub)
		}
	}
	ds, sm := sc.Sensitivity(u)
	a := 0
	for _, x := range p.Of(u) {
		if g.HasEdge(u, x) {
			a++
		}
	}
	q.info = calib.Query{DeltaS: ds, SMax: sm, RefA: a, RefMaxDeg: g.MaxDegree(), DeltaPair: sc.Evidence(u, privunit.Pair).Linf}
	return q, nil
}

// utilities applies a plan to a query's scores.
func utilities(plan *calib.Plan, q *query) []float64 {
	out := make([]float64, len(q.s))
	for i := range q.s {
		out[i] = plan.Utility(q.s[i], q.pub[i])
	}
	return out
}

// dist is an exact distribution over ordered lists of length k (indices
// into the candidate list), in log space.
type dist struct {
	lists [][]int
	logp  []float64
}

func allLists(n, k int) [][]int {
	var out [][]int
	cur := make([]int, 0, k)
	used := make([]bool, n)
	var rec func()
	rec = func() {
		if len(cur) == k {
			out = append(out, slices.Clone(cur))
			return
		}
		for i := 0; i < n; i++ {
			if !used[i] {
				used[i] = true
				cur = append(cur, i)
				rec()
				cur = cur[:len(cur)-1]
				used[i] = false
			}
		}
	}
	rec()
	return out
}

// exactDist computes the distribution of the plan's released list of
// length k on utilities vals, or ok=false when the method has no exact form
// at this k.
func exactDist(cfg *calib.Config, plan *calib.Plan, vals []float64, k int) (dist, bool, error) {
	lists := allLists(len(vals), k)
	d := dist{lists: lists, logp: make([]float64, len(lists))}
	switch {
	case plan.Exact() || cfg.Method == calib.Exponential:
		scale := plan.Scale
		for i, l := range lists {
			lp, err := mech.ExpListLogProb(vals, scale, l)
			if err != nil {
				return d, false, err
			}
			d.logp[i] = lp
		}
	case cfg.Method == calib.LaplacePeeling && k <= 2:
		// Fresh noise each round: P(l1, l2) = P(l1 | all) P(l2 | all \ l1).
		first, err := mech.SelectProbs(vals, plan.Noise())
		if err != nil {
			return d, false, err
		}
		second := make([][]float64, len(vals))
		if k == 2 {
			rest := make([]float64, 0, len(vals))
			for i := range vals {
				rest = append(rest[:0], vals[:i]...)
				rest = append(rest, vals[i+1:]...)
				if len(rest) == 0 {
					continue
				}
				if second[i], err = mech.SelectProbs(rest, plan.Noise()); err != nil {
					return d, false, err
				}
			}
		}
		for i, l := range lists {
			lp := math.Log(first[l[0]])
			if k == 2 {
				j := l[1]
				if j > l[0] {
					j--
				}
				lp += math.Log(second[l[0]][j])
			}
			d.logp[i] = lp
		}
	case (cfg.Method == calib.Laplace || cfg.Method == calib.Staircase || cfg.Method == calib.LaplacePeeling) && k == 1:
		pr, err := mech.SelectProbs(vals, plan.Noise())
		if err != nil {
			return d, false, err
		}
		for i := range lists {
			d.logp[i] = math.Log(pr[lists[i][0]])
		}
	default:
		return d, false, nil
	}
	return d, true, nil
}

func maxK(cfg *calib.Config, maxK int) int {
	switch cfg.Method {
	case calib.Laplace, calib.Staircase:
		return 1
	case calib.LaplacePeeling:
		return min(2, maxK)
	}
	return maxK
}

// logRatio is |a - b| with infinities handled: both -Inf means the list is
// impossible in both graphs (ratio 0).
func logRatio(a, b float64) float64 {
	if math.IsInf(a, -1) && math.IsInf(b, -1) {
		return 0
	}
	if math.IsInf(a, -1) || math.IsInf(b, -1) {
		return InfRatio
	}
	return math.Abs(a - b)
}

// relToBound orders cases by how close they come to their bound.
func relToBound(worst, bound float64) float64 {
	if bound == 0 {
		if worst == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return worst / bound
}

// finite keeps JSON numeric: -Inf (an impossible list) becomes -InfRatio.
func finite(x float64) float64 { return max(x, -InfRatio) }

// randomGraph draws a connected-enough graph with protection marks.
func randomGraph(cfg *Config, r *rand.Rand) (*graph.Graph, *protect.Set, []graph.Edge, error) {
	for {
		n := cfg.MinNodes + r.IntN(cfg.MaxNodes-cfg.MinNodes+1)
		var edges, prot []graph.Edge
		for u := 0; u < n; u++ {
			for v := u + 1; v < n; v++ {
				e := graph.Edge{U: int32(u), V: int32(v)}
				if r.Float64() < cfg.EdgeProb {
					edges = append(edges, e)
					if r.Float64() < cfg.ProtEdgeFrac {
						prot = append(prot, e)
					}
				} else if r.Float64() < cfg.ProtNonEdgeFrac {
					prot = append(prot, e)
				}
			}
		}
		if len(edges) == 0 || len(prot) == 0 {
			continue
		}
		g, _, err := graph.FromEdges(n, edges, nil)
		if err != nil {
			return nil, nil, nil, err
		}
		p, err := protect.New(n, prot)
		if err != nil {
			return nil, nil, nil, err
		}
		return g, p, edges, nil
	}
}

type rowKey struct {
	m calib.Method
	k int
}

// Run executes the audit.
func Run(cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rep := &Report{Calibration: cfg.Calibration.String(), Unit: cfg.Unit.String(), Neighbours: cfg.neighbours().String(),
		Eps: cfg.Eps, Seed: cfg.Seed, Transform: "none", MinChiP: 1}
	if cfg.Transforms != nil {
		rep.Transform = cfg.Label
	}
	rows := map[rowKey]*Row{}
	worstRel := math.Inf(-1)
	r := randx.Derive(cfg.Seed, 0xa0d17)
	for _, kind := range cfg.Kinds {
		var tr calib.Transform
		if cfg.Transforms != nil {
			tr = cfg.Transforms[kind]
			if tr == nil {
				continue
			}
		}
		cfgs := make([]calib.Config, len(cfg.Methods))
		for i, m := range cfg.Methods {
			cfgs[i] = calib.Config{Method: m, Calibration: cfg.Calibration, Kind: kind, Eps: cfg.Eps, Transform: tr, Unit: cfg.Unit}
			if m == calib.PublicOnly {
				cfgs[i].Transform = nil
			}
			if err := cfgs[i].Validate(); err != nil {
				return nil, err
			}
		}
		chiDone := make([]int, len(cfgs))
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
				plans := make([]calib.Plan, len(cfgs))
				dists := make([][]dist, len(cfgs))
				for mi := range cfgs {
					plans[mi] = cfgs[mi].Plan(q.info)
					vals := utilities(&plans[mi], &q)
					for k := 1; k <= min(maxK(&cfgs[mi], cfg.MaxK), len(q.cands)); k++ {
						d, ok, err := exactDistQ(&cfgs[mi], &plans[mi], vals, q.pub, k)
						if err != nil {
							return nil, err
						}
						if ok {
							dists[mi] = append(dists[mi], d)
						}
					}
					if chiDone[mi] < cfg.ChiCases && cfg.ChiSamples > 0 && len(q.cands) >= 3 {
						chiDone[mi]++
						for _, d := range dists[mi] {
							res := chiTest(&plans[mi], vals, q.pub, d, cfg.ChiSamples, r)
							res.Method, res.Score = cfgs[mi].Method.String(), kind.String()
							rep.Chi = append(rep.Chi, res)
							rep.MinChiP = min(rep.MinChiP, res.P)
							if !(res.P >= chiAlpha) {
								rep.ChiFailures++
							}
						}
						// The seeded (canonical) samplers of a keyed plan:
						// the walk over ids and the keyed scan must have the
						// same exact distribution.
						if plans[mi].Keyed() && !plans[mi].Exact() {
							for _, d := range dists[mi] {
								for _, walk := range []bool{true, false} {
									res := seededChi(&plans[mi], vals, q.cands, n, d, cfg.ChiSamples, r, walk)
									res.Score = kind.String()
									rep.Chi = append(rep.Chi, res)
									rep.MinChiP = min(rep.MinChiP, res.P)
									if !(res.P >= chiAlpha) {
										rep.ChiFailures++
									}
								}
							}
						}
					}
				}
				err = eachNeighbourUnit(g, p, kind, u, &q, rep, cfg.neighbours(), func(w int32, xs []int32, q2 *query) error {
					for mi := range cfgs {
						plan2 := cfgs[mi].Plan(q2.info)
						vals2 := utilities(&plan2, q2)
						for _, d := range dists[mi] {
							k := len(d.lists[0])
							d2, _, err := exactDistQ(&cfgs[mi], &plan2, vals2, q2.pub, k)
							if err != nil {
								return err
							}
							bound, proven := cfgs[mi].Guarantee(k)
							// Per-list bound: the lexicographic plan's lists cost their random picks only.
							lb, costInvariant, err := listBound(bound, &plans[mi], &plan2, q.pub, q2.pub, k)
							if err != nil {
								return err
							}
							key := rowKey{cfgs[mi].Method, k}
							row := rows[key]
							if row == nil {
								row = &Row{Method: key.m.String(), K: k, Bound: bound, Proven: proven}
								rows[key] = row
							}
							row.Cases++
							rep.Cases++
							worstI, worst := -1, 0.0
							for li := range d.lists {
								if lr := logRatio(d.logp[li], d2.logp[li]); lr > worst || worstI < 0 {
									worst, worstI = lr, li
								}
							}
							row.Worst = max(row.Worst, worst)
							if worst > lb+tol*(1+lb) || !costInvariant {
								row.Violations++
								rep.Violations++
							}
							rel := relToBound(worst, lb)
							if rel > worstRel {
								worstRel = rel
								rep.WorstLogRatio, rep.Bound = worst, lb
								list := make([]int32, k)
								for j, c := range d.lists[worstI] {
									list[j] = q.cands[c]
								}
								rep.Worst = &Case{Method: key.m.String(), Score: kind.String(), K: k, Nodes: n, Edges: edges,
									Protected: p.Pairs(), U: u, W: w, Toggled: xs, List: list,
									LogP: finite(d.logp[worstI]), LogPPrime: finite(d2.logp[worstI]), LogRatio: worst, Bound: lb}
							}
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
	slices.SortFunc(rep.Rows, func(a, b Row) int {
		if a.Method != b.Method {
			if a.Method < b.Method {
				return -1
			}
			return 1
		}
		return a.K - b.K
	})
	return rep, nil
}

// chiTest samples the plan's mechanism and compares list frequencies with
// the exact distribution d.
func chiTest(plan *calib.Plan, vals, pub []float64, d dist, samples int, r *rand.Rand) ChiResult {
	u := &mech.Utilities{Vals: vals}
	k := len(d.lists[0])
	res, err := chiAgainst(d, samples, func(dst []int) ([]int, error) {
		dst, err := plan.SampleWithPub(u, pub, k, r, dst[:0])
		if err == nil && len(dst) != k {
			err = fmt.Errorf("audit: sampled %d of %d", len(dst), k)
		}
		return dst, err
	})
	if err != nil {
		return ChiResult{K: k, Stat: math.Inf(1), P: 0}
	}
	return res
}

// SeededWalkMethod and SeededKeyedMethod name the chi-square rows of the
// samplers of seeded (canonical) releases of a keyed plan: the walk over
// ids (mech.WalkTopK) and the draws keyed by candidate id
// (mech.ExpTopKKeyed), each against the exponential mechanism's exact list
// probabilities.
const (
	SeededWalkMethod  = "exponential-seeded-walk"
	SeededKeyedMethod = "exponential-seeded-keyed"
)

// walkInIDOrder gives the walk's draws to the ids in ascending order
// instead of a random one (the negative control of the seeded rows).
var walkInIDOrder = false

// seededChi samples the plan's list over the candidates cands (ids below
// n, utilities vals) with the walk or the keyed scan (a fresh key from r
// each draw) and compares the frequencies with d.
func seededChi(plan *calib.Plan, vals []float64, cands []int32, n int, d dist, samples int, r *rand.Rand, walk bool) ChiResult {
	k := len(d.lists[0])
	method := SeededKeyedMethod
	pos := make(map[int32]int, len(cands))
	for i, v := range cands {
		pos[v] = i
	}
	hi := slices.Max(vals)
	var ids []int32
	draw := func(dst []int) ([]int, error) {
		dst, err := mech.ExpTopKKeyed(&mech.Utilities{Vals: vals}, cands, mech.NewNoiseKey(r), k, plan.Scale, r, dst[:0])
		if err == nil && len(dst) != k {
			err = fmt.Errorf("audit: sampled %d of %d", len(dst), k)
		}
		return dst, err
	}
	if walk {
		method = SeededWalkMethod
		draw = func(dst []int) ([]int, error) {
			var err error
			if walkInIDOrder {
				ids, err = idOrderWalk(n, pos, vals, k, plan.Scale, r, ids)
			} else {
				ids, err = mech.WalkTopK(n, auditCands{pos: pos, vals: vals}, hi, k, plan.Scale, r, ids)
			}
			dst = dst[:0]
			for _, v := range ids {
				dst = append(dst, pos[v])
			}
			if err == nil && len(dst) != k {
				err = fmt.Errorf("audit: sampled %d of %d", len(dst), k)
			}
			return dst, err
		}
	}
	res, err := chiAgainst(d, samples, draw)
	if err != nil {
		res = ChiResult{K: k, Stat: math.Inf(1), P: 0}
	}
	res.Method = method
	return res
}

// auditCands is the query's candidates by id for mech.WalkTopK.
type auditCands struct {
	pos  map[int32]int
	vals []float64
}

func (c auditCands) At(v int32) (float64, bool) {
	i, ok := c.pos[v]
	if !ok {
		return 0, false
	}
	return c.vals[i], true
}

// idOrderWalk is the broken walk of the negative control: the j-th largest
// of the n Gumbel draws goes to id j.
func idOrderWalk(n int, pos map[int32]int, vals []float64, k int, scale float64, r *rand.Rand, dst []int32) ([]int32, error) {
	type kv struct {
		p  float64
		id int32
	}
	var all []kv
	z := 0.0
	for j := range n {
		z += r.ExpFloat64() / float64(n-j)
		if i, ok := pos[int32(j)]; ok {
			all = append(all, kv{vals[i] - scale*math.Log(z), int32(j)})
		}
	}
	slices.SortFunc(all, func(a, b kv) int { return cmp.Compare(b.p, a.p) })
	dst = dst[:0]
	for _, x := range all[:min(k, len(all))] {
		dst = append(dst, x.id)
	}
	return dst, nil
}

// chiAgainst draws samples lists of d's length with draw and compares their
// frequencies with the exact distribution d (chi-square).
func chiAgainst(d dist, samples int, draw func(dst []int) ([]int, error)) (ChiResult, error) {
	k := len(d.lists[0])
	index := make(map[[4]int]int, len(d.lists))
	for i, l := range d.lists {
		var key [4]int
		copy(key[:], l)
		index[key] = i
	}
	obs := make([]int, len(d.lists))
	exp := make([]float64, len(d.lists))
	for i, lp := range d.logp {
		exp[i] = math.Exp(lp)
	}
	var dst []int
	for range samples {
		var err error
		if dst, err = draw(dst); err != nil {
			return ChiResult{K: k}, err
		}
		var key [4]int
		copy(key[:], dst)
		obs[index[key]]++
	}
	stat, df, p := mech.ChiSquare(obs, exp)
	return ChiResult{K: k, Stat: stat, DF: df, P: p}, nil
}
