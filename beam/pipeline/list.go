package pipeline

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
	"github.com/dplp/dplp/model"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/release"
	"github.com/dplp/dplp/score"
)

// dplp-list models (docs/privacy-model.md §16.3, release/listrel.go). For
// each user the release stage builds the release.ListInput
// release.Recommender builds (sampleList) and calls the same function,
// release.Sampler.SampleList (candidate order, list.Release, the mapping
// of drawn indexes to node ids), with the user's generator. The input:
//
//   - Pub: the model score's s_pub of every candidate (the wedge join), in
//     ascending id order when seeded (release's canonical order), in join
//     order otherwise (the distribution is the same);
//   - Evid: the evidence score's s - s_pub of the same candidates: the
//     model score's own when the evidence score is the model's (cn, jc),
//     else CN's wedge counts EC - ECP carried by every candidate record
//     (evidence cn for aa/ra: what dplp train writes, list.EvidenceKind);
//     Count is then ECP (release sets Count only when the scorers differ);
//   - Zero: the zero block; MaxEvid: deg(u);
//   - L1: score.Scorer.Evidence(u, unit).L1 of the evidence score,
//     computed from the sensitivity join's pairs (listL1 below).
//
// The list is charged accountant.PureList(cost), cost = list.Cost (eps, or
// 0 when the list reads no evidence), with the model's unit, before any
// list is written (finalFn, charges.go). Evidence scores aa, ra and pa are
// refused by Build (their L1 needs per-pair degrees; no trained model uses
// them with a score the pipeline computes).

// listSupported reports whether the pipeline releases a dplp-list model of
// score kind with evidence score ev.
func listSupported(kind, ev score.Kind) bool {
	return ev == score.CN || (ev == score.JC && kind == score.JC)
}

// protLevel is |prot(v)| of a node (the histogram of mark counts, for
// Evidence's JC bounds).
func protLevel(n Node) int32 { return int32(len(n.Prot)) }

// protCountsFn sends |prot(w)| to every partner of w (JC's party-unit
// bound needs the mark counts of u's partners); with On false it sends
// nothing.
type protCountsFn struct{ On bool }

func (f *protCountsFn) ProcessElement(n Node, emit func(int32, int32)) {
	if !f.On {
		return
	}
	for _, x := range n.Prot {
		emit(x, int32(len(n.Prot)))
	}
}

// level is one entry of the mark-count histogram.
type level struct {
	L int32 // |prot(w)|
	N int   // nodes with that count
}

// listL1 is score.Scorer.Evidence(u, unit).L1 of evidence score ev for the
// user of node record nd, from its sensitivity pairs si (with detail: for
// every w with a pair, count(u, w) = |N(u) ∩ prot(w)| and, for w in N(u)
// with a partner other than u, |prot(w)|), the mark counts of its partners
// (JC, party unit), the histogram of mark counts in decreasing order and
// the number of protected pairs (JC). The expressions are Evidence's
// (score/unitsens.go), regrouped:
//
//   - CN, pair: 1 iff some protected pair {z, x}, z in N(u), x not in
//     N(u) ∪ {u}, exists, i.e. some w outside N(u) has count(u, w) >= 1.
//   - CN, party: the largest number of such pairs through one node: max of
//     count(u, x) over x outside N(u) and of |prot(z)| - [z in prot(u)] -
//     count(u, z) over z in N(u).
//   - JC: the pairs with one endpoint in N(u) number one = the sum of
//     count(u, w) over w outside N(u); both = the sum over w in N(u) counts
//     the pairs inside N(u) from both ends, as Evidence does; neither =
//     |P| - |prot(u)| - both/2 - one. L1 = 1/d if one > 0, at
//     least 2/(d+1) if neither > 0 (d = deg(u) > 0); party unit: times
//     max over w != u of |prot(w) \ {u}|.
func listL1(ev score.Kind, unit privunit.Unit, nd *Node, si *SensInfo, partners []int32, levels []level, pairs int64) (float64, error) {
	if len(si.Cnt) != len(si.Infl) || len(si.ProtN) != len(si.Infl) {
		return 0, fmt.Errorf("user %s: sensitivity pairs without their counts (internal error)", nd.Label)
	}
	nb := nd.Nbrs
	switch ev {
	case score.CN:
		best := int32(0)
		for i, w := range si.Infl {
			if !has(nb, w) {
				best = max(best, si.Cnt[i])
				continue
			}
			if si.ProtN[i] > 0 {
				a := si.ProtN[i] - si.Cnt[i]
				if has(nd.Prot, w) {
					a--
				}
				best = max(best, a)
			}
		}
		if unit == privunit.Pair {
			return float64(min(best, 1)), nil
		}
		return float64(best), nil
	case score.JC:
		var both, one int64
		for i, w := range si.Infl {
			if has(nb, w) {
				both += int64(si.Cnt[i])
			} else {
				one += int64(si.Cnt[i])
			}
		}
		neither := pairs - int64(len(nd.Prot)) - both/2 - one
		d := float64(len(nb))
		var bOne, bNeither float64
		if d > 0 {
			bOne, bNeither = 1/d, 2/(d+1)
		}
		var l1 float64
		if one > 0 {
			l1 = bOne
		}
		if neither > 0 {
			l1 = max(l1, bNeither)
		}
		if unit == privunit.Party {
			l1 *= float64(maxProtExcl(int32(len(nd.Prot)), partners, levels))
		}
		return l1, nil
	}
	return 0, fmt.Errorf("evidence score %s: not released by the pipeline (internal error)", ev)
}

