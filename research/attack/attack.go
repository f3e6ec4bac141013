// Package attack measures what an attacker learns from released
// recommendation lists, as a complement to the exact audit (package audit)
// that proves the calibration on tiny graphs. Each attack is a
// distinguishing game in the style of Jagielski et al. (2020) and Nasr et
// al. (2021): a secret bit b is drawn per trial, the attacker observes
// released lists computed on G_b, where G_0 and G_1 are neighbouring for
// every observing user (they differ only in protected pairs not incident to
// the observer, privacy-model §2), and guesses b. The lists are produced by
// the deployed release path: score.Scorer on G_b, calib.Config.Plan,
// release.Sampler.Sample (the sampler release.Recommender and the Beam
// pipeline use). Over N trials the true- and false-positive rates
// give, with Clopper-Pearson intervals, an empirical lower bound eps_lb on
// the privacy loss (EpsLowerBound), to compare with the claimed eps.
//
// Threat model. The attacker is the strongest the definition allows: it
// knows the whole graph and the protection marks except the secret pairs,
// and the mechanism. It decides with a likelihood-ratio test on one feature
// per list, the position of the target candidate (or its absence): the log
// ratio of the feature's probabilities under b = 1 and b = 0 is estimated
// from lists simulated on the attacker's own copies of G_0 and G_1 (with
// independent randomness), summed over all observed lists, and compared
// with a threshold chosen on separately simulated games (never on the
// evaluated trials). For the exponential mechanism and CN, the position of
// the target is a sufficient statistic (only its utility differs between
// G_0 and G_1), so the test is the Neyman-Pearson test up to estimation
// error.
//
// Privacy units (Config.Unit, privacy-model §16). The unit decides how the
// attacked release is calibrated and what is claimed. The per-pick
// mechanisms keep their party-unit calibration (Delta_s(u) bounds a whole
// party) under both units: a party-unit guarantee is also a pair-unit one
// at the same cost (§16.6), so their lists, and the claim, are the same.
// dplp-list (Config.DPLPList: the Laplace mechanism on the private
// evidence vector, mech/list, charged eps per list whatever K) is
// calibrated to L1(u) = score.Scorer.Evidence(u, unit).L1 of its evidence
// score: the pair-unit bound is smaller, by up to the number of a party's
// pairs. Its claim is eps per list under the unit; under the pair unit a
// secret of m protected pairs of one party is claimed m x eps per list
// (group privacy, privunit.GroupCost), so OnePair plays the pair unit's
// own neighbouring graphs. dplp-list is attacked with its default
// combination (list.DefaultPosterior: W = 1, A = 0.3, rho =
// list.PriorRho), i.e. without the training check's veto, which can only
// replace it by public-only at cost 0.
//
// Attacks:
//
//   - Triad (the paper's threat): a query user u; the secret is whether
//     the protected pairs {w, x}, x in N(u) ∩ prot(w), exist for a
//     non-neighbour w of u (one u-neighbouring step; OnePair toggles just
//     one of them). They complete triads through u's neighbours and raise
//     s(u, w). The target (u, w) is chosen deterministically from the
//     attacker's knowledge: users whose w crosses the top-K boundary by the
//     widest margin, then, among a shortlist, the one whose simulated
//     feature distributions differ most.
//   - Sybil (Backstrom et al. 2007): the attacker adds S fake nodes, linked
//     to each other and to a target a (attacker-controlled, public edges),
//     and reads the sybils' own lists to learn whether the protected pair
//     {a, c} exists: c then becomes a common-neighbour candidate of every
//     sybil. Each sybil is a separate user; the coalition's claim is the
//     sum of their budgets (privacy-model §6).
//   - NoNoise: a triad attack restricted to users with no protected edge of
//     their own, for whom the reference calibration (the authors' code)
//     releases the exact top-K; targets are chosen for the exact top-K, so
//     the same targets are attacked under every calibration.
package attack

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/dplp/dplp/accountant"
	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/internal/par"
	"github.com/dplp/dplp/mech/list"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/release"
	"github.com/dplp/dplp/score"
)

// Kind is an attack.
type Kind int

// The attacks.
const (
	Triad Kind = iota
	Sybil
	NoNoise
)

var kindNames = []string{"triad", "sybil", "no-noise"}

func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return fmt.Sprintf("Kind(%d)", int(k))
	}
	return kindNames[k]
}

