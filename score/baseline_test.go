package score

import (
	"testing"
	"unsafe"

	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
)

// TestBareCN: the bare loop enumerates exactly the wedges Time reports for
// the same queries (its checksum is the sum of its counts, one per wedge).
func TestBareCN(t *testing.T) {
	g := barabasiAlbert(t, 600, 4, 9)
	p, err := protect.Synthetic(g, 0.3, 0.01, randx.Seeded(2))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := New(g, p, AA)
	if err != nil {
		t.Fatal(err)
	}
	queries := append(allNodes(g.N()), 0, 0, 17)
	th, err := sc.Time(queries)
	if err != nil {
		t.Fatal(err)
	}
	wedges, sec := sc.BareCN(queries)
	if wedges != th.Wedges || !(sec >= 0) {
		t.Fatalf("BareCN = %d wedges in %v s, Time counted %d", wedges, sec, th.Wedges)
	}
	if w, s := sc.BareCN(nil); w != 0 || s != 0 {
		t.Fatalf("BareCN(nil) = %d, %v", w, s)
	}
}

// TestStreamReads: whole passes over the adjacency, at least one.
func TestStreamReads(t *testing.T) {
	g := barabasiAlbert(t, 3000, 3, 1)
	sc, err := New(g, nil, CN)
	if err != nil {
		t.Fatal(err)
	}
	reads, sec := sc.StreamReads(0.001)
	if reads < int64(len(g.Adj)) || reads%int64(len(g.Adj)) != 0 || !(sec >= 0) {
		t.Fatalf("StreamReads = %d reads in %v s; adjacency has %d ids", reads, sec, len(g.Adj))
	}
}

// TestSumIDs: every start alignment and length (the word loop must only
// see whole, aligned words; under -race, checkptr checks the alignment),
// against a reference that adds the same words.
func TestSumIDs(t *testing.T) {
	one := uint16(1)
	highHalf := 1 // little-endian: the second id of a word is its high half
	if *(*byte)(unsafe.Pointer(&one)) == 0 {
		highHalf = 0
	}
	a := make([]int32, 64)
	for i := range a {
		a[i] = int32(i*7919 + 13)
	}
	for lo := 0; lo <= len(a); lo++ {
		for hi := lo; hi <= len(a); hi++ {
			got := sumIDs(a[lo:hi])
			// Each id lands in the low or high half of a word by the parity
			// of its index (the array is at least 8-byte aligned) and the
			// byte order; ids read singly land in the low half.
			head := lo % 2 // an odd start: one single id first
			body := (hi - lo - head) &^ 1
			var want uint64
			for i := lo; i < hi; i++ {
				x := uint64(uint32(a[i]))
				if i >= lo+head && i < lo+head+body && i%2 == highHalf {
					x <<= 32
				}
				want += x
			}
			if got != want {
				t.Fatalf("sumIDs(a[%d:%d]) = %d, want %d", lo, hi, got, want)
			}
		}
	}
}
