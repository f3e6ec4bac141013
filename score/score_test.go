package score

import (
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
	"pgregory.net/rapid"
)

type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// checkQuery checks one scored query against the brute force: listed scores,
// the Zero block, At for every node, the candidate set and the sensitivity.
func checkQuery(t fataler, g *graph.Graph, p *protect.Set, k Kind, w *Worker, r *Result, u int32) {
	t.Helper()
	n := int32(g.N())
	if r.U != u {
		t.Fatalf("%v u=%d: r.U=%d", k, u, r.U)
	}
	ds, sm := bruteSensitivity(g, p, k, u)
	if !near(r.DeltaS, ds) || !near(r.SMax, sm) {
		t.Fatalf("%v u=%d: sensitivity (%v,%v), want (%v,%v)", k, u, r.DeltaS, r.SMax, ds, sm)
	}
	if len(r.S) != len(r.Cands) || len(r.Pub) != len(r.Cands) {
		t.Fatalf("%v u=%d: slice lengths %d %d %d", k, u, len(r.Cands), len(r.S), len(r.Pub))
	}
	if want := int(n) - 1 - g.Degree(u); r.NumCandidates() != want || r.Zero < 0 {
		t.Fatalf("%v u=%d: %d listed + %d zero, want %d candidates", k, u, len(r.Cands), r.Zero, want)
	}
	listed := map[int32]bool{}
	for i, v := range r.Cands {
		if v == u || g.HasEdge(u, v) || v < 0 || v >= n {
			t.Fatalf("%v u=%d: non-candidate %d listed", k, u, v)
		}
		if listed[v] {
			t.Fatalf("%v u=%d: %d listed twice", k, u, v)
		}
		listed[v] = true
		s, pub := Pair(g, p, k, u, v)
		if !near(r.S[i], s) || !near(r.Pub[i], pub) {
			t.Fatalf("%v u=%d v=%d: got (%v,%v), want (%v,%v)", k, u, v, r.S[i], r.Pub[i], s, pub)
		}
		if r.S[i] < 0 || r.Pub[i] < 0 || r.S[i] > r.SMax*(1+1e-12) || r.Pub[i] > r.SMax*(1+1e-12) {
			t.Fatalf("%v u=%d v=%d: (%v,%v) outside [0, %v]", k, u, v, r.S[i], r.Pub[i], r.SMax)
		}
		if cn, _ := Pair(g, p, CN, u, v); k != PA && cn == 0 {
			t.Fatalf("%v u=%d: %d listed without a common neighbour", k, u, v)
		}
	}
	zero := w.ZeroCands(nil)
	if len(zero) != r.Zero || !slices.IsSorted(zero) {
		t.Fatalf("%v u=%d: ZeroCands %v, Zero=%d", k, u, zero, r.Zero)
	}
	if k == PA && r.Zero != 0 {
		t.Fatalf("PA u=%d: Zero=%d", u, r.Zero)
	}
	for _, v := range zero {
		if v == u || g.HasEdge(u, v) || listed[v] {
			t.Fatalf("%v u=%d: zero block holds %d (listed=%v)", k, u, v, listed[v])
		}
		// Untouched: no common neighbour at all, hence both scores 0.
		if cn, _ := Pair(g, p, CN, u, v); cn != 0 {
			t.Fatalf("%v u=%d: %d in zero block with CN %v", k, u, v, cn)
		}
		if s, pub := Pair(g, p, k, u, v); s != 0 || pub != 0 {
			t.Fatalf("%v u=%d v=%d: zero block but Pair=(%v,%v)", k, u, v, s, pub)
		}
	}
	for v := int32(0); v < n; v++ {
		s, pub := w.At(v)
		ws, wpub := Pair(g, p, k, u, v)
		if !near(s, ws) || !near(pub, wpub) {
			t.Fatalf("%v u=%d: At(%d)=(%v,%v), want (%v,%v)", k, u, v, s, pub, ws, wpub)
		}
	}
	if k != PA {
		var wedges int64
		for _, z := range g.Neighbors(u) {
			wedges += int64(g.Degree(z))
		}
		if r.Wedges != wedges {
			t.Fatalf("%v u=%d: %d wedges, want %d", k, u, r.Wedges, wedges)
		}
	}
}

