package graph

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"pgregory.net/rapid"
)

// TestIDProperty: ID inverts Label for every node and finds nothing else,
// for label tables of every kind the index distinguishes (none, the decimal
// ids, decimal labels in another order, arbitrary strings).
func TestIDProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 300).Draw(t, "n")
		var labels []string
		switch rapid.IntRange(0, 4).Draw(t, "kind") {
		case 1:
			for i := range n {
				labels = append(labels, fmt.Sprint(i))
			}
		case 2:
			ids := make([]int, n)
			for i := range ids {
				ids[i] = i
			}
			for _, v := range rapid.Permutation(ids).Draw(t, "perm") {
				labels = append(labels, fmt.Sprint(v))
			}
		case 4: // decimals too large for the dense table: the hash table
			for i := range n {
				labels = append(labels, fmt.Sprint(1_000_000_000+i*7))
			}
		case 3:
			seen := map[string]bool{}
			for len(labels) < n {
				if l := rapid.String().Draw(t, "label"); !seen[l] {
					seen[l] = true
					labels = append(labels, l)
				}
			}
		}
		edges := []Edge{{0, 1}}
		g, _, err := FromEdges(n, edges, labels)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if id, ok := g.ID(g.Label(int32(i))); !ok || id != int32(i) {
				t.Fatalf("ID(Label(%d)) = %d, %v", i, id, ok)
			}
		}
		for _, l := range []string{"", "-1", fmt.Sprint(n), fmt.Sprint(2 * n), "01", "+1", "4294967296", "99999999999", "x" + g.Label(0), g.Label(0) + " ", "0" + g.Label(0)} {
			id, ok := g.ID(l)
			if want := labels != nil && slicesIndex(labels, l) >= 0; ok != want || ok && g.Label(id) != l {
				t.Fatalf("ID(%q) = %d, %v", l, id, ok)
			}
		}
	})
}

func slicesIndex(s []string, x string) int {
	for i, y := range s {
		if y == x {
			return i
		}
	}
	return -1
}

// TestDuplicateLabels: every constructor refuses equal labels, naming the
// first repeat in id order, whatever form the index takes.
func TestDuplicateLabels(t *testing.T) {
	edges := []Edge{{0, 1}, {2, 3}, {3, 4}}
	g, _, err := FromEdges(5, edges, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		labels []string
		want   string
	}{
		{[]string{"a", "b", "c", "b", "a"}, `graph: nodes 1 and 3 have the same label "b"`},
		{[]string{"4", "2", "7", "2", "4"}, `graph: nodes 1 and 3 have the same label "2"`},                         // dense
		{[]string{"4000000000", "9", "5000000", "9", "4000000000"}, `graph: nodes 1 and 3 have the same label "9"`}, // hash
		{[]string{"0", "1", "2", "3", "3"}, `graph: nodes 3 and 4 have the same label "3"`},                         // dense
	} {
		if _, _, err := FromEdges(5, edges, c.labels); err == nil || err.Error() != c.want {
			t.Errorf("FromEdges %q: %v, want %s", c.labels, err, c.want)
		}
		if _, err := FromCSR(g.Off, g.Adj, c.labels); err == nil || err.Error() != c.want {
			t.Errorf("FromCSR %q: %v, want %s", c.labels, err, c.want)
		}
	}
}

