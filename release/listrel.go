package release

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/dplp/dplp/accountant"
	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/ledger"
	"github.com/dplp/dplp/mech/list"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/score"
)

// The list-level release of dplp-list models (mech/list;
// docs/privacy-model.md §16).
//
// Guarantee. For each user u the Recommender scores u's candidates with
// the real worker, builds list.Query from the base score's public part
// (invariant), the private evidence e = s - s_pub of the model's evidence
// score (ListSpec.Evidence) and its invariant l1 bound
// L1(u) = Scorer.Evidence(u, unit).L1, and calls list.Release once: the
// Laplace mechanism on the whole evidence vector at scale L1(u) / eps,
// then post-processing by the model's fixed combination. The list is
// eps-DP for u under the model's unit (pair: one protected pair; a party
// with m protected pairs gets m x eps by group privacy), whatever K, and
// is charged accountant.PureList(eps) — one charge per list — or nothing
// when it reads no evidence (W = 0 or L1(u) = 0). Everything that shapes
// the list besides the noisy vector (the candidate set, public scores, the
// zero block's size, L1(u), deg(u)) is invariant for u.
//
// Randomness, re-serve, idempotency, provenance and the ledger contract are
// those of every Recommender (package comment): the generator is the
// per-user crypto stream, or UserRNG(seed, label, 0) for seeded runs
// (candidates then in ascending id order, so the list is a function of the
// seed, the label and the data).
//
// Influence sets (exposure). The public part is invariant; the evidence of
// CN (the evidence score of cn, aa and ra) moves only when a protected pair
// with exactly one endpoint in N(u) is toggled, so the parties are u's
// neighbours with a protected pair and their protected partners: the
// influence set of the evidence score (influence.raw for CN, exact), JC's
// reach rule for jc and every party ("*") for pa. The exposure rows add
// the list's cost in its own unit: for a pair-unit list exposure(w) bounds
// what one of w's pairs loses; w's whole party loses up to m_w x that.

// listRel is a Recommender's list-level mechanism.
type listRel struct {
	spec model.ListSpec
	unit privunit.Unit
	ev   *score.Scorer // evidence scorer (== the base scorer when the kinds agree)

	// The party-unit l1 bounds of a pair-unit model's JC/PA evidence, for
	// every node (Evidence counts every party per call for these kinds):
	// computed on the first list that needs one.
	partyOnce sync.Once
	partyTab  []score.EvidenceBound
}

// Party-unit cost (docs/privacy-model.md §16.7.1). A pair-unit list of cost
// eps adds Laplace noise of scale b = L1_pair(u)/eps to the evidence
// vector, whose l1 change between party-unit neighbours is at most
// L1_party(u) (an invariant bound, like L1_pair(u)); the Laplace mechanism
// at scale b is therefore L1_party(u)/b-DP under the party unit:
// eps x L1_party(u)/L1_pair(u). The ledger records it as the release's
// PartyCost and caps it with the party-unit cap.

// partyL1 is Evidence(u, Party).L1 of the evidence score.
func (lr *listRel) partyL1(u int32) float64 {
	if k := lr.ev.Kind(); k == score.JC || k == score.PA {
		lr.partyOnce.Do(func() { lr.partyTab = lr.ev.EvidenceTable(privunit.Party) })
		return lr.partyTab[u].L1
	}
	return lr.ev.Evidence(u, privunit.Party).L1
}

// partyCost is the party-unit epsilon of u's list charged cost (eps or 0)
// whose evidence was released at scale l1/eps, l1 = Evidence(u, unit).L1
// (the outcome's Delta): cost for a party-unit model or a free list, else
// cost x L1_party(u)/l1 (>= cost: a pair is a subset of one party's pairs;
// computed as cost x ratio, ratio >= 1, so rounding never takes it below
// cost), ledger.Unbounded when the party bound is not finite.
func (lr *listRel) partyCost(u int32, cost, l1 float64) float64 {
	if cost == 0 || lr.unit == privunit.Party {
		return cost
	}
	pl := lr.partyL1(u)
	if !(l1 > 0) || math.IsNaN(pl) || math.IsInf(pl, 0) {
		return ledger.Unbounded
	}
	return cost * max(1, pl/l1)
}

// listWorker is one goroutine's buffers for list releases.
type listWorker struct {
	ev  *score.Worker // nil when the evidence scorer is the base scorer
	evr score.Result
	in  ListInput
	sm  Sampler
}