func TestScoreMatchesPairRapid(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 24).Draw(t, "n")
		node := rapid.Int32Range(0, int32(n-1))
		pair := rapid.Custom(func(t *rapid.T) graph.Edge {
			return graph.Edge{U: node.Draw(t, "a"), V: node.Draw(t, "b")}
		})
		edges := rapid.SliceOfN(pair, 1, 3*n).Draw(t, "edges")
		g, _, err := graph.FromEdges(n, edges, nil)
		if err != nil {
			t.Skip("no edges")
		}
		var prot []graph.Edge
		for _, e := range rapid.SliceOfN(pair, 0, 2*n).Draw(t, "prot") {
			if e.U != e.V {
				prot = append(prot, e)
			}
		}
		// Protect some existing edges too, so protected edges are common.
		for _, e := range g.EdgeList() {
			if rapid.Bool().Draw(t, "protEdge") {
				prot = append(prot, e)
			}
		}
		p, err := protect.New(n, prot)
		if err != nil {
			t.Fatalf("protect.New: %v", err)
		}
		for _, k := range Kinds() {
			sc, err := New(g, p, k)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			w := sc.NewWorker()
			var r Result
			for u := int32(0); int(u) < n; u++ {
				w.Score(u, &r)
				checkQuery(t, g, p, k, w, &r, u)
			}
		}
	})
}

