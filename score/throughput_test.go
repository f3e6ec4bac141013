package score

import (
	"math/rand/v2"
	"testing"
)

// TestTime: the counts Time reports are the sums over the queries of what
// scoring them one at a time gives.
func TestTime(t *testing.T) {
	g, p, _ := randomInstance(t, rand.New(rand.NewPCG(3, 4)), 40, 0.2, 0.3, 0.05)
	sc, err := New(g, p, AA)
	if err != nil {
		t.Fatal(err)
	}
	queries := []int32{0, 5, 9, 17, 39, 5}
	got, err := sc.Time(queries)
	if err != nil {
		t.Fatal(err)
	}
	want := Throughput{Queries: len(queries)}
	w := sc.NewWorker()
	var r Result
	for _, u := range queries {
		w.Score(u, &r)
		want.CandidatePairs += int64(r.NumCandidates())
		want.Wedges += r.Wedges
	}
	if got.Queries != want.Queries || got.CandidatePairs != want.CandidatePairs || got.Wedges != want.Wedges || !(got.Seconds >= 0) {
		t.Fatalf("Time = %+v, want %+v", got, want)
	}
	if _, err := sc.Time([]int32{40}); err == nil {
		t.Fatal("query out of range accepted")
	}
}
