package pipeline

import (
	"cmp"
	"math"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/dplp/dplp/score"
)

// Scores. A wedge u - z - v (u != v, both neighbours of z) contributes to
// the pair (u, v); the wedge join is keyed by the middle node z. For every
// z the neighbour list is cut into chunks of HubChunk and one task is made
// per (u-chunk, v-chunk), so a hub's d^2 wedges are spread over
// ceil(d/HubChunk)^2 tasks of at most HubChunk^2 wedges and 2 HubChunk
// neighbours each (the salting of the middle node). Cost model: the wedge
// work is sum over z of deg(z)^2 (the same as the single-machine scorer's,
// which is sum over u of sum over z in N(u) of deg(z)); the tasks ship
// about 2 sum_z deg(z)^2 / HubChunk + 2 sum_z deg(z) neighbour entries;
// the (u, v) shuffle carries one record per wedge for AA/RA (ordered sums,
// see below) and at most one per (bundle, pair) for CN/JC (counts are
// combined before the shuffle).
//
// The float sums of AA/RA must equal score.Worker's bit for bit, so they
// are added in its order: first the z with {u, z} not protected, then those
// with {u, z} protected, each in ascending z (score/worker.go, sums). Counts
// (CN, JC) are exact in any order.

// Nb is one neighbour of a middle node z in a wedge task.
type Nb struct {
	ID     int32
	Pub    bool  // {z, ID} is not protected
	Deg    int32 // JC only
	PubDeg int32 // JC only
}

// WedgeTask is one (u-chunk, v-chunk) block of z's wedges.
type WedgeTask struct {
	Z      int32
	A      float64 // full-graph weight of z (AA/RA)
	B0, B1 float64 // public weights of z for {u,z} not protected / protected
	Us, Vs []Nb
}

// Contrib is one wedge's AA/RA contribution to s(u,v), s_pub(u,v). VPub
// ({z, v} not protected) also gives the pair's CN counts (Cand.EC, ECP).
type Contrib struct {
	Z    int32
	Part int8 // 1: {u, z} protected
	VPub bool
	A, B float64
}

// Count is CN/JC's per-pair counts (JC also carries the degrees).
type Count struct {
	C, CP               int32 // wedges, wedges with {z,v} not protected
	DegU, DegV, PubDegV int32
}

// Cand is one scored candidate of a user (not yet filtered: neighbours of
// u are removed at the user). EC and ECP are the pair's CN counts (wedges,
// wedges with {z, v} not protected), whatever the score: the evidence of a
// dplp-list model with evidence cn is EC - ECP, its public count ECP
// (score.Worker.At of a CN scorer).
type Cand struct {
	V       int32
	S, Pub  float64
	EC, ECP int32
}

func pairKey(u, v int32) int64      { return int64(u)<<32 | int64(uint32(v)) }
func splitKey(k int64) (u, v int32) { return int32(k >> 32), int32(uint32(k)) }
func weight(kind score.Kind, d int32) float64 {
	// score.New's weights: 1/ln d (AA) or 1/d (RA) for d >= 2.
	if kind == score.AA {
		return 1 / math.Log(float64(d))
	}
	return 1 / float64(d)
}

// wedgeTasksFn cuts each middle node's wedges into tasks.
type wedgeTasksFn struct {
	Kind  int
	Chunk int
}

func (f *wedgeTasksFn) ProcessElement(n Node, emit func(WedgeTask)) {
	d := len(n.Nbrs)
	if d < 2 {
		return // no wedge u - z - v with u != v
	}
	kind := score.Kind(f.Kind)
	nbs := make([]Nb, d)
	pubDeg := int32(0)
	for i, x := range n.Nbrs {
		nbs[i] = Nb{ID: x, Pub: !has(n.Prot, x)}
		if nbs[i].Pub {
			pubDeg++
		}
		if n.NDeg != nil {
			nbs[i].Deg, nbs[i].PubDeg = n.NDeg[i], n.NPubDeg[i]
		}
	}
	t := WedgeTask{Z: n.ID}
	if kind == score.AA || kind == score.RA {
		// score.Scorer.weights: w = f(deg) (deg >= 2 here); public weights
		// f(pubDeg) and f(pubDeg+1), 0 below 2.
		t.A = weight(kind, int32(d))
		if pubDeg >= 2 {
			t.B0 = weight(kind, pubDeg)
		}
		if pubDeg+1 >= 2 {
			t.B1 = weight(kind, pubDeg+1)
		}
	}
	c := max(f.Chunk, 1)
	for lo := 0; lo < d; lo += c {
		for lo2 := 0; lo2 < d; lo2 += c {
			t.Us = nbs[lo:min(lo+c, d)]
			t.Vs = nbs[lo2:min(lo2+c, d)]
			emit(t)
		}
	}
}

