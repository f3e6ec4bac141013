package score

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"pgregory.net/rapid"
)

// sameResult fails unless got and want are identical: the same candidates in
// the same order, bit-identical scores, the same Zero, Wedges and
// sensitivities.
func sameResult(t fataler, k Kind, got, want *Result) {
	t.Helper()
	if got.U != want.U || got.Zero != want.Zero || got.Wedges != want.Wedges ||
		math.Float64bits(got.DeltaS) != math.Float64bits(want.DeltaS) || math.Float64bits(got.SMax) != math.Float64bits(want.SMax) {
		t.Fatalf("%v u=%d: U/Zero/Wedges/DeltaS/SMax %d/%d/%d/%v/%v, want %d/%d/%d/%v/%v", k, want.U,
			got.U, got.Zero, got.Wedges, got.DeltaS, got.SMax, want.U, want.Zero, want.Wedges, want.DeltaS, want.SMax)
	}
	if !slices.Equal(got.Cands, want.Cands) {
		t.Fatalf("%v u=%d: candidates (or their order) differ: %d vs %d listed", k, want.U, len(got.Cands), len(want.Cands))
	}
	bits := func(xs []float64) []uint64 {
		out := make([]uint64, len(xs))
		for i, x := range xs {
			out[i] = math.Float64bits(x)
		}
		return out
	}
	if !slices.Equal(bits(got.S), bits(want.S)) || !slices.Equal(bits(got.Pub), bits(want.Pub)) {
		t.Fatalf("%v u=%d: scores are not bit-identical to the reference kernel", k, want.U)
	}
}

