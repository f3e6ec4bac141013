package release

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/dplp/dplp/accountant"
	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/graph"
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
}

// listWorker is one goroutine's buffers for list releases.
type listWorker struct {
	ev   *score.Worker // nil when the evidence scorer is the base scorer
	evr  score.Result
	q    list.Query
	scr  list.Scratch
	idx  []int
	ord  candOrder // seeded canonical order's radix buffers
	zero []int32
	seen map[int32]struct{}
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
	r.infl = newInfluence(g, p, evKind, r.order)
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
	// Seeded: canonical (ascending id) order, so the list is a function of
	// the candidate set.
	lw.idx = lw.ord.order(res.Cands, r.seed != nil, lw.idx[:0])
	q := &lw.q
	q.Pub, q.Evid, q.Count = q.Pub[:0], q.Evid[:0], q.Count[:0]
	for _, i := range lw.idx {
		v := res.Cands[i]
		q.Pub = append(q.Pub, res.Pub[i])
		s, ps := evw.At(v)
		q.Evid = append(q.Evid, s-ps)
		q.Count = append(q.Count, ps)
	}
	if lr.ev == r.sc {
		q.Count = nil
	}
	q.Zero = res.Zero
	q.L1 = lr.ev.Evidence(u, lr.unit).L1
	q.MaxEvid = r.g.Degree(u)
	rng := rngFor(r.seed, r.g.Label(u), stream, ws.crypto)
	lo, err := list.Release(q, lr.spec.Eps, lr.spec.Combine, k, rng, &lw.scr)
	if err != nil {
		return Outcome{}, fmt.Errorf("release: user %s: %w", r.g.Label(u), err)
	}
	out := Outcome{Exact: !lo.Noisy, Delta: q.L1, Candidates: q.N(), ListEps: lo.Cost}
	ids, err := r.mapList(lw, ws.w, res, lo.IDs, rng)
	if err != nil {
		return Outcome{}, fmt.Errorf("release: user %s: %w", r.g.Label(u), err)
	}
	out.IDs = ids
	return out, nil
}

// mapList turns list.Release's candidate indexes into node ids: explicit
// candidates through the (canonical) order, zero-block indexes j into
// members of the block. The zero block is exchangeable (s = s_pub = 0,
// evidence 0), so any uniformly random injection of the drawn indexes into
// its members has the mechanism's distribution: the ascending list when the
// block is small against the graph, else rejection draws through InZero.
func (r *Recommender) mapList(lw *listWorker, w *score.Worker, res *score.Result, picks []int, rng *rand.Rand) ([]int32, error) {
	nc := len(lw.idx)
	out := make([]int32, 0, len(picks))
	blockPicks := 0
	for _, p := range picks {
		if p >= nc {
			blockPicks++
		}
	}
	n := r.g.N()
	useList := blockPicks > 0 && int64(res.Zero)*8 < int64(n)
	if useList {
		lw.zero = w.ZeroCands(lw.zero[:0])
		if len(lw.zero) != res.Zero {
			return nil, fmt.Errorf("zero block lists %d members, want %d", len(lw.zero), res.Zero)
		}
	} else if blockPicks > 0 {
		if lw.seen == nil {
			lw.seen = map[int32]struct{}{}
		}
		clear(lw.seen)
	}
	for _, p := range picks {
		switch {
		case p < nc:
			out = append(out, res.Cands[lw.idx[p]])
		case useList:
			out = append(out, lw.zero[p-nc])
		default:
			for tries := 0; ; tries++ {
				v := int32(rng.IntN(n))
				if _, dup := lw.seen[v]; !dup && w.InZero(v) {
					lw.seen[v] = struct{}{}
					out = append(out, v)
					break
				}
				if tries > 1000*n {
					return nil, fmt.Errorf("could not draw a zero-block member (block of %d in %d nodes)", res.Zero, n)
				}
			}
		}
	}
	return out, nil
}

// listGuarantee describes a dplp-list list charged cost (eps or 0).
func (r *Recommender) listGuarantee(cost float64, seeded bool) Guarantee {
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
		g.Text = ListText(ch, lr.unit)
	}
	return g
}

// ListText is the guarantee text of a list charged ch under unit, e.g.
// "1-DP for this user's list under the pair unit (dplp-list, one charge per
// list whatever K; rho 0.5 zCDP); a party with m protected pairs gets m x 1
// (group privacy)".
func ListText(ch accountant.Charge, unit privunit.Unit) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%g-DP for this user's list under the %s unit (dplp-list, one charge per list whatever K; rho %g zCDP)", ch.Eps, unit, ch.Rho)
	if unit == privunit.Pair {
		fmt.Fprintf(&b, "; a party with m protected pairs gets m x %g (group privacy)", ch.Eps)
	} else {
		b.WriteString("; any subset of one party's protected pairs (Definition 1)")
	}
	return b.String()
}