// TestScoreMatchesPairMedium runs the same checks on larger skewed graphs
// (hubs, many protected edges and non-edges) for a sample of queries.
func TestScoreMatchesPairMedium(t *testing.T) {
	rng := randx.Seeded(7)
	g := barabasiAlbert(t, 150, 4, 3)
	p, err := protect.Synthetic(g, 0.3, 0.02, rng)
	if err != nil {
		t.Fatal(err)
	}
	queries := []int32{0, 1, 2, 5, 40, 149}
	if !testing.Short() {
		for u := int32(0); u < 150; u += 7 {
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

// TestSensitivityEnumeration toggles every subset of every w's toggleable
// pairs on small graphs and checks the §4 bound, the invariance of s_pub,
// DeltaS, SMax and the candidate set, and the fast scorer on G'.
func TestSensitivityEnumeration(t *testing.T) {
	rng := randx.Seeded(11)
	graphs := 25
	if testing.Short() {
		graphs = 6
	}
	worst := map[Kind]float64{}
	cases := 0
	for gi := range graphs {
		n := 6 + gi%4
		g, p, edges := randomInstance(t, rng, n, 0.45, 0.35, 0.25)
		base := make([]*Scorer, numKinds)
		for _, k := range Kinds() {
			var err error
			if base[k], err = New(g, p, k); err != nil {
				t.Fatal(err)
			}
		}
		edgeSet := map[graph.Edge]bool{}
		for _, e := range edges {
			edgeSet[e] = true
		}
		for u := int32(0); int(u) < n; u++ {
			var cands []int32
			for v := int32(0); int(v) < n; v++ {
				if v != u && !g.HasEdge(u, v) {
					cands = append(cands, v)
				}
			}
			for w := int32(0); int(w) < n; w++ {
				if w == u {
					continue
				}
				var tog []int32
				for _, x := range p.Of(w) {
					if x != u {
						tog = append(tog, x)
					}
				}
				if len(tog) == 0 {
					continue
				}
				for mask := 1; mask < 1<<len(tog); mask++ {
					g2 := toggle(t, n, edgeSet, w, tog, mask)
					cases++
					for _, k := range Kinds() {
						ds, sm := base[k].Sensitivity(u)
						sc2, err := New(g2, p, k)
						if err != nil {
							t.Fatal(err)
						}
						if ds2, sm2 := sc2.Sensitivity(u); ds2 != ds || sm2 != sm {
							t.Fatalf("%v u=%d w=%d mask=%b: sensitivity (%v,%v) -> (%v,%v)", k, u, w, mask, ds, sm, ds2, sm2)
						}
						wk := sc2.NewWorker()
						var r Result
						wk.Score(u, &r)
						got := append(slices.Clone(r.Cands), wk.ZeroCands(nil)...)
						slices.Sort(got)
						if !slices.Equal(got, cands) {
							t.Fatalf("%v u=%d w=%d: candidates %v -> %v", k, u, w, cands, got)
						}
						for _, v := range cands {
							s1, p1 := Pair(g, p, k, u, v)
							s2, p2 := Pair(g2, p, k, u, v)
							if d := math.Abs(s1 - s2); d > ds+1e-12 {
								t.Fatalf("%v u=%d w=%d v=%d mask=%b: |%v-%v| > DeltaS %v", k, u, w, v, mask, s1, s2, ds)
							} else if ds > 0 {
								worst[k] = max(worst[k], d/ds)
							}
							if p1 != p2 {
								t.Fatalf("%v u=%d w=%d v=%d: s_pub %v -> %v", k, u, w, v, p1, p2)
							}
							if s1 > sm+1e-12 || s2 > sm+1e-12 {
								t.Fatalf("%v u=%d v=%d: score %v/%v above SMax %v", k, u, v, s1, s2, sm)
							}
							if fs, fp := wk.At(v); !near(fs, s2) || !near(fp, p2) {
								t.Fatalf("%v u=%d v=%d on G': fast (%v,%v), Pair (%v,%v)", k, u, v, fs, fp, s2, p2)
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d neighbouring graphs; largest realised change / DeltaS: %v", cases, worst)
}

// toggle builds G' from the edge set with pairs {w, tog[i]} flipped for the
// bits i of mask.
func toggle(t *testing.T, n int, edgeSet map[graph.Edge]bool, w int32, tog []int32, mask int) *graph.Graph {
	t.Helper()
	flip := map[graph.Edge]bool{}
	for i, x := range tog {
		if mask>>i&1 == 1 {
			flip[graph.Edge{U: min(w, x), V: max(w, x)}] = true
		}
	}
	var edges []graph.Edge
	for e := range edgeSet {
		if !flip[e] {
			edges = append(edges, e)
		}
	}
	for e := range flip {
		if !edgeSet[e] {
			edges = append(edges, e)
		}
	}
	g2, _, err := graph.FromEdges(n, edges, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g2
}

// TestCNBoundAttained: u = 0 with neighbours 1, 2, 3; w = 4 protects the
// non-edges {4,1} and {4,2}. Adding both moves CN(0,4) from 0 to 2 = c(0).
func TestCNBoundAttained(t *testing.T) {
	base := []graph.Edge{{U: 0, V: 1}, {U: 0, V: 2}, {U: 0, V: 3}, {U: 4, V: 5}}
	p, err := protect.New(6, []graph.Edge{{U: 4, V: 1}, {U: 4, V: 2}})
	if err != nil {
		t.Fatal(err)
	}
	g, _, err := graph.FromEdges(6, base, nil)
	if err != nil {
		t.Fatal(err)
	}
	g2, _, err := graph.FromEdges(6, append(slices.Clone(base), graph.Edge{U: 4, V: 1}, graph.Edge{U: 4, V: 2}), nil)
	if err != nil {
		t.Fatal(err)
	}
	at := func(g *graph.Graph) (s, pub, ds float64) {
		sc, err := New(g, p, CN)
		if err != nil {
			t.Fatal(err)
		}
		w := sc.NewWorker()
		var r Result
		w.Score(0, &r)
		s, pub = w.At(4)
		return s, pub, r.DeltaS
	}
	s1, p1, ds1 := at(g)
	s2, p2, ds2 := at(g2)
	if ds1 != 2 || ds2 != 2 {
		t.Fatalf("DeltaS = %v, %v; want 2 (b=1, c=2)", ds1, ds2)
	}
	if s1 != 0 || s2 != 2 || p1 != 0 || p2 != 0 {
		t.Fatalf("CN(0,4): G (%v,%v), G' (%v,%v); want (0,0), (2,0)", s1, p1, s2, p2)
	}
}

func TestZeroAllocs(t *testing.T) {
	g := barabasiAlbert(t, 300, 5, 1)
	p, err := protect.Synthetic(g, 0.3, 0.01, randx.Seeded(2))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range Kinds() {
		sc, err := New(g, p, k)
		if err != nil {
			t.Fatal(err)
		}
		w := sc.NewWorker()
		var r Result
		zero := make([]int32, 0, g.N())
		run := func() {
			for u := int32(0); int(u) < g.N(); u += 3 {
				w.Score(u, &r)
				zero = w.ZeroCands(zero)
				w.At(u + 1)
			}
		}
		run() // warm: grow r's slices to their largest size
		if a := testing.AllocsPerRun(5, run); a != 0 {
			t.Errorf("%v: %v allocations per warm run", k, a)
		}
	}
}

// TestStampWrap scores across the wrap-around of the generation stamp.
func TestStampWrap(t *testing.T) {
	g, p, _ := randomInstance(t, randx.Seeded(4), 12, 0.3, 0.3, 0.2)
	for _, k := range []Kind{CN, AA} {
		sc, err := New(g, p, k)
		if err != nil {
			t.Fatal(err)
		}
		w := sc.NewWorker()
		var r Result
		for u := range int32(4) { // leave stamps 1..4 behind
			w.Score(u, &r)
		}
		w.gen = ^uint32(0) - 3
		for i := 4; i < 12; i++ {
			u := int32(i % g.N())
			w.Score(u, &r)
			checkQuery(t, g, p, k, w, &r, u)
		}
	}
}

func TestEach(t *testing.T) {
	g := barabasiAlbert(t, 400, 3, 5)
	p, err := protect.Synthetic(g, 0.3, 0.01, randx.Seeded(3))
	if err != nil {
		t.Fatal(err)
	}
	queries := make([]int32, 0, g.N()+10)
	for u := range g.N() {
		queries = append(queries, int32(u))
	}
	queries = append(queries, 7, 7, 399) // repeats are scored again
	for _, k := range []Kind{AA, JC, PA} {
		sc, err := New(g, p, k)
		if err != nil {
			t.Fatal(err)
		}
		w := sc.NewWorker()
		want := map[int32][]float64{}
		var r Result
		for _, u := range queries {
			w.Score(u, &r)
			want[u] = slices.Clone(r.S)
		}
		var mu sync.Mutex
		calls := map[int32]int{}
		err = sc.Each(queries, func(worker int, r *Result) {
			if worker < 0 || worker >= max(1, len(queries)) {
				t.Errorf("worker %d", worker)
			}
			ok := slices.Equal(r.S, want[r.U])
			mu.Lock()
			calls[r.U]++
			mu.Unlock()
			if !ok {
				t.Errorf("%v u=%d: Each differs from sequential", k, r.U)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		wantCalls := map[int32]int{}
		for _, u := range queries {
			wantCalls[u]++
		}
		if !maps.Equal(calls, wantCalls) {
			t.Fatalf("%v: Each scored queries %v times, want %v", k, calls, wantCalls)
		}
	}
	sc, _ := New(g, p, CN)
	if err := sc.Each([]int32{1, 400}, func(int, *Result) { t.Error("called despite bad query") }); err == nil {
		t.Error("out-of-range query accepted")
	}
	if err := sc.Each(nil, func(int, *Result) { t.Error("called for no queries") }); err != nil {
		t.Error(err)
	}
}

func TestParseKind(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Kind
		ok   bool
	}{
		{"cn", CN, true}, {"AA", AA, true}, {"Ra", RA, true}, {" jc ", JC, true}, {"pa", PA, true},
		{"", 0, false}, {"katz", 0, false}, {"c n", 0, false},
	} {
		k, err := ParseKind(tc.in)
		if (err == nil) != tc.ok || (tc.ok && k != tc.want) {
			t.Errorf("ParseKind(%q) = %v, %v", tc.in, k, err)
		}
		if !tc.ok && err != nil && !strings.Contains(err.Error(), "cn, aa, ra, jc, pa") {
			t.Errorf("error %q does not list the valid names", err)
		}
	}
	for _, k := range Kinds() {
		if k2, err := ParseKind(k.String()); err != nil || k2 != k {
			t.Errorf("round trip %v: %v %v", k, k2, err)
		}
	}
	if s := Kind(9).String(); s != "Kind(9)" {
		t.Errorf("Kind(9).String() = %q", s)
	}
}

func TestNewErrors(t *testing.T) {
	g, _, err := graph.FromEdges(3, []graph.Edge{{U: 0, V: 1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(nil, nil, CN); err == nil {
		t.Error("nil graph accepted")
	}
	if _, err := New(g, protect.Empty(4), CN); err == nil {
		t.Error("protection set of the wrong size accepted")
	}
	if _, err := New(g, nil, Kind(-1)); err == nil {
		t.Error("invalid kind accepted")
	}
	sc, err := New(g, nil, JC) // nil protection = none
	if err != nil {
		t.Fatal(err)
	}
	w := sc.NewWorker()
	if s, pub := w.At(1); s != 0 || pub != 0 {
		t.Error("At before Score not zero")
	}
	var r Result
	w.Score(2, &r) // isolated query: every other node is a zero candidate, JC union may be empty
	if r.NumCandidates() != 2 || len(r.Cands) != 0 || r.DeltaS != 1 {
		t.Errorf("isolated query: %+v", r)
	}
	if s, pub := Pair(g, nil, Kind(7), 0, 1); !math.IsNaN(s) || !math.IsNaN(pub) {
		t.Error("Pair with invalid kind not NaN")
	}
}

// TestSensitivityCounterWidths: the sensitivity pass gives the same DeltaS
// with 16-bit counters (used when every degree is below 2^16) and 32-bit
// ones (larger degrees), with the dense counters and with the hash table of
// large graphs, and all match b(u) and c(u) counted from their definitions
// (privacy-model §4). So does the DeltaS a Worker finds per query on
// large graphs (forced here): folded into the table's scatter when every
// protected pair is an edge (odd graphs), else by the pass for u alone.
func TestSensitivityCounterWidths(t *testing.T) {
	rng := randx.Seeded(23)
	for gi := range 12 {
		n := 8 + gi*3
		pn := 0.3
		if gi%2 == 1 {
			pn = 0 // no protected non-edges: the fold
		}
		g, p, _ := randomInstance(t, rng, n, 0.4, 0.4, pn)
		for _, km := range []struct {
			k    Kind
			mode accMode
		}{{CN, accDense}, {AA, accDense}, {RA, accDense}, {CN, accHash}, {AA, accHash}, {RA, accHash}} {
			k := km.k
			// accHash: the hash counters (hashacc.go), forced; both
			// counter widths then use them.
			sc, err := newScorer(g, p, k, km.mode)
			if err != nil {
				t.Fatal(err)
			}
			if sc.perQuery != (km.mode == accHash) {
				t.Fatalf("%v mode %d: perQuery %v", k, km.mode, sc.perQuery)
			}
			sc.perQuery = true
			w := sc.NewWorker()
			var r Result
			narrow := slices.Clone(sc.sensTable())
			sensitivitiesWith[uint32](sc)
			if !slices.Equal(narrow, sc.deltaS) {
				t.Fatalf("%v graph %d: 16-bit %v, 32-bit %v", k, gi, narrow, sc.deltaS)
			}
			folds := 0
			for u := int32(0); int(u) < n; u++ {
				w.Score(u, &r)
				if w.folded {
					folds++
				}
				b, c := 0, 0
				cnt := map[int32]int{}
				for _, x := range g.Neighbors(u) {
					for _, w := range p.Of(x) {
						if w != u {
							b = 1
							cnt[w]++
							c = max(c, cnt[w])
						}
					}
				}
				want := map[Kind]float64{CN: float64(max(b, c)), AA: float64(b+c) / math.Ln2, RA: float64(b+c) / 2}[k]
				if sc.deltaS[u] != want {
					t.Fatalf("%v graph %d u %d: DeltaS %v, from the definition %v (b %d, c %d)", k, gi, u, sc.deltaS[u], want, b, c)
				}
				if r.DeltaS != want {
					t.Fatalf("%v graph %d u %d: the worker's DeltaS %v (folded %v), from the definition %v (b %d, c %d)", k, gi, u, r.DeltaS, w.folded, want, b, c)
				}
			}
			if wantFolds := km.mode == accHash && !sc.nonEdge; (folds == n) != wantFolds || sc.nonEdge != (pn > 0) {
				t.Fatalf("%v graph %d mode %d: %d of %d queries folded (protected non-edges %v)", k, gi, km.mode, folds, n, sc.nonEdge)
			}
		}
	}
}