// checkKernel scores queries with a Worker and with the reference kernel
// (ref_test.go) and requires identical results, and that At, InZero and
// ZeroCands agree with them on every node. Every kind is checked with the
// dense accumulators and with the hash accumulator (hashacc.go), forced:
// these graphs are far below the size where useHash picks the table.
func checkKernel(t fataler, g *graph.Graph, p *protect.Set, queries []int32) {
	t.Helper()
	for _, kw := range []struct {
		k    Kind
		wide bool
		mode accMode
		// perQuery: the worker finds DeltaS per query (folded into the
		// table's scatter, or the pass for u alone), as on large graphs;
		// the reference reads the scorer's table.
		perQuery bool
	}{{CN, false, accAuto, false}, {CN, true, accAuto, false}, {JC, false, accAuto, false}, {JC, true, accAuto, false},
		{AA, false, accDense, false}, {RA, false, accDense, false}, {AA, false, accHash, false}, {RA, false, accHash, false},
		{CN, false, accHash, false}, {CN, true, accHash, false}, {JC, false, accHash, false},
		{AA, false, accHash, true}, {RA, false, accHash, true}, {CN, false, accHash, true},
		{AA, false, accDense, true}, {CN, false, accAuto, true}} {
		k := kw.k
		sc, err := New(g, p, k)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		if kw.wide {
			// CN/JC use 32-bit counters when every degree is below 2^15;
			// pretend otherwise so that the 64-bit ones are checked too.
			sc.maxDeg = max(sc.maxDeg, 1<<15)
		}
		sc.accMode = kw.mode
		sc.perQuery = kw.perQuery
		w, ref := sc.NewWorker(), newRefWorker(sc)
		wn := sc.NewWorker() // ScoreNoPublic: the same but Pub
		wh := sc.NewWorker() // ScoreHeld: ScoreNoPublic's candidates left in the table
		var np, hr Result
		if (w.cnt32 != nil) == kw.wide && (k == CN || k == JC) {
			t.Fatalf("%v: wide counters %v, want %v", k, w.cnt32 == nil, kw.wide)
		}
		var got, want Result
		var pos []int
		var notCand []bool
		for qi, u := range queries {
			if kw.mode == accHash && len(queries) > 300 && qi%3 != 0 {
				continue // the table is checked on every third query of large lists
			}
			w.Score(u, &got)
			ref.Score(u, &want)
			sameResult(t, k, &got, &want)
			checkRange(t, k, &got)
			// Without public sums: every query of the tables (where the
			// 16-byte slots are), every eighth of the dense accumulators
			// (which only leave Pub out).
			np8 := qi%8 == 0 && (kw.mode == accHash || qi%32 == 0)
			if kw.mode == accHash || qi%8 == 0 {
				wn.ScoreNoPublic(u, &np)
				wantNP := want
				wantNP.Pub = nil
				sameResult(t, k, &np, &wantNP)
				if np.SRange != got.SRange || np.SLo != got.SLo || np.SHi != got.SHi {
					t.Fatalf("%v u=%d: without public sums the range is %v [%v, %v], with them %v [%v, %v]", k, u, np.SRange, np.SLo, np.SHi, got.SRange, got.SLo, got.SHi)
				}
				if wn.hashed != w.hashed && kw.mode == accHash {
					t.Fatalf("%v u=%d: hashed %v without public sums, %v with", k, u, wn.hashed, w.hashed)
				}
				if wn.hashed && wn.hpub != (k == JC) {
					t.Fatalf("%v u=%d: table with public sums %v without them", k, u, wn.hpub)
				}
				wh.ScoreHeld(u, &hr)
				checkHeld(t, k, wh, &hr, &np, wn.hashed && !wn.hpub)
			} else {
				np8 = false
			}
			if w.hashed != (kw.mode == accHash) {
				t.Fatalf("%v u=%d: hashed %v with mode %d", k, u, w.hashed, kw.mode)
			}
			if fold := kw.perQuery && w.hashed && !sc.nonEdge && sc.deg[u] < 1<<cBits; w.folded != fold {
				t.Fatalf("%v u=%d: DeltaS folded into the scatter %v, want %v", k, u, w.folded, fold)
			}
			// At, InZero, CandScore and ZeroCands read the accumulators left by Score:
			// checked on every node after every fourth query (an O(N) sweep;
			// the race detector makes it the bulk of the package's tests).
			if qi%4 != 0 {
				continue
			}
			held16 := np8 && kw.mode == accHash && qi%16 == 0
			// Dense lookups for the sweep (a map and g.HasEdge per node
			// were most of its time): pos[v] is v's index in Cands or -1,
			// notCand[v] is true for u and its neighbours.
			var zero []int32
			if pos == nil {
				pos, notCand = make([]int, g.N()), make([]bool, g.N())
			}
			for i := range pos {
				pos[i], notCand[i] = -1, false
			}
			for i, v := range got.Cands {
				pos[v] = i
			}
			notCand[u] = true
			for _, z := range g.Neighbors(u) {
				notCand[z] = true
			}
			for v := int32(0); int(v) < g.N(); v++ {
				s, pub := w.At(v)
				if np8 { // without public sums: the queries np8 says
					if sn, pn := wn.At(v); math.Float64bits(sn) != math.Float64bits(s) || !math.IsNaN(pn) || wn.InZero(v) != w.InZero(v) {
						t.Fatalf("%v u=%d: without public sums At(%d) = (%v,%v), InZero %v; with them (%v,%v), %v", k, u, v, sn, pn, wn.InZero(v), s, pub, w.InZero(v))
					}
				}
				if held16 { // ScoreHeld's lookups: every sixteenth query of the tables
					sh, ph := wh.At(v)
					csh, okh := wh.CandScore(v)
					i := pos[v]
					if math.Float64bits(sh) != math.Float64bits(s) || !math.IsNaN(ph) || wh.InZero(v) != w.InZero(v) ||
						okh != (i >= 0) || (okh && math.Float64bits(csh) != math.Float64bits(got.S[i])) {
						t.Fatalf("%v u=%d: held At(%d) = (%v,%v), InZero %v, CandScore (%v,%v); want (%v,NaN), %v, listed %v", k, u, v, sh, ph, wh.InZero(v), csh, okh, s, w.InZero(v), i >= 0)
					}
				}
				i := pos[v]
				listed := i >= 0
				if cs, ok := w.CandScore(v); ok != listed || (listed && math.Float64bits(cs) != math.Float64bits(got.S[i])) {
					t.Fatalf("%v u=%d: CandScore(%d) = (%v, %v), listed %v", k, u, v, cs, ok, listed)
				}
				if np8 {
					if cs, ok := wn.CandScore(v); ok != listed || (listed && math.Float64bits(cs) != math.Float64bits(got.S[i])) {
						t.Fatalf("%v u=%d: without public sums CandScore(%d) = (%v, %v), listed %v", k, u, v, cs, ok, listed)
					}
				}
				switch {
				case listed && (s != got.S[i] || pub != got.Pub[i]):
					t.Fatalf("%v u=%d: At(%d) = (%v,%v), listed (%v,%v)", k, u, v, s, pub, got.S[i], got.Pub[i])
				case !listed && !notCand[v] && (s != 0 || pub != 0 || !w.InZero(v)):
					t.Fatalf("%v u=%d: unlisted candidate %d has At (%v,%v), InZero %v", k, u, v, s, pub, w.InZero(v))
				case listed && w.InZero(v):
					t.Fatalf("%v u=%d: listed %d reported in the Zero block", k, u, v)
				case notCand[v] && w.InZero(v):
					t.Fatalf("%v u=%d: %d (u or a neighbour) reported in the Zero block", k, u, v)
				}
				if !listed && !notCand[v] {
					zero = append(zero, v)
				}
			}
			if qi%8 != 0 {
				continue // ZeroCands is another O(N) scan: every eighth query
			}
			if held16 {
				if zc := wh.ZeroCands(nil); !slices.Equal(zc, zero) {
					t.Fatalf("%v u=%d: held ZeroCands lists %d nodes, want %d", k, u, len(zc), len(zero))
				}
			}
			if np8 {
				if zc := wn.ZeroCands(nil); !slices.Equal(zc, zero) {
					t.Fatalf("%v u=%d: without public sums ZeroCands lists %d nodes, want %d", k, u, len(zc), len(zero))
				}
			}
			if zc := w.ZeroCands(nil); !slices.Equal(zc, zero) || len(zc) != got.Zero {
				t.Fatalf("%v u=%d: ZeroCands lists %d nodes, want %d (Zero %d)", k, u, len(zc), len(zero), got.Zero)
			}
		}
	}
}