// countWedgesFn emits CN/JC wedge counts.
func countWedgesFn(t WedgeTask, emit func(int64, Count)) {
	for _, u := range t.Us {
		for _, v := range t.Vs {
			if u.ID == v.ID {
				continue
			}
			c := Count{C: 1, DegU: u.Deg, DegV: v.Deg, PubDegV: v.PubDeg}
			if v.Pub {
				c.CP = 1
			}
			emit(pairKey(u.ID, v.ID), c)
		}
	}
}

func sumCounts(a, b Count) Count {
	a.C += b.C
	a.CP += b.CP
	return a
}

// finishCountFn turns a pair's counts into (u, candidate), with
// score.Worker.counts' expressions.
type finishCountFn struct{ Kind int }

func (f *finishCountFn) ProcessElement(k int64, c Count, emit func(int32, Cand)) {
	u, v := splitKey(k)
	if score.Kind(f.Kind) == score.CN {
		emit(u, Cand{V: v, S: float64(c.C), Pub: float64(c.CP), EC: c.C, ECP: c.CP})
		return
	}
	// JC: c >= 1, so the union du+deg(v)-c >= deg(v) >= 1.
	x := Cand{V: v, S: float64(c.C) / float64(c.DegU+c.DegV-c.C), EC: c.C, ECP: c.CP}
	if c.CP > 0 {
		x.Pub = float64(c.CP) / float64(c.DegU+c.PubDegV-c.CP)
	}
	emit(u, x)
}

// sumWedgesFn emits AA/RA wedge contributions.
func sumWedgesFn(t WedgeTask, emit func(int64, Contrib)) {
	for _, u := range t.Us {
		part, bw := int8(0), t.B0
		if !u.Pub {
			part, bw = 1, t.B1
		}
		for _, v := range t.Vs {
			if u.ID == v.ID {
				continue
			}
			c := Contrib{Z: t.Z, Part: part, VPub: v.Pub, A: t.A}
			if v.Pub {
				c.B = bw
			}
			emit(pairKey(u.ID, v.ID), c)
		}
	}
}

// finishSumFn adds a pair's contributions in score.Worker's order.
func finishSumFn(k int64, it func(*Contrib) bool, emit func(int32, Cand)) {
	var cs []Contrib
	var c Contrib
	for it(&c) {
		cs = append(cs, c)
	}
	slices.SortFunc(cs, func(a, b Contrib) int {
		if a.Part != b.Part {
			return cmp.Compare(a.Part, b.Part)
		}
		return cmp.Compare(a.Z, b.Z)
	})
	var s, p float64
	var ecp int32
	for _, c := range cs {
		s += c.A
		p += c.B
		if c.VPub {
			ecp++
		}
	}
	u, v := splitKey(k)
	emit(u, Cand{V: v, S: s, Pub: p, EC: int32(len(cs)), ECP: ecp})
}

// Candidates computes (u, candidate) for every pair (u, v) joined by a
// wedge (v may be a neighbour of u; the user step drops those).
func Candidates(s beam.Scope, kind score.Kind, chunk int, nodes beam.PCollection) beam.PCollection {
	s = s.Scope("Wedges")
	tasks := beam.Reshuffle(s, beam.ParDo(s, &wedgeTasksFn{Kind: int(kind), Chunk: chunk}, nodes))
	switch kind {
	case score.AA, score.RA:
		return beam.ParDo(s, finishSumFn, beam.GroupByKey(s, beam.ParDo(s, sumWedgesFn, tasks)))
	default:
		counts := beam.CombinePerKey(s, sumCounts, beam.ParDo(s, countWedgesFn, tasks))
		return beam.ParDo(s, &finishCountFn{Kind: int(kind)}, counts)
	}
}

// Sensitivity. b(u) = 1 if some x in N(u) has prot(x) \ {u} non-empty and
// c(u) = max over w != u of |N(u) ∩ prot(w)| (score.Scorer.Sensitivity):
// for every node x, every u in N(x) and every w in prot(x) \ {u}, the pair
// (u, w) counts one; c(u) is u's largest count and b(u) = 1 exactly when u
// has a pair (c(u) >= 1). The keys of u's pairs, together with the x in
// N(u) that have a partner other than u (emitted with count 0), are u's
// influencers (release's exposure sets for CN/AA/RA). Tasks are chunked
// like the wedges: work sum over x of deg(x)·|prot(x)|.
//
// For dplp-list models (list.go) the pairs are kept per user (Detail):
// count(u, w) = |N(u) ∩ prot(w)| and, for w in N(u) with a partner other
// than u, |prot(w)|: enough for score.Scorer.Evidence's L1(u) of CN and JC
// under both units.