// newListRecommender builds a Recommender for a dplp-list model.
func newListRecommender(m *model.Model, id string, g *graph.Graph, p *protect.Set, opts ...Option) (*Recommender, error) {
	// The per-pick machinery is unused: a public-only configuration keeps
	// newRecommender's checks (it validates, reads no eps).
	r, err := newRecommender(calib.Config{Method: calib.PublicOnly}, id, m.Score, g, p, opts...)
	if err != nil {
		return nil, err
	}
	if r.sampler == SamplerExact {
		return nil, fmt.Errorf("release: the exact sampler is for per-pick models; a dplp-list model releases with the Laplace mechanism (use --sampler auto)")
	}
	kind, err := score.ParseKind(m.Score)
	if err != nil || r.sc.Kind() != kind {
		return nil, fmt.Errorf("release: dplp-list model for score %q needs that triad scorer (got %v)", m.Score, r.sc.Kind())
	}
	evKind, err := score.ParseKind(m.List.Evidence)
	if err != nil {
		return nil, err
	}
	lr := &listRel{spec: *m.List, unit: m.PrivacyUnit(), ev: r.sc}
	if evKind != kind {
		if lr.ev, err = score.New(g, p, evKind); err != nil {
			return nil, err
		}
	}
	r.list = lr
	r.infl = newInfluence(g, p, evKind, r.dict)
	return r, nil
}

// ListLevel reports whether r releases a list-level model (dplp-list).
func (r *Recommender) ListLevel() bool { return r.list != nil }

// Unit is the privacy unit of r's guarantee: the dplp-list model's unit,
// Party for per-pick mechanisms (their calibration is a party-unit bound,
// which implies the same pair-unit bound).
func (r *Recommender) Unit() privunit.Unit {
	if r.list != nil {
		return r.list.unit
	}
	return privunit.Party
}

// EpsList is the charge of one fresh list of a dplp-list model (0 for
// per-pick mechanisms: see EpsP).
func (r *Recommender) EpsList() float64 {
	if r.list != nil {
		return r.list.spec.Eps
	}
	return 0
}

// sampleList draws one user's dplp-list list (no accounting). The
// outcome's ListEps is the list's charge (eps or 0).
func (r *Recommender) sampleList(ws *workerState, u int32, k int, stream uint64) (Outcome, error) {
	lr, lw := r.list, &ws.list
	ws.w.Score(u, &ws.r)
	res := &ws.r
	evw := ws.w
	if lr.ev != r.sc {
		if lw.ev == nil {
			lw.ev = lr.ev.NewWorker()
		}
		lw.ev.Score(u, &lw.evr)
		evw = lw.ev
	}
	in := &lw.in
	in.UserInput = ws.fns.input(res, r.g.N(), r.seed != nil)
	in.Evid, in.Count = in.Evid[:0], in.Count[:0]
	for _, v := range res.Cands {
		s, ps := evw.At(v)
		in.Evid = append(in.Evid, s-ps)
		in.Count = append(in.Count, ps)
	}
	if lr.ev == r.sc {
		in.Count = nil
	}
	in.L1 = lr.ev.Evidence(u, lr.unit).L1
	in.MaxEvid = r.g.Degree(u)
	rng := rngFor(r.seed, r.g, u, stream, ws.crypto, &ws.seeded)
	out, err := lw.sm.SampleList(lr.spec.Eps, lr.spec.Combine, in, k, rng)
	if err != nil {
		return Outcome{}, fmt.Errorf("release: user %s: %w", r.g.Label(u), err)
	}
	return out, nil
}

// ListInput is one user's input to a dplp-list release: the base score's
// UserInput (candidates, public scores Pub, the zero block) plus, aligned
// with Cands, the evidence score's private evidence Evid = s - s_pub and
// its public wedge counts Count (nil when the evidence score is the base
// score: the counts are then Pub), the invariant l1 bound L1 of the
// evidence vector under the unit (score.Scorer.Evidence) and the evidence
// cap MaxEvid (deg(u)). S of the UserInput is not read.
type ListInput struct {
	UserInput
	Evid, Count []float64
	L1          float64
	MaxEvid     int
}