// checkHeld checks a ScoreHeld result hr of worker wh against the
// ScoreNoPublic result np of the same query: with held (a table of
// 16-byte slots) the same candidates in the same order with bit-identical
// scores through HeldAt, the largest of them as SHi and a lower bound as
// SLo; otherwise np itself.
func checkHeld(t fataler, k Kind, wh *Worker, hr, np *Result, held bool) {
	t.Helper()
	if !held {
		if hr.Held != 0 || wh.held {
			t.Fatalf("%v u=%d: %d candidates held without a table of 16-byte slots", k, hr.U, hr.Held)
		}
		sameResult(t, k, hr, np)
		if hr.SRange != np.SRange || hr.SLo != np.SLo || hr.SHi != np.SHi {
			t.Fatalf("%v u=%d: extracted by ScoreHeld the range is %v [%v, %v], by ScoreNoPublic %v [%v, %v]", k, hr.U, hr.SRange, hr.SLo, hr.SHi, np.SRange, np.SLo, np.SHi)
		}
		return
	}
	if len(hr.Cands) != 0 || len(hr.S) != 0 || hr.Held != len(np.Cands) || hr.NumCandidates() != np.NumCandidates() {
		t.Fatalf("%v u=%d: held %d (listed %d), want %d held of %d candidates", k, hr.U, hr.Held, len(hr.Cands), len(np.Cands), np.NumCandidates())
	}
	flat := *hr
	flat.Cands, flat.S = nil, nil
	for i := range hr.Held {
		v, s := wh.HeldAt(i)
		flat.Cands = append(flat.Cands, v)
		flat.S = append(flat.S, s)
	}
	want := *np
	want.Pub = nil
	sameResult(t, k, &flat, &want)
	if hr.SRange != (hr.Held > 0) {
		t.Fatalf("%v u=%d: held range stated %v for %d candidates", k, hr.U, hr.SRange, hr.Held)
	}
	if hr.Held > 0 && (hr.SHi != slices.Max(np.S) || !(hr.SLo <= slices.Min(np.S)) || !(hr.SLo > 0)) {
		t.Fatalf("%v u=%d: held range [%v, %v], scores in [%v, %v]: want the largest and a positive lower bound", k, hr.U, hr.SLo, hr.SHi, slices.Min(np.S), slices.Max(np.S))
	}
}

