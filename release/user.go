package release

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/dplp/dplp/calib"
	"github.com/dplp/dplp/mech"
	"github.com/dplp/dplp/mech/list"
)

// UserInput is everything one user's release reads: the scored candidates
// (any order: with Canonical they are sorted by id here, so the outcome does
// not depend on how the scorer enumerated them), the size of the zero block (candidates no
// wedge reaches, with s = s_pub = 0) and a way to draw members of it, and the
// user's invariant Delta_s and S_max. The single-machine path fills it from a
// score.Worker; the Beam pipeline from its joins. Both then call Sample with
// the user's generator, so equal inputs give equal lists.
type UserInput struct {
	N        int       // nodes in the graph (candidate ids are in [0, N))
	Cands    []int32   // candidates reached by a wedge
	S, Pub   []float64 // s and s_pub of Cands[i]; Pub may be empty when the plan does not read it (calib.Config.ReadsPublic)
	Zero     int       // further candidates with s = s_pub = 0
	InZero   func(v int32) bool
	ZeroList func(dst []int32) []int32 // ascending ids of the zero block (O(N) fallback)
	// Cand reports whether v is in Cands and its score: a lookup by id
	// (optional). With it a canonical release of a keyed plan can walk the
	// ids (calib.Plan.SampleWalk) instead of visiting every candidate.
	Cand   func(v int32) (s float64, ok bool)
	DeltaS float64
	SMax   float64
	// SRange says that SLo <= S[i] <= SHi for every i (score.Result's
	// range, found as the scores were extracted); otherwise the sampler
	// scans S for it when it needs it.
	SRange   bool
	SLo, SHi float64
	// Held, when > 0, is the number of candidates a scorer left in its
	// table (score.Worker.ScoreHeld) instead of listing them: HeldAt(i)
	// serves the i-th and its score, Cands and S are empty, and SLo may be
	// a lower bound of the scores rather than the smallest. The
	// crypto-seeded exact sampler reads only the candidates it proposes;
	// every other path copies them into Cands and S first (Sample does).
	Held   int
	HeldAt func(i int) (v int32, s float64)
	// Canonical makes the list a function of the candidate set rather
	// than of the scorer's enumeration order. Seeded runs need it
	// (reproducible at any partitioning, and equal to the Beam pipeline's
	// output); crypto-seeded releases leave it off (the distribution is
	// the same either way). A plan that samples with Gumbel top-K
	// (calib.Plan.Keyed: the float exponential mechanism, the default of
	// seeded runs) then keys each candidate's noise by its id
	// (mech.ExpTopKKeyed); every other plan sorts the candidates by id.
	Canonical bool
}

// Outcome is one user's sampled list before labels and accounting.
type Outcome struct {
	IDs   []int32 // released candidate ids, in rank order
	Picks int     // positions filled by a random pick (what is charged)
	Exact bool    // no noise: utilities are invariant (Delta = 0), 0-DP
	Delta float64 // utility sensitivity used for the noise
	// Candidates is the number of candidates sampled from.
	Candidates int
	// ListEps is a dplp-list list's charge (its eps, or 0 when it reads no
	// evidence); 0 for per-pick outcomes (their charge is Picks x eps_p).
	ListEps float64
}

// Sampler holds one goroutine's reusable buffers.
type Sampler struct {
	u     mech.Utilities
	idx   []int
	ord   candOrder // canonical order's radix buffers
	picks []int
	zero  []int32
	seen  map[int32]struct{}
	pub   []float64    // s_pub aligned with u.Vals for the lexicographic plan (which ranks by it); empty otherwise
	lq    list.Query   // SampleList
	lscr  list.Scratch // SampleList
	held  heldScores   // the held candidates' scores as a calib.ScoreSource
	flat  UserInput    // a held input copied into Cands and S (flatten)
}

// heldScores serves a UserInput's held scores (calib.ScoreSource).
type heldScores struct {
	n  int
	at func(i int) (int32, float64)
}