// SampleList releases one dplp-list list of length min(k, candidates) for
// in at eps per list under the combination c: the one implementation the
// Recommender and the Beam pipeline share. With in.Canonical the
// candidates are visited in ascending id order (so the list is a function
// of the candidate set, the generator and the data); list.Release draws
// the list; its indexes become node ids, zero-block indexes through
// members of the block: the ascending list when the block is small against
// the graph (Zero x 8 < N), else uniform rejection draws through InZero
// from rng, after the release's own draws. The zero block is exchangeable
// (s = s_pub = 0, evidence 0), so either injection has the mechanism's
// distribution. The outcome's ListEps is the charge (list.Cost: eps, or 0
// when the list reads no evidence).
func (sm *Sampler) SampleList(eps float64, c list.Combine, in *ListInput, k int, rng *rand.Rand) (Outcome, error) {
	if len(in.Pub) != len(in.Cands) || len(in.Evid) != len(in.Cands) || (in.Count != nil && len(in.Count) != len(in.Cands)) || in.Zero < 0 {
		return Outcome{}, fmt.Errorf("release: malformed list input (%d candidates, %d public scores, %d evidence values, %d counts, zero block %d)",
			len(in.Cands), len(in.Pub), len(in.Evid), len(in.Count), in.Zero)
	}
	sm.idx = sm.ord.order(in.Cands, in.Canonical, sm.idx[:0])
	q := &sm.lq
	q.Pub, q.Evid, q.Count = q.Pub[:0], q.Evid[:0], q.Count[:0]
	for _, i := range sm.idx {
		q.Pub = append(q.Pub, in.Pub[i])
		q.Evid = append(q.Evid, in.Evid[i])
		if in.Count != nil {
			q.Count = append(q.Count, in.Count[i])
		}
	}
	if in.Count == nil {
		q.Count = nil
	}
	q.Zero, q.L1, q.MaxEvid = in.Zero, in.L1, in.MaxEvid
	lo, err := list.Release(q, eps, c, k, rng, &sm.lscr)
	if err != nil {
		return Outcome{}, err
	}
	ids, err := sm.mapPicks(&in.UserInput, lo.IDs, false, rng, nil)
	if err != nil {
		return Outcome{}, err
	}
	return Outcome{IDs: ids, Exact: !lo.Noisy, Delta: q.L1, Candidates: q.N(), ListEps: lo.Cost}, nil
}

// listGuarantee describes a dplp-list list charged cost (eps or 0) whose
// party-unit cost is partyCost (+Inf: unbounded or not computed).
func (r *Recommender) listGuarantee(cost, partyCost float64, seeded bool) Guarantee {
	lr := r.list
	ch := accountant.PureList(cost)
	g := Guarantee{Mechanism: "dplp-list (Laplace mechanism on the private evidence vector, one release per list; ranked by post-processing)",
		Eps: ch.Eps, Rho: ch.Rho, Unit: lr.unit.String(), EpsList: lr.spec.Eps}
	switch {
	case seeded:
		g.Eps, g.Rho = 0, 0
		g.Text = SeededText
	case cost == 0:
		g.Text = fmt.Sprintf("0-DP under the %s unit: this list reads no private evidence (public-only ranking, or no protected pair can reach this user's evidence)", lr.unit)
	default:
		g.Text = ListText(ch, lr.unit, partyCost)
	}
	return g
}

// ListText is the guarantee text of a list charged ch under unit whose
// party-unit cost is partyCost, e.g. "1-DP for this user's list under the
// pair unit (dplp-list, one charge per list whatever K; rho 0.5 zCDP);
// under the party unit 12-DP (any subset of one party's protected pairs;
// recorded with the release)". A pair-unit list whose party cost is
// unbounded or was not computed (+Inf) states group privacy instead: a
// party with m protected pairs gets m x eps.
func ListText(ch accountant.Charge, unit privunit.Unit, partyCost float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%g-DP for this user's list under the %s unit (dplp-list, one charge per list whatever K; rho %g zCDP)", ch.Eps, unit, ch.Rho)
	if unit == privunit.Pair {
		if partyCost >= 0 && !math.IsInf(partyCost, 1) {
			fmt.Fprintf(&b, "; under the party unit %g-DP (any subset of one party's protected pairs; recorded with the release)", partyCost)
		} else {
			fmt.Fprintf(&b, "; a party with m protected pairs gets m x %g (group privacy)", ch.Eps)
		}
	} else {
		b.WriteString("; any subset of one party's protected pairs (Definition 1)")
	}
	return b.String()
}