// ParseKind parses "triad", "sybil" or "no-noise".
func ParseKind(s string) (Kind, error) {
	for i, n := range kindNames {
		if strings.EqualFold(strings.TrimSpace(s), n) {
			return Kind(i), nil
		}
	}
	return 0, fmt.Errorf("unknown attack %q (want triad, sybil or no-noise)", s)
}

// Config is one attack experiment.
type Config struct {
	Attack      Kind
	Method      calib.Method
	Calibration calib.Calibration
	Score       score.Kind
	Eps         float64       // eps_p per pick; dplp-list: eps per list
	Unit        privunit.Unit // privacy unit of the calibration and the claim (zero value: Party)
	DPLPList    bool          // release with dplp-list instead of Method (Calibration must be rigorous)
	K           int           // list length
	Lists       int           // fresh lists each observer requests per trial (0: 1)
	Trials      int           // evaluated trials (games)
	Sybils      int           // sybil attack: number of fake nodes (0: 3)
	OnePair     bool          // triad, no-noise: the secret is one pair {w, x} instead of all of w's pairs into N(u)
	CalibGames  int           // simulated games per hypothesis for the threshold (0: Trials)
	HistLists   int           // simulated lists per hypothesis and observer for the feature distributions (0: 4000)
	Shortlist   int           // triad, no-noise: targets simulated during selection (0: 12)
	Seed        uint64
	// OnTrial, when set, is called after every evaluated trial, from
	// several goroutines at once (for progress display).
	OnTrial func()

	// deltaScale multiplies every plan's sensitivity and noise scale
	// (0 means 1). Test-only: it builds a deliberately mis-calibrated
	// release that the attacks must catch.
	deltaScale float64
}

func (c *Config) defaults() {
	if c.Lists == 0 {
		c.Lists = 1
	}
	if c.Sybils == 0 {
		c.Sybils = 3
	}
	if c.CalibGames == 0 {
		c.CalibGames = c.Trials
	}
	if c.HistLists == 0 {
		c.HistLists = 4000
	}
	if c.Shortlist == 0 {
		c.Shortlist = 12
	}
	if c.deltaScale == 0 {
		c.deltaScale = 1
	}
}

// Validate checks the configuration (after defaults).
func (c *Config) Validate() error {
	switch {
	case c.Attack < 0 || int(c.Attack) >= len(kindNames):
		return fmt.Errorf("attack: invalid attack %d", c.Attack)
	case c.K < 1:
		return fmt.Errorf("attack: k must be >= 1, got %d", c.K)
	case c.Lists < 1:
		return fmt.Errorf("attack: lists must be >= 1, got %d", c.Lists)
	case c.Trials < 2:
		return fmt.Errorf("attack: trials must be >= 2, got %d", c.Trials)
	case c.Sybils < 1 || c.Sybils > 64:
		return fmt.Errorf("attack: sybils must be in [1,64], got %d", c.Sybils)
	case c.CalibGames < 2 || c.HistLists < 10 || c.Shortlist < 1:
		return fmt.Errorf("attack: calibration games >= 2, histogram lists >= 10 and shortlist >= 1 required")
	case c.Score == score.Bounded:
		return fmt.Errorf("attack: only the triad scores (cn, aa, ra, jc, pa) are supported")
	case !c.Unit.Valid():
		return fmt.Errorf("attack: invalid privacy unit %d", c.Unit)
	}
	if c.DPLPList {
		if c.Calibration != calib.Rigorous {
			return fmt.Errorf("attack: dplp-list is calibrated to its evidence bound L1(u); it has no %s calibration", c.Calibration)
		}
		if err := accountant.CheckEps(c.Eps); err != nil {
			return fmt.Errorf("attack: dplp-list: %w", err)
		}
		return nil
	}
	cc := c.calibConfig()
	return cc.Validate()
}

func (c *Config) calibConfig() *calib.Config {
	return &calib.Config{Method: c.Method, Calibration: c.Calibration, Kind: c.Score, Eps: c.Eps}
}

// mechanism is the attacked release: a per-pick calibration (cc), or
// dplp-list at eps per list calibrated under unit.
type mechanism struct {
	cc    *calib.Config // per-pick mechanisms; nil for dplp-list
	list  bool
	eps   float64
	unit  privunit.Unit
	scale float64 // Config.deltaScale
}

// mechanism returns the configured release (after defaults).
func (c *Config) mechanism() *mechanism {
	if c.DPLPList {
		return &mechanism{list: true, eps: c.Eps, unit: c.Unit, scale: c.deltaScale}
	}
	return &mechanism{cc: c.calibConfig(), unit: c.Unit, scale: c.deltaScale}
}