// checkRange: an AA or RA result with candidates states its scores'
// exact range, and a stated range is the smallest and largest score.
func checkRange(t fataler, k Kind, r *Result) {
	t.Helper()
	if (k == AA || k == RA) && len(r.S) > 0 && !r.SRange {
		t.Fatalf("%v u=%d: no range for %d scores", k, r.U, len(r.S))
	}
	if r.SRange && (len(r.S) == 0 || r.SLo != slices.Min(r.S) || r.SHi != slices.Max(r.S)) {
		t.Fatalf("%v u=%d: range [%v, %v] of %d scores, want [min, max]", k, r.U, r.SLo, r.SHi, len(r.S))
	}
}

func allNodes(n int) []int32 {
	q := make([]int32, n)
	for i := range q {
		q[i] = int32(i)
	}
	return q
}

// TestKernelMatchesReferenceHubs: on hub-heavy Barabasi-Albert graphs with
// protected edges and protected non-edges, every query scores exactly as
// the reference kernel: same candidates in the same order, bit-identical
// s and s_pub (AA/RA sums added in the same order), Wedges and Zero.
func TestKernelMatchesReferenceHubs(t *testing.T) {
	for _, c := range []struct {
		n, m     int
		sigma    float64
		nonEdges float64
	}{
		{2000, 3, 0.3, 0.001},
		{3000, 8, 0.5, 0},
		{500, 1, 0.2, 0.01}, // a tree: degree-1 neighbours, empty protected parts
		{1500, 5, 0, 0},     // nothing protected
		{1500, 5, 1, 0},     // every edge protected
	} {
		g := barabasiAlbert(t, c.n, c.m, uint64(c.n+c.m))
		p, err := protect.Synthetic(g, c.sigma, c.nonEdges, randx.Seeded(uint64(c.m)))
		if err != nil {
			t.Fatal(err)
		}
		queries := allNodes(g.N())
		if testing.Short() {
			queries = queries[:200]
		}
		checkKernel(t, g, p, queries)
	}
}

// TestKernelMatchesReferenceRapid: the same on random small graphs, with
// hubs planted (stars over random subsets) and random protected pairs.
func TestKernelMatchesReferenceRapid(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 60).Draw(t, "n")
		node := rapid.Int32Range(0, int32(n-1))
		var edges []graph.Edge
		for range rapid.IntRange(0, 3).Draw(t, "hubs") {
			h := node.Draw(t, "hub")
			for v := int32(0); int(v) < n; v++ {
				if v != h && rapid.Float64Range(0, 1).Draw(t, "x") < 0.6 {
					edges = append(edges, graph.Edge{U: h, V: v})
				}
			}
		}
		for range rapid.IntRange(1, 3*n).Draw(t, "edges") {
			edges = append(edges, graph.Edge{U: node.Draw(t, "a"), V: node.Draw(t, "b")})
		}
		g, _, err := graph.FromEdges(n, edges, nil)
		if err != nil {
			t.Skip("no edges")
		}
		var prot []graph.Edge
		for _, e := range g.EdgeList() {
			if rapid.Bool().Draw(t, "protEdge") {
				prot = append(prot, e)
			}
		}
		for range rapid.IntRange(0, n).Draw(t, "protNonEdges") {
			if e := (graph.Edge{U: node.Draw(t, "pa"), V: node.Draw(t, "pb")}); e.U != e.V {
				prot = append(prot, e)
			}
		}
		p, err := protect.New(n, prot)
		if err != nil {
			t.Fatalf("protect.New: %v", err)
		}
		checkKernel(t, g, p, allNodes(n))
	})
}

// TestScoreMatchesPairHubs is TestScoreMatchesPairMedium on a hub-heavier
// graph (m = 2 on 400 nodes: a few nodes of degree 30-60, most of degree 2-4)
// with protected edges and non-edges, against the brute-force definitions.
func TestScoreMatchesPairHubs(t *testing.T) {
	g := barabasiAlbert(t, 400, 2, 5)
	p, err := protect.Synthetic(g, 0.4, 0.01, randx.Seeded(11))
	if err != nil {
		t.Fatal(err)
	}
	// The hubs (the oldest nodes) and a spread of the rest.
	queries := []int32{0, 1, 2, 3, 4, 5, 399}
	if !testing.Short() {
		for u := int32(6); u < 400; u += 13 {
			queries = append(queries, u)
		}
	}
	for _, k := range Kinds() {
		sc, err := New(g, p, k)
		if err != nil {
			t.Fatal(err)
		}
		w := sc.NewWorker()
		var r Result
		for _, u := range queries {
			w.Score(u, &r)
			checkQuery(t, g, p, k, w, &r, u)
		}
	}
}

