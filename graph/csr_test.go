package graph

import (
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestFromCSR(t *testing.T) {
	g, _, err := Parse(strings.NewReader("a b\nb c\nc a\nc d\n"), "t")
	if err != nil {
		t.Fatal(err)
	}
	h, err := FromCSR(slices.Clone(g.Off), slices.Clone(g.Adj), slices.Clone(g.Labels()))
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := h.ID("d"); !ok || id != 3 || h.M() != 4 || !h.HasEdge(0, 2) {
		t.Fatal("FromCSR graph differs")
	}
	for _, c := range []struct {
		off    []int64
		adj    []int32
		labels []string
		err    string
	}{
		{[]int64{0, 1, 2}, []int32{1, 0}, []string{"x", "x"}, "same label"},
		{[]int64{0, 1, 2}, []int32{1, 0}, []string{"x"}, "1 labels for 2 nodes"},
		{[]int64{0, 1, 1}, []int32{1}, nil, "not symmetric"},
		{[]int64{0, 1, 2, 3}, []int32{1, 2, 0}, nil, "not symmetric"},
		{[]int64{0, 2, 3, 4}, []int32{2, 1, 0, 0}, nil, "strictly increasing"},
		{[]int64{0, 1, 2}, []int32{-1, 0}, nil, "strictly increasing"},
		{[]int64{0, 1, 2}, []int32{0, 1}, nil, "self-loops"},
		{[]int64{1, 1, 2}, []int32{1, 0}, nil, "offsets run"},
		{[]int64{0, 2, 1, 2}, []int32{1, 0}, nil, "decrease"},
		{[]int64{0}, nil, nil, "no nodes"},
	} {
		if _, err := FromCSR(c.off, c.adj, c.labels); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("FromCSR(%v, %v, %q): %v, want %q", c.off, c.adj, c.labels, err, c.err)
		}
	}
}

// TestFromCSRSymmetryProperty: FromCSR accepts exactly the symmetric CSRs,
// checked against a direct test on random sorted adjacency lists.
func TestFromCSRSymmetryProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 12).Draw(t, "n")
		off := make([]int64, n+1)
		var adj []int32
		has := map[[2]int32]bool{}
		for u := 0; u < n; u++ {
			for v := 0; v < n; v++ {
				if v != u && rapid.IntRange(0, 3).Draw(t, "e") == 0 {
					adj = append(adj, int32(v))
					has[[2]int32{int32(u), int32(v)}] = true
				}
			}
			off[u+1] = int64(len(adj))
		}
		sym := true
		for p := range has {
			if !has[[2]int32{p[1], p[0]}] {
				sym = false
			}
		}
		_, err := FromCSR(off, adj, nil)
		if (err == nil) != sym {
			t.Fatalf("symmetric %v, FromCSR error %v (off %v adj %v)", sym, err, off, adj)
		}
	})
}

// TestBuildCSRProperty checks the one CSR builder against a brute-force
// adjacency (a set of neighbours per node) on edge lists in several chunks,
// large enough in some cases for the parallel sort and merge (at least 2^16
// entries): the lists, the self-loops dropped and the duplicates merged.
func TestBuildCSRProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 3000).Draw(t, "n")
		m := rapid.SampledFrom([]int{0, 1, 10, 500, 40000}).Draw(t, "m")
		r := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 7))
		span := rapid.IntRange(1, n).Draw(t, "span") // small spans make repeats and self-loops
		var chunks [][]Edge
		var chunk []Edge
		want := make([]map[int32]bool, n)
		var loops, pairs int64
		for i := 0; i < m; i++ {
			u := r.IntN(n)
			v := (u + r.IntN(span)) % n
			if r.IntN(2) == 0 {
				u, v = v, u
			}
			chunk = append(chunk, Edge{int32(u), int32(v)})
			if u == v {
				loops++
			} else {
				if want[u] == nil {
					want[u] = map[int32]bool{}
				}
				if want[v] == nil {
					want[v] = map[int32]bool{}
				}
				if !want[u][int32(v)] {
					pairs++
				}
				want[u][int32(v)], want[v][int32(u)] = true, true
			}
			if r.IntN(5000) == 0 {
				chunks, chunk = append(chunks, chunk), nil
			}
		}
		chunks = append(chunks, chunk)
		off, adj, st, err := buildCSR(n, chunks)
		if pairs == 0 {
			if !errors.Is(err, ErrEmpty) {
				t.Fatalf("no pairs: got %v, want ErrEmpty", err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if st.SelfLoopsDropped != loops || st.DuplicatesMerged != int64(m)-loops-pairs {
			t.Fatalf("stats %+v, want %d self-loops and %d duplicates", st, loops, int64(m)-loops-pairs)
		}
		if len(off) != n+1 || off[0] != 0 || off[n] != int64(len(adj)) || int64(len(adj)) != 2*pairs {
			t.Fatalf("offsets %d..%d for %d entries, want %d", off[0], off[n], len(adj), 2*pairs)
		}
		for u := 0; u < n; u++ {
			got := adj[off[u]:off[u+1]]
			exp := make([]int32, 0, len(want[u]))
			for v := range want[u] {
				exp = append(exp, v)
			}
			slices.Sort(exp)
			if !slices.Equal(got, exp) {
				t.Fatalf("node %d: %v, want %v", u, got, exp)
			}
		}
		if _, err := FromCSR(off, adj, nil); err != nil {
			t.Fatalf("the builder's CSR fails FromCSR: %v", err)
		}
	})
}