// Target describes the attacked secret.
type Target struct {
	Observers []string    `json:"observers"`    // users whose lists the attacker reads
	Candidate string      `json:"candidate"`    // the candidate whose position is the feature
	Pairs     [][2]string `json:"secret_pairs"` // protected pairs present iff b = 1
}

// Result is the outcome of an attack. Rates are over the evaluated trials;
// intervals are Clopper-Pearson at Confidence.
type Result struct {
	Graph         string     `json:"graph,omitempty"`
	Attack        string     `json:"attack"`
	Method        string     `json:"method"`
	Calibration   string     `json:"calibration"`
	Score         string     `json:"score"`
	Unit          string     `json:"unit,omitempty"` // privacy unit; omitted for per-pick party-unit results (every result written before units existed)
	EpsP          float64    `json:"eps_p"`
	EpsList       float64    `json:"eps_list,omitempty"`    // dplp-list: eps per list (eps_p is then 0)
	EvidenceL1    []float64  `json:"evidence_l1,omitempty"` // dplp-list: each observer's L1(u) under the unit (Laplace scale L1(u)/eps_list)
	K             int        `json:"k"`
	Lists         int        `json:"lists"`
	Trials        int        `json:"trials"`
	Positives     int        `json:"positives"` // trials with b = 1
	TPR           float64    `json:"tpr"`
	TPRCI         [2]float64 `json:"tpr_ci95"`
	FPR           float64    `json:"fpr"`
	FPRCI         [2]float64 `json:"fpr_ci95"`
	Accuracy      float64    `json:"accuracy"`
	EpsClaimed    *float64   `json:"eps_claimed"` // null: no finite claim (non-private)
	ClaimProven   bool       `json:"claim_proven"`
	ClaimNote     string     `json:"claim_note"`
	EpsLowerBound float64    `json:"eps_lower_bound"`
	ExceedsClaim  bool       `json:"exceeds_claim"` // eps_lower_bound > eps_claimed: the claim is refuted at 95%
	Threshold     float64    `json:"threshold"`
	CalibGames    int        `json:"calibration_games"`
	HistLists     int        `json:"histogram_lists"`
	Seed          uint64     `json:"seed"`
	Target        Target     `json:"target"`
}

// Claimed is the claimed eps as a number (+Inf when there is no claim).
func (r *Result) Claimed() float64 {
	if r.EpsClaimed == nil {
		return math.Inf(1)
	}
	return *r.EpsClaimed
}

// game is the pair of worlds and who observes what.
type game struct {
	g      [2]*graph.Graph
	p      *protect.Set
	sc     [2]*score.Scorer
	obs    []int32
	target int32
	pairs  int // secret pairs
	info   Target

	// dplp-list: the evidence scorers (== sc when the evidence score is
	// the base score) and the combination.
	ev   [2]*score.Scorer
	comb list.Combine
}

// newGame builds the game; dplpList also prepares dplp-list's evidence
// scorers and its default combination (the prior scale rho reads only the
// marks and the non-protected edges, which G_0 and G_1 share).
func newGame(g0, g1 *graph.Graph, p *protect.Set, k score.Kind, obs []int32, target int32, pairs []graph.Edge, dplpList bool) (*game, error) {
	gm := &game{g: [2]*graph.Graph{g0, g1}, p: p, obs: obs, target: target, pairs: len(pairs)}
	for b := range 2 {
		sc, err := score.New(gm.g[b], p, k)
		if err != nil {
			return nil, err
		}
		gm.sc[b] = sc
	}
	if dplpList {
		ek := list.EvidenceKind(k)
		for b := range 2 {
			gm.ev[b] = gm.sc[b]
			if ek != k {
				ev, err := score.New(gm.g[b], p, ek)
				if err != nil {
					return nil, err
				}
				gm.ev[b] = ev
			}
		}
		gm.comb = *list.DefaultPosterior(list.PriorRho(g0, p)).Default
	}
	for _, o := range obs {
		gm.info.Observers = append(gm.info.Observers, g1.Label(o))
	}
	gm.info.Candidate = g1.Label(target)
	for _, e := range pairs {
		gm.info.Pairs = append(gm.info.Pairs, [2]string{g1.Label(e.U), g1.Label(e.V)})
	}
	return gm, nil
}

