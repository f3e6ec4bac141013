package score

import (
	"math"
	"slices"
	"sync"

	"github.com/dplp/dplp/privunit"
)

// EvidenceBound bounds how far the private evidence vector
//
//	e(v) = s(u, v) - s_pub(u, v),  v in C(u) = V \ (N(u) ∪ {u}),
//
// of one query u can move between u-neighbouring graphs G, G' under a
// privacy unit (docs/privacy-model.md §16): for every such pair of graphs,
//
//	max_v |e_G(v) - e_G'(v)|         <= Linf
//	sum_v |e_G(v) - e_G'(v)|         <= L1
//	sqrt(sum_v (e_G(v) - e_G'(v))^2) <= L2.
//
// s_pub is invariant (§10), so these are also the bounds of the score
// vector s itself. Every field is computed from invariant data only (N(u),
// the public graph and the marks), so it is the same in G and G'; 0 means
// that nothing toggleable can reach u's evidence (then e is invariant).
// The candidate set must not contain neighbours of u: a candidate set with
// neighbours of u (the reference protocol's quirk) needs other bounds.
type EvidenceBound struct {
	Linf, L1, L2 float64
}

// Evidence returns the invariant bounds of u's private evidence vector
// under unit (EvidenceBound). The table for every node is computed, in
// parallel, on the first call for a unit and cached; u must be a node.
//
// Pair unit (G, G' differ in one protected pair {a, b}, a, b != u). Write
// d = deg(u), in(x) for x in N(u), and D(x) = degPub_u(x) (x's non-protected
// degree, plus one if {u, x} is a protected edge): a lower bound, in every
// neighbouring graph, on x's degree without the toggled pair. The change
// caused by toggling {a, b} is bounded by beta(u, {a, b}) = c(a; b) + c(b; a):
//
//	CN: c = 0 unless exactly one endpoint is in N(u); then the other one is
//	    a candidate whose count moves by 1 (beta = 1), and nothing else moves.
//	AA, RA (phi(D) = 1/ln D, resp. 1/D): for x in N(u), x's degree moves by
//	    one; each of its at most D-1 candidate neighbours shifts by
//	    phi(D) - phi(D+1), and if the partner y is a candidate the term of x
//	    appears in e(y) with weight phi(D+1). So c(x; y) = h(D(x)) when y is a
//	    candidate and shift(max(D(x), 2)) when y is in N(u), with
//	    h(D) = (D-1)(phi(D) - phi(D+1)) + phi(D+1) (h(1) = phi(2)) and
//	    shift(D) = (D-1)(phi(D) - phi(D+1)); h is non-increasing in D >= 1 and
//	    shift in D >= 2 (tested up to D = 10^6; both decay as phi'), so the
//	    supremum over the unknown true degree D >= D(x) is at D(x). c(x; y) = 0
//	    for x not in N(u) (AA/RA only weigh u's neighbours).
//	JC: only a and b can move. With one endpoint in N(u), the other gains or
//	    loses a common neighbour: |Delta| = 1/|N(u) ∪ N(y)| <= 1/d. With
//	    neither in N(u), each gains or loses a non-common neighbour:
//	    |Delta| = I/(U(U+1)) <= 1/(d+1). beta = 1/d, resp. 2/(d+1).
//	PA: e(v) = d |N_prot(v)|: each endpoint outside N(u) moves by d.
//
// L1 is the largest beta over the protected pairs not incident to u
// (CN/AA/RA: those with an endpoint in N(u), enumerated; JC/PA: by the
// three cases, counted). Linf: CN 1, AA 1/ln 2, RA 1/2 (a new term or two
// shifts), JC 1/d, PA d, each capped by L1. L2 = sqrt(L1 x Linf)
// (Hölder), except CN where exactly one coordinate moves (L2 = L1).
//
// Party unit (Definition 1: any subset T of prot(w) \ {u} for one w).
// Toggling T one pair at a time is a path of pair-unit steps, each bounded
// by beta of its pair (beta reads invariant data only, so it holds at every
// intermediate graph); by the triangle inequality
//
//	L1_party(u) = max over w != u of sum over x in prot(w) \ {u} of beta(u, {w, x}),
//
// computed exactly for CN/AA/RA (only w in N(u) or with a protected pair
// into N(u) contribute) and bounded for JC/PA by maxProt(u) x max beta, with
// maxProt(u) = max over w != u of |prot(w) \ {u}|. Linf_party is the §4
// Delta_s(u) (capped by L1) and L2_party = sqrt(L1 x Linf). The party bounds
// are larger by up to the number of a party's pairs: a hub w in N(u) with m
// protected pairs to non-neighbours of u moves m candidates' CN at once.
//
// Bounded (external) scores: every candidate may move by hi - lo under
// either unit (a fitted model can change anywhere): Linf = hi - lo,
// L1 = (hi - lo) |C(u)|, L2 = (hi - lo) sqrt|C(u)|.
func (s *Scorer) Evidence(u int32, unit privunit.Unit) EvidenceBound {
	if u < 0 || int(u) >= s.n || !unit.Valid() {
		return unboundedEvidence
	}
	mp := 0
	if unit == privunit.Party && (s.kind == JC || s.kind == PA) {
		mp = s.maxProtOf(u, s.protOrder())
	}
	sc := evPool.Get().(*evScratch)
	defer evPool.Put(sc)
	return s.evidenceOne(u, unit, mp, sc)
}