// twoHubs is the graph of TestKernelWideCounters and
// TestSensitivityPerQueryHubs: two non-adjacent hubs 0 and 1 sharing
// 2^15 + 4 leaves, the leaves partly linked in a path, 30% of the edges
// protected (no protected non-edge).
func twoHubs(t *testing.T) (*graph.Graph, *protect.Set) {
	t.Helper()
	n := 1<<15 + 6
	var edges []graph.Edge
	for v := int32(2); int(v) < n; v++ {
		edges = append(edges, graph.Edge{U: 0, V: v}, graph.Edge{U: 1, V: v})
		if v > 2 && v%3 != 0 {
			edges = append(edges, graph.Edge{U: v - 1, V: v})
		}
	}
	g, _, err := graph.FromEdges(n, edges, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := protect.Synthetic(g, 0.3, 0, randx.Seeded(3))
	if err != nil {
		t.Fatal(err)
	}
	return g, p
}

// TestKernelWideCounters: two non-adjacent hubs sharing 2^15 + 4 leaves
// (CN(0, 1) does not fit in a 16-bit count), the leaves partly linked in a
// path: CN and JC take the 64-bit counters and match the reference and the
// definitions.
func TestKernelWideCounters(t *testing.T) {
	g, p := twoHubs(t)
	n := g.N()
	for _, k := range []Kind{CN, JC} {
		sc, err := New(g, p, k)
		if err != nil {
			t.Fatal(err)
		}
		w, ref := sc.NewWorker(), newRefWorker(sc)
		if w.cnt == nil || w.cnt32 != nil {
			t.Fatalf("%v: max degree %d, but 64-bit counters not chosen", k, sc.maxDeg)
		}
		var got, want Result
		for _, u := range []int32{0, 1, 2, 3, 1000, int32(n - 1)} {
			w.Score(u, &got)
			ref.Score(u, &want)
			sameResult(t, k, &got, &want)
			checkRange(t, k, &got)
			for _, v := range []int32{0, 1, 2, 5, 999, 1001, int32(n - 2)} {
				if v == u {
					continue
				}
				s, pub := w.At(v)
				ws, wpub := Pair(g, p, k, u, v)
				if !near(s, ws) || !near(pub, wpub) {
					t.Fatalf("%v u=%d: At(%d) = (%v,%v), want (%v,%v)", k, u, v, s, pub, ws, wpub)
				}
			}
		}
		if k == CN {
			w.Score(0, &got)
			if s, _ := w.At(1); s != float64(n-2) {
				t.Fatalf("CN(0, 1) = %v, want %d", s, n-2)
			}
		}
	}
}

// TestUseHash: the table is chosen only where the dense accumulators span
// at least hashMinDense bytes and the query's table would be at most a
// quarter of them, sized to the next power of two >= 2 W(u); forced modes
// override the rule.
func TestUseHash(t *testing.T) {
	// A star of 50,000 leaves and a path 0-1-2: a leaf reaches 50,000
	// wedges through the centre, node 1 reaches 2.
	const leaves = 50000
	var edges []graph.Edge
	for v := 1; v <= leaves; v++ {
		edges = append(edges, graph.Edge{U: 0, V: int32(v)})
	}
	edges = append(edges, graph.Edge{U: leaves + 1, V: leaves + 2}, graph.Edge{U: leaves + 2, V: leaves + 3})
	g, _, err := graph.FromEdges(leaves+4, edges, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := New(g, nil, AA)
	if err != nil {
		t.Fatal(err)
	}
	w := sc.NewWorker()
	nb := func(u int32) []int32 { return sc.adj[sc.off[u]:sc.off[u+1]] }
	for _, c := range []struct {
		name     string
		mode     accMode
		accLen   int // dense accumulators, 16 bytes each
		u        int32
		wantHash bool
		wantSize int
	}{
		{"small graph", accAuto, len(w.acc), 1, false, 0},
		{"large graph, small query", accAuto, 1 << 19, leaves + 2, true, 16},
		{"large graph, table over a quarter", accAuto, 1 << 19, 1, false, 0},
		{"larger graph, the same query", accAuto, 1 << 22, 1, true, 1 << 17},
		{"just below hashMinDense", accAuto, hashMinDense/16 - 1, leaves + 2, false, 0},
		{"forced dense", accDense, 1 << 22, leaves + 2, false, 0},
		{"forced hash, small graph", accHash, len(w.acc), 1, true, 1 << 17},
	} {
		sc.accMode = c.mode
		w.acc = make([]accum, c.accLen)
		ok, size := w.useHash(nb(c.u), int64(unsafe.Sizeof(hslot{})))
		if ok != c.wantHash || size != c.wantSize {
			t.Errorf("%s: useHash = %v, %d; want %v, %d", c.name, ok, size, c.wantHash, c.wantSize)
		}
	}
}

// TestSensitivityPerQueryHubs: two hubs of degree 2^15 + 4 whose counts
// c reach thousands (a hub's neighbours are the protected partners of the
// other hub): a worker that finds DeltaS per query with the table gives
// the definitions' values, folding them into the scatter for the queries of
// degree below 1<<cBits (whose counts fit in a slot's key) and running the
// pass for the hubs alone. The reference is sensitivityByNeighbours (linear
// in the hubs' partners; TestSensitivityByNeighbours checks it against the
// brute force), not the scorer's pass over all 2^15 nodes, which under the
// race detector took over a minute.
func TestSensitivityPerQueryHubs(t *testing.T) {
	g, p := twoHubs(t)
	n := g.N()
	for _, k := range []Kind{CN, AA, RA} {
		sc, err := newScorer(g, p, k, accHash)
		if err != nil {
			t.Fatal(err)
		}
		if !sc.perQuery || sc.nonEdge {
			t.Fatalf("%v: perQuery %v, protected non-edges %v", k, sc.perQuery, sc.nonEdge)
		}
		w := sc.NewWorker()
		var r Result
		for _, u := range []int32{0, 1, 2, 3, 1000, int32(n - 1)} {
			w.Score(u, &r)
			want := sensitivityByNeighbours(g, p, k, u)
			if r.DeltaS != want || w.folded != (sc.deg[u] < 1<<cBits) {
				t.Fatalf("%v u=%d (degree %d): DeltaS %v (folded %v), the definitions' %v", k, u, sc.deg[u], r.DeltaS, w.folded, want)
			}
		}
		if k == CN {
			if d := sensitivityByNeighbours(g, p, k, 0); d < 1<<cBits {
				t.Fatalf("CN: hub's DeltaS %v: no count beyond a key's", d)
			}
		}
	}
}

// TestSensitivityByNeighbours: the linear reference of the per-query
// tests equals the brute force of the definitions on random graphs with
// protected non-edges.
func TestSensitivityByNeighbours(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	for trial := range 40 {
		g, p, _ := randomInstance(t, rng, 5+trial%20, 0.3, 0.5, 0.05)
		for _, k := range []Kind{CN, AA, RA} {
			for u := range int32(g.N()) {
				want, _ := bruteSensitivity(g, p, k, u)
				if got := sensitivityByNeighbours(g, p, k, u); got != want {
					t.Fatalf("trial %d %v u=%d: %v, brute force %v", trial, k, u, got, want)
				}
			}
		}
	}
}

// TestSensitivityHashHubs: on hub-heavy graphs (counts in the hundreds) the
// sensitivity pass gives the same DeltaS with the hash counters forced as
// with the dense ones.
func TestSensitivityHashHubs(t *testing.T) {
	g := barabasiAlbert(t, 3000, 8, 11)
	p, err := protect.Synthetic(g, 0.5, 0.001, randx.Seeded(3))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []Kind{CN, AA, RA} {
		dense, err := newScorer(g, p, k, accDense)
		if err != nil {
			t.Fatal(err)
		}
		hashed, err := newScorer(g, p, k, accHash)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(dense.deltaS, hashed.sensTable()) {
			t.Fatalf("%v: DeltaS differs between the dense and the hash counters", k)
		}
		if k == CN && slices.Max(dense.deltaS) < 20 { // CN's DeltaS is the largest count
			t.Fatalf("%v: largest DeltaS %v: the graph has no hub-sized counts", k, slices.Max(dense.deltaS))
		}
	}
}

// TestHashGenerationWrap: when the table's generation counter wraps, the
// table is cleared, so the slots of the query scored at generation 1 do
// not reappear in the next query scored at generation 1.
func TestHashGenerationWrap(t *testing.T) {
	g := barabasiAlbert(t, 800, 4, 9)
	p, err := protect.Synthetic(g, 0.3, 0, randx.Seeded(2))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []Kind{CN, AA} {
		sc, err := newScorer(g, p, k, accHash)
		if err != nil {
			t.Fatal(err)
		}
		w, ref := sc.NewWorker(), newRefWorker(sc)
		var got, want Result
		w.Score(0, &got) // generation 1: a hub's many candidates
		if w.hgen != 1 {
			t.Fatalf("%v: first generation %d", k, w.hgen)
		}
		w.hgen = genMax
		for _, u := range []int32{0, 5, 400} { // 0 again, at generation 1 again: the same slots
			w.Score(u, &got)
			ref.Score(u, &want)
			sameResult(t, k, &got, &want)
			checkRange(t, k, &got)
		}
	}
}

// TestAutoHashLargeGraph: on a graph whose AA accumulators span 8 MB
// (2^19 slots of 16 bytes for more than 2^18 nodes) the kernel picks the
// table by itself, and the results are the reference kernel's.
func TestAutoHashLargeGraph(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 300,000-node graph")
	}
	g := barabasiAlbert(t, 300000, 3, 4)
	p, err := protect.Synthetic(g, 0.3, 0, randx.Seeded(6))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := New(g, p, AA)
	if err != nil {
		t.Fatal(err)
	}
	w, ref := sc.NewWorker(), newRefWorker(sc)
	wn, wh := sc.NewWorker(), sc.NewWorker()
	var got, want, np, hr Result
	hashed, held := 0, 0
	for u := int32(0); u < 300000; u += 3001 {
		w.Score(u, &got)
		ref.Score(u, &want)
		sameResult(t, AA, &got, &want)
		if w.hashed {
			hashed++
		}
		// ScoreHeld where the kernel chooses the table itself.
		wn.ScoreNoPublic(u, &np)
		wh.ScoreHeld(u, &hr)
		checkHeld(t, AA, wh, &hr, &np, wn.hashed)
		if hr.Held > 0 {
			held++
		}
	}
	if hashed == 0 || held == 0 {
		t.Fatalf("%d queries used the table and %d held their candidates on a graph above the threshold", hashed, held)
	}
}

// TestRangeNotStale: a Result scored by AA and then by a path that does
// not find the range (CN's dense counters, PA) does not keep AA's range.
func TestRangeNotStale(t *testing.T) {
	g := barabasiAlbert(t, 300, 3, 7)
	p, err := protect.Synthetic(g, 0.3, 0, randx.Seeded(7))
	if err != nil {
		t.Fatal(err)
	}
	var r Result
	for _, k := range []Kind{CN, PA} {
		aa, err := New(g, p, AA)
		if err != nil {
			t.Fatal(err)
		}
		other, err := New(g, p, k)
		if err != nil {
			t.Fatal(err)
		}
		aa.NewWorker().Score(1, &r)
		if !r.SRange {
			t.Fatal("AA found no range")
		}
		other.NewWorker().Score(1, &r)
		checkRange(t, k, &r)
	}
}

// TestSlotLayout: both kinds of table slot hold the key at offset 0 and the
// full-graph sum at offset 8, where keyOf and sumOf read them.
func TestSlotLayout(t *testing.T) {
	var h hslot
	var s sslot
	if unsafe.Offsetof(h.key) != 0 || unsafe.Offsetof(s.key) != 0 || unsafe.Offsetof(h.s) != 8 || unsafe.Offsetof(s.s) != 8 {
		t.Fatalf("slot layout: key at %d and %d, sum at %d and %d", unsafe.Offsetof(h.key), unsafe.Offsetof(s.key), unsafe.Offsetof(h.s), unsafe.Offsetof(s.s))
	}
	if unsafe.Sizeof(s) != 16 {
		t.Fatalf("sslot is %d bytes, want 16", unsafe.Sizeof(s))
	}
	h.key, h.s, s.key, s.s = 7, 1.5, 9, -2.5
	if *keyOf(&h) != 7 || *sumOf(&h) != 1.5 || *keyOf(&s) != 9 || *sumOf(&s) != -2.5 {
		t.Fatal("keyOf or sumOf reads the wrong field")
	}
}