// TestFromCSRFirstBadNode: with several broken lists, the error names the
// lowest node, however the parallel check's ranges are scheduled.
func TestFromCSRFirstBadNode(t *testing.T) {
	const n = 60000 // a path: 2(n-1) entries, enough for the parallel check
	edges := make([]Edge, n-1)
	for i := range edges {
		edges[i] = Edge{int32(i), int32(i + 1)}
	}
	g, _, err := FromEdges(n, edges, nil)
	if err != nil {
		t.Fatal(err)
	}
	for trial := 0; trial < 20; trial++ {
		adj := slices.Clone(g.Adj)
		for _, u := range []int{50000, 30001, 45000} { // reverse their two neighbours
			nb := adj[g.Off[u]:g.Off[u+1]]
			nb[0], nb[1] = nb[1], nb[0]
		}
		_, err := FromCSR(g.Off, adj, nil)
		if err == nil || !strings.Contains(err.Error(), "node 30001 is not strictly increasing") {
			t.Fatalf("error %v, want node 30001", err)
		}
	}
}

// TestCheckListsProperty checks checkLists against a direct reading of the
// rules on random lists, valid or not (out of range, repeated, unsorted,
// self-loops): the first node whose list breaks a rule, else the sum of the
// pair hashes listed upwards minus those listed downwards.
func TestCheckListsProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 12).Draw(t, "n")
		off := make([]int64, n+1)
		var adj []int32
		broken := rapid.IntRange(0, 3).Draw(t, "broken") == 0
		for u := 0; u < n; u++ {
			if broken {
				for k := rapid.IntRange(0, 4).Draw(t, "k"); k > 0; k-- {
					adj = append(adj, int32(rapid.IntRange(-2, n+1).Draw(t, "v")))
				}
			} else {
				for v := 0; v < n; v++ {
					if v != u && rapid.IntRange(0, 2).Draw(t, "e") == 0 {
						adj = append(adj, int32(v))
					}
				}
			}
			off[u+1] = int64(len(adj))
		}
		key := rapid.Uint64().Draw(t, "key") | 1
		lo := rapid.IntRange(0, n).Draw(t, "lo")
		hi := rapid.IntRange(lo, n).Draw(t, "hi")
		wantBad, wantSum := hi, uint64(0)
		for u := lo; u < hi && wantBad == hi; u++ {
			nb := adj[off[u]:off[u+1]]
			for i, v := range nb {
				if v < 0 || int(v) >= n || int(v) == u || i > 0 && v <= nb[i-1] {
					wantBad = u
					break
				}
				if int(v) > u {
					wantSum += pairHash(uint64(u)<<32|uint64(v), key)
				} else {
					wantSum -= pairHash(uint64(v)<<32|uint64(u), key)
				}
			}
		}
		if wantBad < hi {
			wantSum = 0
		}
		if sum, bad := checkLists(off, adj, lo, hi, key); bad != wantBad || sum != wantSum {
			t.Fatalf("checkLists(%v, %v, %d, %d) = %#x, %d; want %#x, %d", off, adj, lo, hi, sum, bad, wantSum, wantBad)
		}
	})
}

// parallelograms are four pair codes x, x^a^b, x^a, x^b for disjoint sets
// of bits a and b, the first two listed upwards and the last two downwards
// (or the reverse) by a crafted asymmetric file: x + x^a^b = x^a + x^b as
// integers, also after the xor with any key, a difference that a hash
// linear in the code after a keyed xor cannot see.
var parallelograms = [][4]uint64{
	{5<<32 | 100, 5<<32 | 103, 5<<32 | 101, 5<<32 | 102},                         // N(5) ∋ 100, 103; N(101), N(102) ∋ 5
	{5<<32 | 100, 6<<32 | 101, 5<<32 | 101, 6<<32 | 100},                         // u and v both one apart
	{5<<32 | 100, 5<<32 | 100 | 3<<29, 5<<32 | 100 | 1<<29, 5<<32 | 100 | 2<<29}, // high bits of v
	{5<<32 | 100, (5|3<<29)<<32 | 100, (5|1<<29)<<32 | 100, (5|2<<29)<<32 | 100}, // high bits of u
	{0<<32 | 1, 2<<32 | 3, 0<<32 | 3, 2<<32 | 1},
}