// sim releases lists of the game's observers; one per goroutine.
type sim struct {
	k      int
	target int32
	res    [2][]score.Result
	wk     [2][]*score.Worker
	plan   [2][]calib.Plan
	n      [2]int          // nodes of G_0 and G_1
	rel    release.Sampler // the deployed sampler
	lst    *listSim        // dplp-list's release (nil for per-pick mechanisms)
}

// queryOf is what the calibration sees for observer r.U on g: the
// invariant sensitivities, and for the reference calibration the
// observer's own protected-edge count and the graph's maximum degree, as
// the authors' code computes them (privacy-model §9).
func queryOf(cc *calib.Config, g *graph.Graph, p *protect.Set, r *score.Result) calib.Query {
	q := calib.QueryOf(r)
	if cc.Calibration == calib.Reference {
		for _, x := range p.Of(r.U) {
			if g.HasEdge(r.U, x) {
				q.RefA++
			}
		}
		q.RefMaxDeg = g.MaxDegree()
	}
	return q
}

func newSim(gm *game, m *mechanism, k int) *sim {
	s := &sim{k: k, target: gm.target}
	if m.list {
		s.lst = newListSim(gm, m)
		return s
	}
	cc, deltaScale := m.cc, m.scale
	for b := range 2 {
		s.n[b] = gm.g[b].N()
		s.res[b] = make([]score.Result, len(gm.obs))
		s.wk[b] = make([]*score.Worker, len(gm.obs))
		s.plan[b] = make([]calib.Plan, len(gm.obs))
		for i, o := range gm.obs {
			w := gm.sc[b].NewWorker()
			w.Score(o, &s.res[b][i])
			s.wk[b][i] = w
			pl := cc.Plan(queryOf(cc, gm.g[b], gm.p, &s.res[b][i]))
			if deltaScale != 1 {
				pl.Delta *= deltaScale
				pl.Scale *= deltaScale
				pl.Stair.Delta *= deltaScale
			}
			s.plan[b][i] = pl
		}
	}
	return s
}

// feature releases one list of observer i in world b and returns the
// target's position in it (1..K), or 0 when it is absent.
func (s *sim) feature(b, i int, rng *rand.Rand) (int, error) {
	if s.lst != nil {
		return s.lst.feature(b, i, s.k, s.target, rng)
	}
	// The zero block is listed (InZero nil) rather than drawn by rejection:
	// the same distribution (its members are exchangeable) with a random
	// stream that does not depend on the graph's size.
	in := release.InputOf(s.wk[b][i], &s.res[b][i], s.n[b], false)
	in.InZero = nil
	out, err := s.rel.Sample(&s.plan[b][i], &in, s.k, rng)
	if err != nil {
		return 0, err
	}
	for j, v := range out.IDs {
		if v == s.target {
			return j + 1, nil
		}
	}
	return 0, nil
}

// Random streams (randx.Derive tags).
const (
	tagSelect uint64 = iota + 0x61747461636b00 // "attack"
	tagHist
	tagCalib
	tagTrial
)

// parallel runs job(i) for i in [0, n) on GOMAXPROCS goroutines (par.Run);
// mk makes one job function per goroutine (so it can own state). It returns
// the error of the lowest failing index.
func parallel(n int, mk func() func(i int) error) error {
	return par.Run(context.Background(), n, par.Options{}, func(int) func(int) error { return mk() },
		func(job func(int) error, i int) error { return job(i) })
}

// histograms simulates lists per hypothesis and observer on the attacker's
// copies and returns smoothed log ratios ln(P1(f)/P0(f)) per observer and
// feature f in [0, K].
func histograms(gm *game, m *mechanism, cfg *Config, tag uint64, lists int) ([][]float64, error) {
	nobs := len(gm.obs)
	fe := make([]int, 2*nobs*lists)
	err := parallel(2*nobs, func() func(int) error {
		s := newSim(gm, m, cfg.K)
		return func(j int) error {
			b, i := j/nobs, j%nobs
			for l := range lists {
				rng := randx.Derive(cfg.Seed, tag, uint64(b), uint64(i), uint64(l))
				f, err := s.feature(b, i, rng)
				if err != nil {
					return err
				}
				fe[j*lists+l] = f
			}
			return nil
		}
	})
	if err != nil {
		return nil, err
	}
	lr := make([][]float64, nobs)
	for i := range nobs {
		var cnt [2][]float64
		for b := range 2 {
			cnt[b] = make([]float64, cfg.K+1)
			for _, f := range fe[(b*nobs+i)*lists : (b*nobs+i+1)*lists] {
				cnt[b][f]++
			}
		}
		lr[i] = logRatios(cnt[0], cnt[1])
	}
	return lr, nil
}