// maxProtExcl is max over w != u of |prot(w) \ {u}| for a user with
// |prot(u)| = own whose partners have the mark counts partners, given the
// histogram of mark counts over every node in decreasing order: partners
// lose u (count - 1); the others keep theirs, so the largest count held by
// a node that is neither u nor a partner is the first level of the
// histogram with more nodes than u and its partners account for.
func maxProtExcl(own int32, partners []int32, levels []level) int {
	best := 0
	excl := map[int32]int{own: 1}
	for _, c := range partners {
		best = max(best, int(c)-1)
		excl[c]++
	}
	for _, lv := range levels {
		if lv.N > excl[lv.L] {
			best = max(best, int(lv.L))
			break
		}
	}
	return best
}

// listReleaseFn releases each user's dplp-list list (see the comment at the
// top of this file): the generator is release.UserRNG(Seed, label, 0) when
// Seeded, else a ChaCha8 generator keyed from crypto/rand on the worker
// (randx.Crypto), as release.Recommender's for a crypto-seeded release.
type listReleaseFn struct {
	Kind   int
	K      int
	Seeded bool
	Seed   uint64 // used only when Seeded
	Model  []byte // the model file's bytes

	spec   model.ListSpec
	unit   privunit.Unit
	ev     score.Kind
	crypto *rand.Rand
	sm     release.Sampler
	in     release.ListInput
	evc    [][2]int32
	levels []level
	pairs  int64
}

func (f *listReleaseFn) Setup() error {
	m, err := loadModel(f.Model)
	if err != nil {
		return err
	}
	if !m.ListLevel() {
		return fmt.Errorf("model variant %s is not list-level (internal error)", m.Variant)
	}
	f.spec, f.unit = *m.List, m.PrivacyUnit()
	if f.ev, err = score.ParseKind(m.List.Evidence); err != nil {
		return err
	}
	if !listSupported(score.Kind(f.Kind), f.ev) {
		return fmt.Errorf("dplp-list evidence %s for score %s: not released by the pipeline", f.ev, score.Kind(f.Kind))
	}
	if !f.Seeded {
		f.crypto = randx.Crypto()
	}
	return nil
}

// rng is user label's generator.
func (f *listReleaseFn) rng(label string) *rand.Rand {
	if f.Seeded {
		return release.UserRNG(f.Seed, label, 0)
	}
	if f.crypto == nil {
		f.crypto = randx.Crypto()
	}
	return f.crypto
}

// levelsOf reads the mark-count histogram side input: the levels in
// decreasing order and the number of protected pairs (half the mark ends).
func levelsOf(hist func(*int32, *int) bool) ([]level, int64) {
	levels := []level{}
	var l int32
	var c int
	var ends int64
	for hist(&l, &c) {
		levels = append(levels, level{L: l, N: c})
		ends += int64(l) * int64(c)
	}
	slices.SortFunc(levels, func(a, b level) int { return cmp.Compare(b.L, a.L) })
	return levels, ends / 2
}

// userL1 assembles user u's input (with the CN counts of its candidates in
// *evc) and computes its L1(u).
func userL1(kind, ev score.Kind, unit privunit.Unit, u int32, nodes func(*Node) bool, cands func(*Cand) bool, sens func(*SensInfo) bool, partnerCounts func(*int32) bool, n int,
	levels []level, pairs int64, evc *[][2]int32) (Node, *release.UserInput, SensInfo, float64, error) {
	nd, in, si, err := assemble(kind, u, nodes, cands, sens, n, evc)
	if err != nil {
		return nd, nil, si, 0, err
	}
	var partners []int32
	var c int32
	for partnerCounts(&c) {
		partners = append(partners, c)
	}
	l1, err := listL1(ev, unit, &nd, &si, partners, levels, pairs)
	return nd, in, si, l1, err
}