// TestConcurrentReads: a graph is complete when returned, so lookups from
// many goroutines at once are plain reads (the race detector checks that no
// method writes).
func TestConcurrentReads(t *testing.T) {
	var sb strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&sb, "user%d user%d\n", i, (i*7+1)%2000)
	}
	g, _, err := Parse(strings.NewReader(sb.String()), "t")
	if err != nil {
		t.Fatal(err)
	}
	h := g.Without(func(u, v int32) bool { return u%2 == 0 })
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				l := fmt.Sprintf("user%d", (i+w*500)%2000)
				id, ok := g.ID(l)
				id2, ok2 := h.ID(l)
				if !ok || !ok2 || id != id2 || g.Label(id) != l {
					t.Errorf("ID(%q) = %d %v / %d %v", l, id, ok, id2, ok2)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkID builds the index of a million-node graph and looks up labels,
// with string labels (the hash table) and with decimal labels in another
// order than the ids (the dense table).
func BenchmarkID(b *testing.B) {
	b.Run("strings", func(b *testing.B) { benchID(b, "user-%d") })
	b.Run("decimals", func(b *testing.B) { benchID(b, "%d") })
}

func benchID(b *testing.B, format string) {
	const n = 1 << 20
	labels := make([]string, n)
	edges := make([]Edge, n-1)
	for i := range labels {
		labels[i] = fmt.Sprintf(format, i*7919%n)
		if i > 0 {
			edges[i-1] = Edge{int32(i - 1), int32(i)}
		}
	}
	b.Run("build", func(b *testing.B) {
		for b.Loop() {
			if _, err := newLabelIndex(labels); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The map the index replaced, for comparison.
	b.Run("map-build", func(b *testing.B) {
		for b.Loop() {
			idx := make(map[string]int32, len(labels))
			for i, l := range labels {
				idx[l] = int32(i)
			}
		}
	})
	g, _, err := FromEdges(n, edges, labels)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("lookup", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if _, ok := g.ID(labels[i]); !ok {
				b.Fatal("missing")
			}
			i = (i + 1) & (n - 1)
		}
	})
}

// TestByLabelProperty: ByLabel is a permutation of the node ids whose
// labels are in bytewise order, for nil label tables (decimal ids, where
// "10" sorts before "9") and arbitrary ones.
func TestByLabelProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 300).Draw(t, "n")
		var labels []string
		if rapid.Bool().Draw(t, "labelled") {
			seen := map[string]bool{}
			for len(labels) < n {
				l := rapid.StringN(0, 4, -1).Draw(t, "label")
				if !seen[l] {
					seen[l] = true
					labels = append(labels, l)
				}
			}
		}
		off := make([]int64, n+1)
		g, err := FromCSR(off, nil, labels)
		if err != nil {
			t.Fatal(err)
		}
		ids := g.ByLabel()
		if len(ids) != n {
			t.Fatalf("%d ids for %d nodes", len(ids), n)
		}
		seen := make([]bool, n)
		for i, id := range ids {
			if id < 0 || int(id) >= n || seen[id] {
				t.Fatalf("ids[%d] = %d: not a permutation", i, id)
			}
			seen[id] = true
			if i > 0 && !(g.Label(ids[i-1]) < g.Label(id)) {
				t.Fatalf("labels out of order at %d: %q then %q", i, g.Label(ids[i-1]), g.Label(id))
			}
		}
	})
}

// TestDecimalLexOrder: the O(n) walk equals sorting the formatted ids
// bytewise, for every n up to 2,100 and around powers of ten.
func TestDecimalLexOrder(t *testing.T) {
	ns := []int{}
	for n := 0; n <= 2100; n++ {
		ns = append(ns, n)
	}
	for _, p := range []int{10000, 100000} {
		ns = append(ns, p-1, p, p+1, p+7)
	}
	for _, n := range ns {
		got := decimalLexOrder(n)
		want := make([]int32, n)
		for i := range want {
			want[i] = int32(i)
		}
		slices.SortFunc(want, func(x, y int32) int {
			return strings.Compare(strconv.Itoa(int(x)), strconv.Itoa(int(y)))
		})
		if !slices.Equal(got, want) {
			t.Fatalf("n = %d: got %v, want %v", n, head(got), head(want))
		}
	}
}

func head(a []int32) []int32 { return a[:min(len(a), 20)] }

// TestDecimalIDMatchesReference: decimalID accepts exactly the canonical
// decimal forms of 0..n-1, as parsing and formatting back does (signs,
// leading zeros, spaces, overflow and ids out of range refused).
func TestDecimalIDMatchesReference(t *testing.T) {
	ref := func(label string, n int) (int32, bool) {
		id, err := strconv.Atoi(label)
		if err != nil || id < 0 || id >= n || strconv.Itoa(id) != label {
			return 0, false
		}
		return int32(id), true
	}
	check := func(t interface{ Fatalf(string, ...any) }, label string, n int) {
		gotID, gotOK := decimalID(label, n)
		wantID, wantOK := ref(label, n)
		if gotID != wantID || gotOK != wantOK {
			t.Fatalf("decimalID(%q, %d) = %d, %v; want %d, %v", label, n, gotID, gotOK, wantID, wantOK)
		}
	}
	for _, l := range []string{"", "0", "00", "01", "7", "+7", "-0", "-7", " 7", "7 ", "9", "10", "2147483646", "2147483647", "2147483648", "4294967296", "99999999999", "1e3", "0x1"} {
		for _, n := range []int{0, 1, 8, 10, 11, 1<<31 - 1} {
			check(t, l, n)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		l := rapid.StringMatching(`[+-]?0*[0-9]{0,11}`).Draw(t, "label")
		n := rapid.IntRange(0, 1<<31-1).Draw(t, "n")
		check(t, l, n)
	})
}

// TestByLabelDecimalTable: a label table that holds exactly the decimal ids
// is ordered by the decimal walk, the same order as sorting the labels.
func TestByLabelDecimalTable(t *testing.T) {
	for _, n := range []int{1, 9, 10, 11, 101, 1234} {
		labels := make([]string, n)
		for i := range labels {
			labels[i] = strconv.Itoa(i)
		}
		g, err := FromCSR(make([]int64, n+1), nil, labels)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]int32, n)
		for i := range want {
			want[i] = int32(i)
		}
		slices.SortFunc(want, func(x, y int32) int { return strings.Compare(labels[x], labels[y]) })
		if got := g.ByLabel(); !slices.Equal(got, want) {
			t.Fatalf("n = %d: %v, want %v", n, head(got), head(want))
		}
	}
}