// SensTask is one (u-chunk, partner-chunk) block of a node x.
type SensTask struct {
	X    int32
	Us   []int32
	Prot []int32
	// Single is prot(x)'s only member when |prot(x)| == 1, else -1:
	// prot(x) \ {u} is non-empty unless u == Single.
	Single int32
	ProtN  int32 // |prot(x)|
}

type sensTasksFn struct{ Chunk int }

func (f *sensTasksFn) ProcessElement(n Node, emit func(SensTask)) {
	if len(n.Prot) == 0 || len(n.Nbrs) == 0 {
		return
	}
	single := int32(-1)
	if len(n.Prot) == 1 {
		single = n.Prot[0]
	}
	c := max(f.Chunk, 1)
	for lo := 0; lo < len(n.Nbrs); lo += c {
		for lo2 := 0; lo2 < len(n.Prot); lo2 += c {
			emit(SensTask{X: n.ID, Us: n.Nbrs[lo:min(lo+c, len(n.Nbrs))], Prot: n.Prot[lo2:min(lo2+c, len(n.Prot))], Single: single, ProtN: int32(len(n.Prot))})
		}
	}
}

// PairCount is the value of a (u, w) sensitivity pair: C = |N(u) ∩
// prot(w)| (summed), P = |prot(w)| when w is in N(u) with a partner other
// than u, else 0 (the same on every record of the key: merged by max).
type PairCount struct {
	C, P int32
}

func sensPairsFn(t SensTask, emit func(int64, PairCount)) {
	for _, u := range t.Us {
		for _, w := range t.Prot {
			if w != u {
				emit(pairKey(u, w), PairCount{C: 1})
			}
		}
		// x itself influences u when prot(x) \ {u} is non-empty (count 0:
		// no effect on c(u); repeated by every task of x, merged by the sum).
		if t.Single != u {
			emit(pairKey(u, t.X), PairCount{P: t.ProtN})
		}
	}
}

func sumPairCounts(a, b PairCount) PairCount { return PairCount{C: a.C + b.C, P: max(a.P, b.P)} }

// SensInfo is a user's c(u) and influencer ids (ascending). With detail
// (dplp-list models), Cnt[i] and ProtN[i] are the PairCount of (u,
// Infl[i]).
type SensInfo struct {
	C     int32
	Infl  []int32
	Cnt   []int32
	ProtN []int32
}

// PartnerCount is one (u, w) pair at its user.
type PartnerCount struct {
	W, C, P int32
}

func pairToUser(k int64, c PairCount) (int32, PartnerCount) {
	u, w := splitKey(k)
	return u, PartnerCount{W: w, C: c.C, P: c.P}
}

// sensInfoFn gathers a user's pairs (one record per w: the pairs are
// combined per key before).
type sensInfoFn struct{ Detail bool }

func (f *sensInfoFn) ProcessElement(u int32, it func(*PartnerCount) bool) (int32, SensInfo) {
	var si SensInfo
	var ps []PartnerCount
	var x PartnerCount
	for it(&x) {
		ps = append(ps, x)
	}
	slices.SortFunc(ps, func(a, b PartnerCount) int { return cmp.Compare(a.W, b.W) })
	for i, p := range ps {
		if i > 0 && ps[i-1].W == p.W {
			continue // cannot happen (combined per key); keep the first
		}
		si.C = max(si.C, p.C)
		si.Infl = append(si.Infl, p.W)
		if f.Detail {
			si.Cnt = append(si.Cnt, p.C)
			si.ProtN = append(si.ProtN, p.P)
		}
	}
	return u, si
}

// Sensitivities computes (u, SensInfo) for every user with c(u) >= 1 or an
// influencer; users without an entry have b = c = 0 and no influencers.
// detail keeps every pair's counts (dplp-list models).
func Sensitivities(s beam.Scope, chunk int, detail bool, nodes beam.PCollection) beam.PCollection {
	s = s.Scope("Sensitivity")
	tasks := beam.Reshuffle(s, beam.ParDo(s, &sensTasksFn{Chunk: chunk}, nodes))
	pairs := beam.CombinePerKey(s, sumPairCounts, beam.ParDo(s, sensPairsFn, tasks))
	return beam.ParDo(s, &sensInfoFn{Detail: detail}, beam.GroupByKey(s, beam.ParDo(s, pairToUser, pairs)))
}