// evScratch is evidenceOne's scratch: a stamp set of N(u) (membership
// without a search) and dense per-party accumulators with the list of
// those touched (reset after each query), grown to the graph's size.
type evScratch struct {
	stamp   []uint32
	gen     uint32
	acc     []float64
	touched []int32
}

var evPool = sync.Pool{New: func() any { return new(evScratch) }}

// begin sizes the scratch for n nodes and marks N(u).
func (sc *evScratch) begin(n int, nbU []int32) {
	if len(sc.stamp) < n {
		sc.stamp, sc.acc, sc.gen = make([]uint32, n), make([]float64, n), 0
	}
	sc.gen++
	if sc.gen == 0 {
		clear(sc.stamp)
		sc.gen = 1
	}
	for _, z := range nbU {
		sc.stamp[z] = sc.gen
	}
}

func (sc *evScratch) add(w int32, beta float64) {
	if sc.acc[w] == 0 {
		sc.touched = append(sc.touched, w)
	}
	sc.acc[w] += beta
}

// maxResetCN is maxReset for CN's party-unit accumulators (acc[w] = the
// number of w's protected pairs with exactly one endpoint in N(u)), and
// also returns the exact squared l2 bound of the party unit: a party w in
// N(u) moves each of its acc[w] candidate partners by 1 (sum of squares
// acc[w]); a party w outside N(u) moves only its own coordinate, by up to
// acc[w] (square acc[w]^2). in reports membership of N(u).
func (sc *evScratch) maxResetCN(in func(int32) bool) (l1, l2sq float64) {
	for _, w := range sc.touched {
		a := sc.acc[w]
		l1 = max(l1, a)
		if in(w) {
			l2sq = max(l2sq, a)
		} else {
			l2sq = max(l2sq, a*a)
		}
		sc.acc[w] = 0
	}
	sc.touched = sc.touched[:0]
	return l1, l2sq
}

// maxReset returns the largest accumulator and clears them.
func (sc *evScratch) maxReset() float64 {
	var m float64
	for _, w := range sc.touched {
		m = max(m, sc.acc[w])
		sc.acc[w] = 0
	}
	sc.touched = sc.touched[:0]
	return m
}

// EvidenceTable returns Evidence(u, unit) for every node u, computed in
// parallel; callers that release many lists keep it (nothing is cached in
// the scorer).
func (s *Scorer) EvidenceTable(unit privunit.Unit) []EvidenceBound {
	out := make([]EvidenceBound, s.n)
	if !unit.Valid() {
		for u := range out {
			out[u] = unboundedEvidence
		}
		return out
	}
	var maxProt []int
	if unit == privunit.Party && (s.kind == JC || s.kind == PA) {
		maxProt = s.maxProtExcl()
	}
	parallelNodes(s.n, func() func(u int32) {
		sc := new(evScratch)
		return func(u int32) {
			mp := 0
			if maxProt != nil {
				mp = maxProt[u]
			}
			out[u] = s.evidenceOne(u, unit, mp, sc)
		}
	})
	return out
}

var unboundedEvidence = EvidenceBound{Linf: math.Inf(1), L1: math.Inf(1), L2: math.Inf(1)}

// phiOf is the AA/RA weight of a common neighbour of degree d >= 2.
func (s *Scorer) phiOf(d float64) float64 {
	if s.kind == AA {
		return 1 / math.Log(d)
	}
	return 1 / d
}

// evidenceH is h(D) of Evidence: the pair-unit change caused by one
// endpoint x in N(u) of degree D >= 1 (without the toggled pair) whose
// partner is a candidate.
func (s *Scorer) evidenceH(d float64) float64 {
	if d < 2 {
		return s.phiOf(2)
	}
	return (d-1)*(s.phiOf(d)-s.phiOf(d+1)) + s.phiOf(d+1)
}

// evidenceShift is sup over D' >= D of shift(D') (partner in N(u)).
func (s *Scorer) evidenceShift(d float64) float64 {
	d = max(d, 2)
	return (d - 1) * (s.phiOf(d) - s.phiOf(d+1))
}

// degPubU is degPub_u(x): x's non-protected degree plus one if {u, x} is
// a protected edge (x in N(u)).
func (s *Scorer) degPubU(u, x int32) float64 {
	d := float64(s.pubDeg[x])
	if s.p.Has(u, x) {
		d++
	}
	return d
}