func (h *heldScores) Len() int { return h.n }
func (h *heldScores) Score(i int) float64 {
	_, s := h.at(i)
	return s
}

// flatten is in with its held candidates copied into Cands and S (in the
// sampler's buffers) and the scores' exact range: the input the paths that
// read every candidate take.
func (sm *Sampler) flatten(in *UserInput) *UserInput {
	f := &sm.flat
	cands, sc := f.Cands[:0], f.S[:0]
	*f = *in
	for i := range in.Held {
		v, x := in.HeldAt(i)
		cands = append(cands, v)
		sc = append(sc, x)
	}
	f.Cands, f.S, f.Pub = cands, sc, nil
	f.Held, f.HeldAt = 0, nil
	f.SLo, f.SHi, f.SRange = calib.ScoreRange(sc)
	return f
}

// noLazy turns SampleScores off (tests compare the two paths).
var noLazy = false

// Sample releases the plan's top-k list for one user from in, drawing every
// random choice from rng. With in.Canonical the result is a function of
// (in's candidates by id, plan, k, rng state) alone, whatever order the
// candidates are listed in: a keyed plan (calib.Plan.Keyed, the float
// exponential mechanism of seeded runs) walks the ids in a random order
// with the Gumbel draws in decreasing order when that visits few ids
// (calib.Plan.SampleWalk, which needs in.Cand), and otherwise gives every
// candidate a draw keyed by its id (calib.Plan.SampleScoresKeyed,
// SampleKeyed); any other plan sorts the candidates into ascending id
// order first. Members of the zero block are drawn uniformly (by rejection
// when the block is a large share of the graph, so the work is
// proportional to the user's wedges plus k, not to N; otherwise from the
// ascending list). At most min(k, candidates) ids are returned. Without
// in.Canonical, a plan with the exact sampler computes only the utilities
// of the candidates it proposes when it can (calib.Plan.SampleScores; the
// same distribution, docs/SAMPLING.md).
func (sm *Sampler) Sample(plan *calib.Plan, in *UserInput, k int, rng *rand.Rand) (Outcome, error) {
	if k < 1 {
		return Outcome{}, fmt.Errorf("release: k must be >= 1, got %d", k)
	}
	// Pub may be left out (empty) for a plan that does not read it
	// (calib.Config.ReadsPublic; score.Worker.ScoreNoPublic).
	pubOK := len(in.Pub) == len(in.Cands) || (len(in.Pub) == 0 && !plan.ReadsPublic())
	if len(in.S) != len(in.Cands) || !pubOK || in.Zero < 0 {
		return Outcome{}, fmt.Errorf("release: malformed user input (%d candidates, %d scores, %d public scores, zero block %d)", len(in.Cands), len(in.S), len(in.Pub), in.Zero)
	}
	if in.Held < 0 || (in.Held > 0 && (in.HeldAt == nil || len(in.Cands) > 0 || plan.ReadsPublic())) {
		return Outcome{}, fmt.Errorf("release: malformed user input (%d held candidates, %d listed, lookup %v, plan reads public scores %v)", in.Held, len(in.Cands), in.HeldAt != nil, plan.ReadsPublic())
	}
	// Held candidates are read in place by the crypto-seeded exact
	// sampler (calib.Plan.SampleScoresFrom) when it applies to this plan;
	// every other path reads all of them, copied.
	if in.Held > 0 && (in.Canonical || noLazy || !plan.ScoresApply() || !in.SRange) {
		in = sm.flatten(in)
	}
	sm.u.Blocks = sm.u.Blocks[:0]
	if in.Zero > 0 {
		sm.u.Blocks = append(sm.u.Blocks, mech.Block{Val: plan.Utility(0, 0), Size: in.Zero})
	}
	total := len(in.Cands) + in.Held + in.Zero
	kk := min(k, total)
	out := Outcome{Exact: plan.Exact(), Delta: plan.Delta, Candidates: total}
	if kk == 0 {
		return out, nil
	}
	// The deployment sampler computes only the utilities of the candidates
	// it proposes when it can (calib.Plan.SampleScores: the same
	// distribution); the candidates then keep the scorer's order, which the
	// distribution does not depend on, and every pick is random.
	var err error
	ident := false // the picks index in.Cands directly (sm.idx is not built)
	if !in.Canonical && !noLazy {
		if in.Held > 0 {
			sm.held = heldScores{n: in.Held, at: in.HeldAt}
			sm.picks, ident, err = plan.SampleScoresFrom(&sm.held, in.SLo, in.SHi, sm.u.Blocks, kk, rng, sm.picks[:0])
			if err == nil && !ident { // bounds it refused (nothing was drawn): every candidate read
				in = sm.flatten(in)
			}
		} else if in.SRange {
			sm.picks, ident, err = plan.SampleScoresIn(in.S, in.SLo, in.SHi, sm.u.Blocks, kk, rng, sm.picks[:0])
		} else {
			sm.picks, ident, err = plan.SampleScores(in.S, sm.u.Blocks, kk, rng, sm.picks[:0])
		}
		if err != nil {
			return out, err
		}
		if ident {
			out.Picks = len(sm.picks)
		}
	}
	// A canonical (seeded) release of a keyed plan does not sort the
	// candidates into id order. When the utilities span little of the
	// noise scale it walks the ids (about k lookups); otherwise every
	// candidate's draw is keyed by its id (the key: the user generator's
	// first two words), and utilities are computed only for candidates
	// whose draw could enter the list when the transform allows it (the
	// list is the same either way). Which of the two applies depends only
	// on invariant quantities (the scores' range, the counts, k).
	keyed := in.Canonical && plan.Keyed()
	var key mech.NoiseKey
	lo, hi, hasRange := in.SLo, in.SHi, in.SRange
	if keyed && !hasRange {
		lo, hi, hasRange = calib.ScoreRange(in.S)
	}
	if keyed && in.Cand != nil && in.InZero != nil && !noLazy {
		ids, walked, err := plan.SampleWalk(in.N, in.Cand, in.InZero, lo, hi, hasRange, len(in.Cands), in.Zero, kk, rng, out.IDs)
		if walked || err != nil {
			out.IDs = ids
			out.Picks = len(ids)
			return out, err
		}
	}
	if keyed {
		key = mech.NewNoiseKey(rng)
		if hasRange && !noLazy {
			sm.picks, ident, err = plan.SampleScoresKeyed(in.S, lo, hi, in.Cands, sm.u.Blocks, key, kk, rng, sm.picks[:0])
			if err != nil {
				return out, err
			}
			if ident { // picks index in.Cands, block members explicit
				out.Picks = len(sm.picks)
				sm.idx = sm.ord.order(in.Cands, false, sm.idx[:0])
				ids, err := sm.mapPicks(in, sm.picks, false, rng, out.IDs)
				out.IDs = ids
				return out, err
			}
		}
	}
	if !ident {
		sm.idx = sm.ord.order(in.Cands, in.Canonical && !keyed, sm.idx[:0])
		sm.u.Vals = plan.AppendUtilities(sm.u.Vals[:0], in.S, in.Pub, sm.idx)
		sm.pub = sm.pub[:0]
		if plan.Lexicographic() { // only the lexicographic plan reads the public scores
			for _, i := range sm.idx {
				sm.pub = append(sm.pub, in.Pub[i])
			}
		}
		if keyed {
			sm.picks, err = plan.SampleKeyed(&sm.u, in.Cands, key, kk, rng, sm.picks[:0])
		} else {
			sm.picks, err = plan.SampleWithPub(&sm.u, sm.pub, kk, rng, sm.picks[:0])
		}
		if err != nil {
			return out, err
		}
		// What the list is charged for: every random pick, from invariant data
		// only (0 when exact; for the lexicographic DPLP-pub plan, positions
		// fixed by the public scores are free: calib.Plan.Picks).
		if out.Picks, err = plan.Picks(&sm.u, sm.pub, kk); err != nil {
			return out, err
		}
	}
	ids, err := sm.mapPicks(in, sm.picks, ident, rng, out.IDs)
	out.IDs = ids
	if err != nil {
		return out, err
	}
	return out, nil
}