func (f *listReleaseFn) ProcessElement(u int32, nodes func(*Node) bool, cands func(*Cand) bool, sens func(*SensInfo) bool, partnerCounts func(*int32) bool, n int, hist func(*int32, *int) bool, emit func(UserOut)) error {
	if f.levels == nil {
		f.levels, f.pairs = levelsOf(hist)
	}
	kind := score.Kind(f.Kind)
	f.evc = f.evc[:0]
	nd, in, si, l1, err := userL1(kind, f.ev, f.unit, u, nodes, cands, sens, partnerCounts, n, f.levels, f.pairs, &f.evc)
	if err != nil {
		return err
	}
	// The single machine's release (release.Sampler.SampleList): the same
	// input, candidate order (ascending ids when seeded), list.Release and
	// zero-block mapping.
	li := &f.in
	li.UserInput = *in
	li.Canonical = f.Seeded
	li.Evid, li.Count = li.Evid[:0], li.Count[:0]
	sameScore := f.ev == kind
	for i := range in.Cands {
		if sameScore {
			li.Evid = append(li.Evid, in.S[i]-in.Pub[i])
			continue
		}
		s, ps := float64(f.evc[i][0]), float64(f.evc[i][1])
		li.Evid = append(li.Evid, s-ps)
		li.Count = append(li.Count, ps)
	}
	if sameScore {
		li.Count = nil
	}
	li.L1, li.MaxEvid = l1, len(nd.Nbrs)
	lo, err := f.sm.SampleList(f.spec.Eps, f.spec.Combine, li, f.K, f.rng(nd.Label))
	if err != nil {
		return fmt.Errorf("release: user %s: %w", nd.Label, err)
	}
	ids := lo.IDs
	uo := UserOut{U: u, Label: nd.Label, IDs: ids, ListLevel: true, ListCost: lo.ListEps, PartyCost: lo.ListEps}
	if f.unit == privunit.Pair && lo.ListEps > 0 {
		// The party-unit cost of a pair-unit list (release's partyCost):
		// eps x L1_party(u)/L1_pair(u); CN's party bound comes from the same
		// joined pairs, JC's needs inputs only party models join.
		uo.PartyCost = math.Inf(1)
		if f.ev == score.CN && l1 > 0 {
			pl, err := listL1(f.ev, privunit.Party, &nd, &si, nil, nil, 0)
			if err != nil {
				return err
			}
			uo.PartyCost = lo.ListEps * max(1, pl/l1)
		}
	}
	if lo.ListEps > 0 {
		if f.ev == score.JC {
			uo.AllInfl = true
		} else {
			uo.Influencers = si.Infl
		}
	}
	emit(uo)
	return nil
}

// ReleaseList joins each node's record with its candidates, its
// sensitivity pairs (Sensitivities with detail) and its partners' mark
// counts, and releases its dplp-list list. seed nil: private (crypto
// noise); else seeded research lists (release.UserRNG(*seed, label, 0)).
func ReleaseList(s beam.Scope, kind score.Kind, k int, seed *uint64, modelBytes []byte, unit privunit.Unit, ev score.Kind, nodes, cands, sens, n beam.PCollection) beam.PCollection {
	s = s.Scope("ReleaseList")
	j, levels := listInputs(s, unit, ev, nodes, cands, sens)
	f := &listReleaseFn{Kind: int(kind), K: k, Model: modelBytes}
	if seed != nil {
		f.Seeded, f.Seed = true, *seed
	}
	return beam.ParDo(s, f, j, beam.SideInput{Input: n}, beam.SideInput{Input: levels})
}

// listInputs is the per-user join of ReleaseList (node, candidates,
// sensitivity pairs, partners' mark counts) and the mark-count histogram
// (KV<|prot|, nodes>).
func listInputs(s beam.Scope, unit privunit.Unit, ev score.Kind, nodes, cands, sens beam.PCollection) (j, levels beam.PCollection) {
	partners := beam.ParDo(s, &protCountsFn{On: ev == score.JC && unit == privunit.Party}, nodes)
	levels = stats.Count(s, beam.ParDo(s, protLevel, nodes))
	return beam.CoGroupByKey(s, beam.ParDo(s, keyNode, nodes), cands, sens, partners), levels
}