// logRatios turns feature counts into smoothed log ratios (add-1/2,
// Krichevsky-Trofimov, so features never seen under one hypothesis get a
// large but finite weight).
func logRatios(c0, c1 []float64) []float64 {
	var n0, n1 float64
	for f := range c0 {
		n0 += c0[f]
		n1 += c1[f]
	}
	d := 0.5 * float64(len(c0))
	out := make([]float64, len(c0))
	for f := range c0 {
		out[f] = math.Log((c1[f]+0.5)/(n1+d)) - math.Log((c0[f]+0.5)/(n0+d))
	}
	return out
}

// divergence is the symmetrised KL (Jeffreys) divergence of the smoothed
// feature distributions, the selection criterion among shortlisted targets.
func divergence(c0, c1 []float64) float64 {
	var n0, n1 float64
	for f := range c0 {
		n0 += c0[f]
		n1 += c1[f]
	}
	d := 0.5 * float64(len(c0))
	j := 0.0
	for f := range c0 {
		p0, p1 := (c0[f]+0.5)/(n0+d), (c1[f]+0.5)/(n1+d)
		j += (p1 - p0) * math.Log(p1/p0)
	}
	return j
}

// play runs one game in world b and returns the statistic.
func play(s *sim, lr [][]float64, lists, b int, rng *rand.Rand) (float64, error) {
	t := 0.0
	for i := range lr {
		for range lists {
			f, err := s.feature(b, i, rng)
			if err != nil {
				return 0, err
			}
			t += lr[i][f]
		}
	}
	return t, nil
}

// chooseThreshold picks the decision "guess 1 iff T > thr" on calibration
// games: the largest empirical lower bound, then the best accuracy, then
// the threshold nearest 0.
func chooseThreshold(t0, t1 []float64) float64 {
	t0, t1 = slices.Clone(t0), slices.Clone(t1)
	slices.Sort(t0)
	slices.Sort(t1)
	cands := append(slices.Clone(t0), t1...)
	slices.Sort(cands)
	cands = slices.Compact(cands)
	cands = append([]float64{math.Inf(-1)}, cands...)
	above := func(xs []float64, thr float64) int {
		i, _ := slices.BinarySearch(xs, math.Nextafter(thr, math.Inf(1)))
		return len(xs) - i
	}
	best, bestEps, bestAcc := 0.0, -1.0, -1
	for _, thr := range cands {
		tp, fp := above(t1, thr), above(t0, thr)
		eps := EpsLowerBound(tp, len(t1), fp, len(t0), Confidence)
		acc := tp + len(t0) - fp
		better := eps > bestEps+1e-12 || (math.Abs(eps-bestEps) <= 1e-12 &&
			(acc > bestAcc || (acc == bestAcc && math.Abs(thr) < math.Abs(best))))
		if better {
			best, bestEps, bestAcc = thr, eps, acc
		}
	}
	return best
}