// pairBeta is beta(u, {a, b}) for CN, AA, RA (a, b != u).
func (s *Scorer) pairBeta(u, a, b int32, inA, inB bool) float64 {
	switch s.kind {
	case CN:
		if inA != inB {
			return 1
		}
		return 0
	case AA, RA:
		c := func(x int32, inX, inY bool) float64 {
			if !inX {
				return 0
			}
			if inY {
				return s.evidenceShift(s.degPubU(u, x))
			}
			return s.evidenceH(s.degPubU(u, x))
		}
		return c(a, inA, inB) + c(b, inB, inA)
	}
	return math.Inf(1)
}

// evidenceOne computes Evidence(u, unit); maxProtU is max over w != u of
// |prot(w) \ {u}| (read for JC and PA under the party unit only); sc is
// scratch (its accumulators are zero on entry and exit).
func (s *Scorer) evidenceOne(u int32, unit privunit.Unit, maxProtU int, sc *evScratch) EvidenceBound {
	if s.kind == Bounded {
		w := s.hi - s.lo
		c := float64(s.n - 1 - int(s.deg[u]))
		return EvidenceBound{Linf: w, L1: w * c, L2: w * math.Sqrt(c)}
	}
	nbU := s.g.Neighbors(u)
	sc.begin(s.n, nbU)
	gen := sc.gen
	in := func(x int32) bool { return sc.stamp[x] == gen }
	var l1, linf float64
	cnL2sq := -1.0 // CN under the party unit: the exact squared l2 bound (maxResetCN)
	switch s.kind {
	case CN, AA, RA:
	scan:
		for _, z := range nbU {
			for _, x := range s.p.Of(z) {
				if x == u {
					continue
				}
				inX := in(x)
				if inX && x < z {
					continue // both in N(u): visit the pair once
				}
				beta := s.pairBeta(u, z, x, true, inX)
				if beta == 0 {
					continue
				}
				l1 = max(l1, beta)
				if unit == privunit.Party {
					sc.add(z, beta)
					sc.add(x, beta)
				} else if s.kind == CN {
					break scan // a CN pair's beta is 0 or 1: the maximum is reached
				}
			}
		}
		if l1 > 0 {
			switch s.kind {
			case CN:
				linf = 1
			case AA:
				linf = s.phiOf(2)
			case RA:
				linf = 0.5
			}
		}
		if unit == privunit.Party {
			if s.kind == CN {
				l1, cnL2sq = sc.maxResetCN(in)
			} else {
				l1 = sc.maxReset()
			}
			linf = s.sensTable()[u]
		}
	case JC, PA:
		// Count the protected pairs not incident to u by how many endpoints
		// lie in N(u).
		var both, one int64
		for _, z := range nbU {
			for _, x := range s.p.Of(z) {
				if x == u {
					continue
				}
				if in(x) {
					both++ // seen from both ends
				} else {
					one++
				}
			}
		}
		neither := s.p.Len() - int64(s.p.Count(u)) - both/2 - one
		d := float64(len(nbU))
		var bOne, bNeither float64
		if s.kind == JC {
			if d > 0 {
				bOne, bNeither, linf = 1/d, 2/(d+1), 1/d
			}
		} else {
			bOne, bNeither, linf = d, 2*d, d
		}
		if one > 0 {
			l1 = bOne
		}
		if neither > 0 {
			l1 = max(l1, bNeither)
		}
		if unit == privunit.Party {
			l1 *= float64(maxProtU)
			linf = s.sensTable()[u]
		}
	}
	linf = min(linf, l1)
	l2 := math.Sqrt(l1 * linf)
	if s.kind == CN && unit == privunit.Pair {
		l2 = l1
	}
	if cnL2sq >= 0 {
		l2 = math.Min(l2, math.Sqrt(cnL2sq))
	}
	return EvidenceBound{Linf: linf, L1: l1, L2: l2}
}

// maxProtExcl returns, for every node u, max over w != u of
// |prot(w) \ {u}| (as in paSensitivities).
func (s *Scorer) maxProtExcl() []int {
	order := s.protOrder()
	out := make([]int, s.n)
	for u := int32(0); int(u) < s.n; u++ {
		out[u] = s.maxProtOf(u, order)
	}
	return out
}

// protOrder is every node by its number of protected pairs, descending
// (ties by id), computed once per scorer.
func (s *Scorer) protOrder() []int32 {
	s.protOnce.Do(func() {
		p := s.p
		order := make([]int32, s.n)
		for i := range order {
			order[i] = int32(i)
		}
		slices.SortStableFunc(order, func(a, b int32) int { return p.Count(b) - p.Count(a) })
		s.protOrd = order
	})
	return s.protOrd
}

// maxProtOf is max over w != u of |prot(w) \ {u}|: count(w) - 1 for u's
// partners, else the count of the first node of order (protOrder) that is
// neither u nor a partner of u. O(|prot(u)| log |prot(u)|), not O(n).
func (s *Scorer) maxProtOf(u int32, order []int32) int {
	p := s.p
	pu := p.Of(u)
	best := 0
	for _, w := range pu {
		best = max(best, p.Count(w)-1)
	}
	for _, w := range order {
		if w == u {
			continue
		}
		if _, in := slices.BinarySearch(pu, w); in {
			continue
		}
		return max(best, p.Count(w))
	}
	return best
}