// TestPairHashStructuredDifferences: over many keys, the signed sum of
// pairHash over a parallelogram never vanishes and is rarely small (below
// 2^32 in absolute value: for one key in 2^12 at worst, see the comment on
// the symmetry check), while that of the folded 64x64->128 multiply, which
// the comment explains is not used, vanishes for some of these keys and is
// small far more often.
func TestPairHashStructuredDifferences(t *testing.T) {
	const keys = 1 << 16
	fold := func(x, k1, k2 uint64) uint64 {
		hi, lo := bits.Mul64(x^k1, k2)
		return hi ^ lo
	}
	small := func(d uint64) bool { return int64(d) > -1<<32 && int64(d) < 1<<32 }
	var zeros, smalls, foldZeros, foldSmalls int
	for i, p := range parallelograms {
		r := rand.New(rand.NewPCG(uint64(i), 99))
		for k := 0; k < keys; k++ {
			key := r.Uint64() | 1
			d := pairHash(p[0], key) + pairHash(p[1], key) - pairHash(p[2], key) - pairHash(p[3], key)
			if d == 0 {
				zeros++
			} else if small(d) {
				smalls++
			}
			k2 := r.Uint64() | 1
			if d := fold(p[0], key, k2) + fold(p[1], key, k2) - fold(p[2], key, k2) - fold(p[3], key, k2); d == 0 {
				foldZeros++
			} else if small(d) {
				foldSmalls++
			}
		}
	}
	total := keys * len(parallelograms)
	t.Logf("of %d sums: pairHash %d zero, %d small; folded multiply %d zero, %d small", total, zeros, smalls, foldZeros, foldSmalls)
	if zeros > 0 || smalls > total/2000 {
		t.Fatalf("pairHash: %d sums zero and %d small, of %d", zeros, smalls, total)
	}
	if foldZeros == 0 || foldSmalls < total/500 {
		t.Fatalf("folded multiply: %d sums zero and %d small, of %d (its comment says they are often)", foldZeros, foldSmalls, total)
	}
}

// TestFromCSRRejectsCraftedAsymmetry: asymmetric adjacencies built so that
// their asymmetric entries form parallelograms (above), or swap one entry
// for another, are rejected on every call (each draws its own key), on the
// sequential and on the parallel path (a long path graph around them).
func TestFromCSRRejectsCraftedAsymmetry(t *testing.T) {
	build := func(n int, pairs [][2]int32, up, down [][2]int32) ([]int64, []int32) {
		lists := make([][]int32, n)
		for _, p := range pairs {
			lists[p[0]] = append(lists[p[0]], p[1])
			lists[p[1]] = append(lists[p[1]], p[0])
		}
		for _, p := range up { // listed by the smaller node only
			lists[p[0]] = append(lists[p[0]], p[1])
		}
		for _, p := range down { // listed by the larger node only
			lists[p[1]] = append(lists[p[1]], p[0])
		}
		off := make([]int64, n+1)
		var adj []int32
		for u, l := range lists {
			slices.Sort(l)
			adj = append(adj, slices.Compact(l)...)
			off[u+1] = int64(len(adj))
		}
		return off, adj
	}
	cases := []struct{ up, down [][2]int32 }{
		{[][2]int32{{5, 100}, {5, 103}}, [][2]int32{{5, 101}, {5, 102}}},
		{[][2]int32{{5, 100}, {6, 101}}, [][2]int32{{5, 101}, {6, 100}}},
		{[][2]int32{{0, 1}, {2, 3}}, [][2]int32{{0, 3}, {2, 1}}},
		{[][2]int32{{7, 9}}, [][2]int32{{7, 8}}},
		{[][2]int32{{7, 9}}, nil},
		{nil, [][2]int32{{7, 9}}},
	}
	for _, n := range []int{200, 70000} {
		var path [][2]int32
		for i := 150; i+1 < n; i++ {
			path = append(path, [2]int32{int32(i), int32(i + 1)})
		}
		for ci, c := range cases {
			off, adj := build(n, path, c.up, c.down)
			for trial := 0; trial < 50; trial++ {
				if _, err := FromCSR(off, adj, nil); err == nil || !strings.Contains(err.Error(), "not symmetric") {
					t.Fatalf("n=%d case %d: %v", n, ci, err)
				}
			}
		}
		// The same pairs listed both ways are accepted.
		off, adj := build(n, append(path, [2]int32{5, 100}, [2]int32{0, 1}), nil, nil)
		if _, err := FromCSR(off, adj, nil); err != nil {
			t.Fatalf("n=%d symmetric: %v", n, err)
		}
	}
}

