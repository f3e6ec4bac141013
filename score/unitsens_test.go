package score

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/privunit"
	"github.com/dplp/dplp/protect"
	"pgregory.net/rapid"
)

// evidenceVec is u's brute-force private evidence e(v) = s - s_pub over
// every candidate v (non-neighbour, v != u), from the definitions (Pair).
func evidenceVec(g *graph.Graph, p *protect.Set, k Kind, u int32) map[int32]float64 {
	out := map[int32]float64{}
	for v := int32(0); int(v) < g.N(); v++ {
		if v == u || g.HasEdge(u, v) {
			continue
		}
		s, pub := Pair(g, p, k, u, v)
		out[v] = s - pub
	}
	return out
}

// togglePairs returns g with the pairs {w, x}, x in xs, flipped.
func togglePairs(t testing.TB, g *graph.Graph, w int32, xs []int32) *graph.Graph {
	t.Helper()
	flip := map[graph.Edge]bool{}
	for _, x := range xs {
		flip[graph.Edge{U: min(w, x), V: max(w, x)}] = true
	}
	var edges []graph.Edge
	g.Edges(func(a, b int32) {
		e := graph.Edge{U: min(a, b), V: max(a, b)}
		if flip[e] {
			delete(flip, e)
			return
		}
		edges = append(edges, e)
	})
	for e := range flip {
		edges = append(edges, e)
	}
	h, _, err := graph.FromEdges(g.N(), edges, nil)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// worstEvidenceRatio enumerates every neighbouring graph of g under unit
// (pair: each protected pair {a, b}; party: each non-empty subset of each
// node's protected pairs) and returns the largest ratio of a realised
// change of u's evidence vector (Linf, L1, L2) to the bound returned by
// bound (computed on G), over every u for which G' is u-neighbouring. It
// fails the test if a bound differs between G and G' (bounds must be
// invariant) or is non-finite. A ratio <= 1 means every bound held.
func worstEvidenceRatio(t *testing.T, g *graph.Graph, p *protect.Set, k Kind, unit privunit.Unit,
	bound func(sc *Scorer, u int32) EvidenceBound) float64 {
	t.Helper()
	sc, err := New(g, p, k)
	if err != nil {
		t.Fatal(err)
	}
	n := int32(g.N())
	base := make([]map[int32]float64, n)
	for u := range n {
		base[u] = evidenceVec(g, p, k, u)
	}
	worst := 0.0
	check := func(h *graph.Graph, skip func(u int32) bool) {
		sc2, err := New(h, p, k)
		if err != nil {
			t.Fatal(err)
		}
		for u := range n {
			if skip(u) {
				continue
			}
			b, b2 := bound(sc, u), bound(sc2, u)
			if b != b2 {
				t.Fatalf("%v %v: bound of u=%d not invariant: %+v vs %+v", k, unit, u, b, b2)
			}
			e2 := evidenceVec(h, p, k, u)
			var l1, l2, linf float64
			for v, x := range base[u] {
				d := math.Abs(x - e2[v])
				l1 += d
				l2 += d * d
				linf = max(linf, d)
			}
			l2 = math.Sqrt(l2)
			for _, c := range [][2]float64{{linf, b.Linf}, {l1, b.L1}, {l2, b.L2}} {
				if c[0] <= 1e-12 {
					continue
				}
				if c[1] <= 0 {
					worst = math.Inf(1)
					continue
				}
				worst = max(worst, c[0]/c[1])
			}
		}
	}
	for w := range n {
		pw := p.Of(w)
		if unit == privunit.Pair {
			for _, x := range pw {
				if x < w {
					continue
				}
				check(togglePairs(t, g, w, []int32{x}), func(u int32) bool { return u == w || u == x })
			}
			continue
		}
		if len(pw) > 7 {
			pw = pw[:7]
		}
		for mask := 1; mask < 1<<len(pw); mask++ {
			var xs []int32
			for i, x := range pw {
				if mask&(1<<i) != 0 {
					xs = append(xs, x)
				}
			}
			check(togglePairs(t, g, w, xs), func(u int32) bool {
				if u == w {
					return true
				}
				for _, x := range xs {
					if x == u {
						return true
					}
				}
				return false
			})
		}
	}
	return worst
}

func instanceGen(t *rapid.T, tb testing.TB) (*graph.Graph, *protect.Set) {
	n := rapid.IntRange(4, 8).Draw(t, "n")
	seed := rapid.Uint64().Draw(t, "seed")
	pe := rapid.Float64Range(0.2, 0.8).Draw(t, "pe")
	pp := rapid.Float64Range(0.1, 0.8).Draw(t, "pp")
	pn := rapid.Float64Range(0, 0.4).Draw(t, "pn")
	g, p, _ := randomInstance(tb, rand.New(rand.NewPCG(seed, 7)), n, pe, pp, pn)
	return g, p
}

// TestEvidenceBoundsBruteForce: on random small graphs, every realised
// change of the evidence vector under every neighbouring graph of both
// units is within the bounds, and the bounds are invariant.
func TestEvidenceBoundsBruteForce(t *testing.T) {
	for _, unit := range []privunit.Unit{privunit.Pair, privunit.Party} {
		for _, k := range Kinds() {
			t.Run(unit.String()+"/"+k.String(), func(t *testing.T) {
				rapid.Check(t, func(rt *rapid.T) {
					g, p := instanceGen(rt, t)
					w := worstEvidenceRatio(t, g, p, k, unit, func(sc *Scorer, u int32) EvidenceBound {
						b := sc.Evidence(u, unit)
						if tb := sc.EvidenceTable(unit)[u]; tb != b {
							t.Fatalf("Evidence %+v != EvidenceTable %+v", b, tb)
						}
						return b
					})
					if w > 1+1e-9 {
						rt.Fatalf("%v %v: realised change %.4g x the bound", unit, k, w)
					}
				})
			})
		}
	}
}

// TestEvidenceBoundsNegativeControl: deliberately too small bounds are
// caught by the same enumeration: AA ignoring the degree shifts of u's
// neighbours (only the new term), and the party unit charged the pair
// unit's bound.
func TestEvidenceBoundsNegativeControl(t *testing.T) {
	cases := []struct {
		name  string
		kind  Kind
		unit  privunit.Unit
		bound func(sc *Scorer, u int32) EvidenceBound
	}{
		{"aa-no-shift", AA, privunit.Pair, func(sc *Scorer, u int32) EvidenceBound {
			b := sc.Evidence(u, privunit.Pair)
			if b.L1 > 0 {
				b.L1 = 1 / math.Log(3) // a new term of a degree-2 node only
			}
			return b
		}},
		{"party-as-pair", CN, privunit.Party, func(sc *Scorer, u int32) EvidenceBound {
			return sc.Evidence(u, privunit.Pair)
		}},
		{"halved", RA, privunit.Pair, func(sc *Scorer, u int32) EvidenceBound {
			b := sc.Evidence(u, privunit.Pair)
			return EvidenceBound{b.Linf / 2, b.L1 / 2, b.L2 / 2}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			worst := 0.0
			for i := 0; i < 40 && worst <= 1; i++ {
				g, p, _ := randomInstance(t, rng, 7, 0.5, 0.5, 0.1)
				worst = max(worst, worstEvidenceRatio(t, g, p, tc.kind, tc.unit, tc.bound))
			}
			if worst <= 1 {
				t.Fatalf("too-small bound %s not caught (worst ratio %v)", tc.name, worst)
			}
		})
	}
}

// TestEvidenceHMonotone checks the monotonicity that Evidence's proof uses:
// h is non-increasing in D >= 1 and shift in D >= 2, for AA and RA.
func TestEvidenceHMonotone(t *testing.T) {
	for _, k := range []Kind{AA, RA} {
		s := &Scorer{kind: k}
		prevH, prevS := s.evidenceH(1), s.evidenceShift(2)
		for d := 2.0; d <= 1e6; d = math.Max(d+1, math.Floor(d*1.001)) {
			h, sh := s.evidenceH(d), s.evidenceShift(d)
			if h > prevH*(1+1e-12) || sh > prevS*(1+1e-12) {
				t.Fatalf("%v: not monotone at D=%v: h %v > %v or shift %v > %v", k, d, h, prevH, sh, prevS)
			}
			prevH, prevS = h, sh
		}
	}
}

// TestEvidenceTableCases pins the bounds on hand-built graphs.
func TestEvidenceTableCases(t *testing.T) {
	// Path 0-1-2 with {1,2} protected; 3 isolated, {2,3} protected.
	g, _, err := graph.FromEdges(4, []graph.Edge{{U: 0, V: 1}, {U: 1, V: 2}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := protect.New(4, []graph.Edge{{U: 1, V: 2}, {U: 2, V: 3}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind Kind
		unit privunit.Unit
		u    int32
		want EvidenceBound
	}{
		// u = 0: N(u) = {1}; {1,2} has one endpoint in N(u): CN moves e(2) by 1.
		{CN, privunit.Pair, 0, EvidenceBound{1, 1, 1}},
		// u = 3: N(u) empty: nothing moves.
		{CN, privunit.Pair, 3, EvidenceBound{}},
		// RA, u = 0: D(1) = 1 (its only invariant edge is to u): h(1) = 1/2.
		{RA, privunit.Pair, 0, EvidenceBound{0.5, 0.5, 0.5}},
		// PA, u = 0, d = 1: {2,3} has no endpoint in N(u): 2 x d.
		{PA, privunit.Pair, 0, EvidenceBound{1, 2, math.Sqrt(2)}},
	} {
		sc, err := New(g, p, tc.kind)
		if err != nil {
			t.Fatal(err)
		}
		if got := sc.Evidence(tc.u, tc.unit); !near(got.L1, tc.want.L1) || !near(got.Linf, tc.want.Linf) || !near(got.L2, tc.want.L2) {
			t.Errorf("%v %v u=%d: got %+v, want %+v", tc.kind, tc.unit, tc.u, got, tc.want)
		}
	}
	sc, _ := New(g, p, CN)
	if b := sc.Evidence(-1, privunit.Pair); !math.IsInf(b.L1, 1) {
		t.Errorf("out-of-range node: %+v", b)
	}
	if b := sc.Evidence(0, privunit.Unit(9)); !math.IsInf(b.L1, 1) {
		t.Errorf("invalid unit: %+v", b)
	}
}

// TestMaxProtOf: max over w != u of |prot(w) \ {u}| from the sorted order
// equals the O(n) scan it replaced, for every node, on random marks.
func TestMaxProtOf(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		g, p := instanceGen(rt, t)
		sc, err := New(g, p, JC)
		if err != nil {
			t.Fatal(err)
		}
		for u := int32(0); int(u) < g.N(); u++ {
			want := 0
			for w := int32(0); int(w) < g.N(); w++ {
				if w != u {
					c := p.Count(w)
					if p.Has(w, u) {
						c--
					}
					want = max(want, c)
				}
			}
			if got := sc.maxProtOf(u, sc.protOrder()); got != want {
				rt.Fatalf("u %d: maxProtOf %d, scan %d", u, got, want)
			}
		}
	})
}