// scanMax is the most zero-block picks mapPicks checks for repeats by
// scanning the list (a set beyond); a variable for tests.
var scanMax = 64

// mapPicks appends to dst the node ids of picks, indexes into the
// candidates in the order sm.idx, or in.Cands' own order with ident
// (explicit ones, i < len(in.Cands)), or into
// the zero block (i >= len(in.Cands)). Zero-block members are exchangeable
// (equal utility, s = s_pub = 0), so any uniformly random injection of the
// block picks into the block's members has the mechanism's distribution:
// the ascending list when the block is small against the graph
// (Zero x 8 < N) or cannot be tested (InZero nil), else rejection draws
// through InZero from rng, after the mechanism's own draws. With ident the
// block picks are anonymous (calib.Plan.SampleScores: the t-th is reported
// as len(in.Cands)+t), so the list is shuffled as it is used (the t-th pick
// takes a uniform member among those not taken: a partial Fisher-Yates
// from rng). Per-pick and list releases both map their picks here.
func (sm *Sampler) mapPicks(in *UserInput, picks []int, ident bool, rng *rand.Rand, dst []int32) ([]int32, error) {
	nc := len(in.Cands) + in.Held
	blockPicks := 0
	for _, p := range picks {
		if p >= nc {
			blockPicks++
		}
	}
	useList := blockPicks > 0 && (in.InZero == nil || int64(in.Zero)*8 < int64(in.N))
	if useList {
		if in.ZeroList == nil {
			return dst, fmt.Errorf("release: zero block without a way to list it")
		}
		sm.zero = in.ZeroList(sm.zero[:0])
		if len(sm.zero) != in.Zero {
			return dst, fmt.Errorf("release: zero block lists %d members, want %d", len(sm.zero), in.Zero)
		}
	}
	// Rejection draws skip members already drawn: a scan of the list so far
	// (explicit candidates are never in the block) for short lists, a set
	// for long ones.
	useSet := !useList && blockPicks > scanMax
	if useSet {
		if sm.seen == nil {
			sm.seen = make(map[int32]struct{}, blockPicks)
		}
		clear(sm.seen)
	}
	dst = slices.Grow(dst, len(picks))
	start := len(dst)
	for _, p := range picks {
		switch {
		case p < nc && ident && in.Held > 0:
			v, _ := in.HeldAt(p)
			dst = append(dst, v)
		case p < nc && ident:
			dst = append(dst, in.Cands[p])
		case p < nc:
			dst = append(dst, in.Cands[sm.idx[p]])
		case useList && ident:
			// The t-th block pick (anonymous: p = nc + t) takes a uniform
			// member of sm.zero[t:], which holds those not taken yet.
			t := p - nc
			if t >= len(sm.zero) {
				return dst, fmt.Errorf("release: zero-block pick %d of a block of %d", t, len(sm.zero))
			}
			j := t + rng.IntN(len(sm.zero)-t)
			sm.zero[t], sm.zero[j] = sm.zero[j], sm.zero[t]
			dst = append(dst, sm.zero[t])
		case useList:
			dst = append(dst, sm.zero[p-nc])
		default:
			for tries := 0; ; tries++ {
				v := int32(rng.IntN(in.N))
				var dup bool
				if useSet {
					_, dup = sm.seen[v]
				} else {
					dup = slices.Contains(dst[start:], v)
				}
				if !dup && in.InZero(v) {
					if useSet {
						sm.seen[v] = struct{}{}
					}
					dst = append(dst, v)
					break
				}
				if tries > 1000*in.N {
					return dst, fmt.Errorf("release: could not draw a zero-block member (block of %d in %d nodes)", in.Zero, in.N)
				}
			}
		}
	}
	return dst, nil
}