// FuzzFromCSR: FromCSR accepts exactly the valid CSRs (checked directly),
// and names the first node whose list breaks a rule.
func FuzzFromCSR(f *testing.F) {
	f.Add([]byte{3, 1, 1, 1, 1, 2, 0})
	f.Add([]byte{4, 2, 1, 1, 0, 1, 2, 3, 0, 0})
	f.Add([]byte{2, 1, 1, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		n := int(b[0]%16) + 1
		b = b[1:]
		off := make([]int64, n+1)
		var adj []int32
		for u := 0; u < n && len(b) > 0; u++ {
			deg := int(b[0] % 6)
			b = b[1:]
			for ; deg > 0 && len(b) > 0; deg-- {
				adj = append(adj, int32(int8(b[0]))%int32(n+3))
				b = b[1:]
			}
			off[u+1] = int64(len(adj))
		}
		for u := 1; u <= n; u++ {
			off[u] = max(off[u], off[u-1])
		}
		firstBad, has := n, map[[2]int32]bool{}
		for u := n - 1; u >= 0; u-- {
			nb := adj[off[u]:off[u+1]]
			for i, v := range nb {
				if v < 0 || int(v) >= n || int(v) == u || i > 0 && v <= nb[i-1] {
					firstBad = u
				}
				has[[2]int32{int32(u), v}] = true
			}
		}
		sym := true
		for p := range has {
			sym = sym && has[[2]int32{p[1], p[0]}]
		}
		_, err := FromCSR(off, adj, nil)
		switch {
		case firstBad < n:
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("node %d is not strictly increasing", firstBad)) {
				t.Fatalf("first bad list %d: %v (off %v adj %v)", firstBad, err, off, adj)
			}
		case !sym:
			if err == nil || !strings.Contains(err.Error(), "not symmetric") {
				t.Fatalf("asymmetric: %v (off %v adj %v)", err, off, adj)
			}
		case err != nil:
			t.Fatalf("valid CSR rejected: %v (off %v adj %v)", err, off, adj)
		}
	})
}

// TestBuildCSRParallel: on a list large enough for the passes by node
// range, buildCSR gives the CSR, counts and first error that one core
// gives.
func TestBuildCSRParallel(t *testing.T) {
	const n = 5000
	rng := rand.New(rand.NewPCG(3, 4))
	var chunks [][]Edge
	for range 8 {
		c := make([]Edge, 140000+rng.IntN(20000))
		for i := range c {
			u := int32(rng.IntN(n))
			v := int32(rng.IntN(n))
			if rng.IntN(50) == 0 {
				v = u // a self-loop now and then; repeats come by chance
			}
			c[i] = Edge{u, v}
		}
		chunks = append(chunks, c)
	}
	build := func(procs int, chunks [][]Edge) ([]int64, []int32, BuildStats, error) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		return buildCSR(n, chunks)
	}
	off1, adj1, st1, err1 := build(1, chunks)
	off2, adj2, st2, err2 := build(4, chunks)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if edgeCount(chunks) < parallelEdges {
		t.Fatalf("%d edges: the passes by range are not exercised", edgeCount(chunks))
	}
	if !slices.Equal(off1, off2) || !slices.Equal(adj1, adj2) || st1 != st2 || st1.SelfLoopsDropped == 0 || st1.DuplicatesMerged == 0 {
		t.Fatalf("parallel build differs: stats %+v and %+v", st1, st2)
	}
	// Two bad pairs in later parts: the first in list order is reported.
	bad := slices.Clone(chunks)
	bad[5] = slices.Clone(bad[5])
	bad[5][len(bad[5])-1] = Edge{1, n}
	bad[6] = slices.Clone(bad[6])
	bad[6][0] = Edge{-1, 2}
	_, _, _, e1 := build(1, bad)
	_, _, _, e2 := build(4, bad)
	if e1 == nil || e2 == nil || e1.Error() != e2.Error() || !strings.Contains(e1.Error(), fmt.Sprintf("(1,%d)", n)) {
		t.Fatalf("errors %v and %v, want the pair (1,%d) first", e1, e2, n)
	}
}