// Run plays the configured attack on graph g with protection marks p.
func Run(g *graph.Graph, p *protect.Set, cfg Config) (*Result, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if p == nil {
		p = protect.Empty(g.N())
	}
	if p.N() != g.N() {
		return nil, fmt.Errorf("attack: protection set has %d nodes, graph has %d", p.N(), g.N())
	}
	m := cfg.mechanism()
	var gm *game
	var err error
	switch cfg.Attack {
	case Sybil:
		gm, err = sybilGame(g, p, &cfg)
	default:
		gm, err = triadGame(g, p, &cfg, m)
	}
	if err != nil {
		return nil, err
	}
	lr, err := histograms(gm, m, &cfg, tagHist, cfg.HistLists)
	if err != nil {
		return nil, err
	}
	// Threshold from separately simulated games.
	tcal := make([]float64, 2*cfg.CalibGames)
	err = parallel(len(tcal), func() func(int) error {
		s := newSim(gm, m, cfg.K)
		return func(j int) error {
			var e error
			tcal[j], e = play(s, lr, cfg.Lists, j%2, randx.Derive(cfg.Seed, tagCalib, uint64(j)))
			return e
		}
	})
	if err != nil {
		return nil, err
	}
	var t0, t1 []float64
	for j, t := range tcal {
		if j%2 == 0 {
			t0 = append(t0, t)
		} else {
			t1 = append(t1, t)
		}
	}
	thr := chooseThreshold(t0, t1)
	// Evaluated trials.
	type outcome struct{ b, guess int }
	out := make([]outcome, cfg.Trials)
	err = parallel(cfg.Trials, func() func(int) error {
		s := newSim(gm, m, cfg.K)
		return func(j int) error {
			rng := randx.Derive(cfg.Seed, tagTrial, uint64(j))
			b := int(rng.Uint64() & 1)
			t, e := play(s, lr, cfg.Lists, b, rng)
			if e != nil {
				return e
			}
			out[j] = outcome{b: b}
			if t > thr {
				out[j].guess = 1
			}
			if cfg.OnTrial != nil {
				cfg.OnTrial()
			}
			return nil
		}
	})
	if err != nil {
		return nil, err
	}
	var n1, tp, fp, correct int
	for _, o := range out {
		n1 += o.b
		if o.b == 1 && o.guess == 1 {
			tp++
		}
		if o.b == 0 && o.guess == 1 {
			fp++
		}
		if o.b == o.guess {
			correct++
		}
	}
	n0 := cfg.Trials - n1
	res := &Result{
		Attack: cfg.Attack.String(), Method: cfg.Method.String(), Calibration: cfg.Calibration.String(),
		Score: cfg.Score.String(), EpsP: cfg.Eps, K: cfg.K, Lists: cfg.Lists, Trials: cfg.Trials, Positives: n1,
		Accuracy: float64(correct) / float64(cfg.Trials), Threshold: thr,
		CalibGames: cfg.CalibGames, HistLists: cfg.HistLists, Seed: cfg.Seed, Target: gm.info,
	}
	if cfg.Method == calib.NonPrivate || cfg.Method == calib.PublicOnly {
		res.EpsP = 0
	}
	if cfg.DPLPList || cfg.Unit != privunit.Party {
		res.Unit = cfg.Unit.String()
	}
	if cfg.DPLPList {
		res.Method, res.Calibration, res.EpsP, res.EpsList = DPLPList, calib.Rigorous.String(), 0, cfg.Eps
		res.EvidenceL1 = newListSim(gm, m).l1s()
	}
	if n1 > 0 {
		res.TPR = float64(tp) / float64(n1)
	}
	if n0 > 0 {
		res.FPR = float64(fp) / float64(n0)
	}
	res.TPRCI[0], res.TPRCI[1] = ClopperPearson(tp, n1, Confidence)
	res.FPRCI[0], res.FPRCI[1] = ClopperPearson(fp, n0, Confidence)
	res.EpsLowerBound = EpsLowerBound(tp, n1, fp, n0, Confidence)
	if cfg.DPLPList {
		listClaim(res, &cfg, gm)
	} else {
		claim(res, m.cc, &cfg, len(gm.obs))
	}
	return res, nil
}

// claim fills the claimed eps of the whole observation: every observer's L
// lists, each charged the method's per-list guarantee (basic composition;
// for several observers, the sum of their budgets bounds the coalition,
// privacy-model §6).
func claim(res *Result, cc *calib.Config, cfg *Config, observers int) {
	per, proven := cc.Guarantee(cfg.K)
	lists := observers * cfg.Lists
	var notes []string
	if math.IsInf(per, 1) {
		res.ClaimNote = "non-private release: no guarantee"
		return
	}
	v := per * float64(lists)
	res.EpsClaimed = &v
	res.ClaimProven = proven
	res.ExceedsClaim = res.EpsLowerBound > v
	switch {
	case cc.Calibration == calib.Reference:
		notes = append(notes, "the paper's nominal claim; the reference calibration does not meet it (privacy-model §9)")
	case !proven:
		notes = append(notes, fmt.Sprintf("no proven guarantee for K > 1; %g x K x eps_p is the paper's nominal claim", float64(lists)))
	default:
		notes = append(notes, "proven")
	}
	notes = append(notes, fmt.Sprintf("%d list(s) of %d picks (%d observer(s) x %d), %g per list", lists, cfg.K, observers, cfg.Lists, per))
	if cfg.Unit == privunit.Pair {
		notes = append(notes, "pair unit: calibrated to the party unit (Delta_s(u) bounds a whole party), which implies the pair-unit guarantee at the same cost (privacy-model §16.6)")
	}
	if observers > 1 {
		notes = append(notes, "a coalition's claim is the sum of its members' budgets (privacy-model §6)")
	}
	res.ClaimNote = strings.Join(notes, "; ")
}
