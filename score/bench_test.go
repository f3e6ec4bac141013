package score

import (
	"testing"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
)

const facebookPath = "../../shared/datasets/facebook.txt"

// benchAll scores every node of g as a query (all candidates) once per
// iteration with Each and reports candidate pairs (Zero blocks included) and
// wedges per second.
func benchAll(b *testing.B, g *graph.Graph, k Kind) {
	p, err := protect.Synthetic(g, 0.3, 0, randx.Seeded(1))
	if err != nil {
		b.Fatal(err)
	}
	sc, err := New(g, p, k)
	if err != nil {
		b.Fatal(err)
	}
	queries := make([]int32, g.N())
	for i := range queries {
		queries[i] = int32(i)
	}
	type tally struct {
		pairs, wedges int64
		_             [48]byte // keep workers' counters on separate cache lines
	}
	per := make([]tally, 64)
	b.ResetTimer()
	for b.Loop() {
		if err := sc.Each(queries, func(w int, r *Result) {
			per[w].pairs += int64(r.NumCandidates())
			per[w].wedges += r.Wedges
		}); err != nil {
			b.Fatal(err)
		}
	}
	var pairs, wedges int64
	for _, t := range per {
		pairs += t.pairs
		wedges += t.wedges
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(pairs)/sec, "pairs/s")
	b.ReportMetric(float64(wedges)/sec, "wedges/s")
	b.ReportMetric(float64(pairs)/float64(b.N), "pairs/op")
}

func benchKind(b *testing.B, k Kind) {
	b.Run("synthetic-BA-4000", func(b *testing.B) {
		benchAll(b, barabasiAlbert(b, 4000, 22, 1), k)
	})
	b.Run("facebook", func(b *testing.B) {
		g, ok := readEdgeList(b, facebookPath)
		if !ok {
			b.Skipf("%s not found; facebook benchmark skipped", facebookPath)
		}
		benchAll(b, g, k)
	})
}

func BenchmarkScoreCN(b *testing.B) { benchKind(b, CN) }
func BenchmarkScoreAA(b *testing.B) { benchKind(b, AA) }
func BenchmarkScoreRA(b *testing.B) { benchKind(b, RA) }
func BenchmarkScoreJC(b *testing.B) { benchKind(b, JC) }
func BenchmarkScorePA(b *testing.B) { benchKind(b, PA) }

// BenchmarkNew measures preprocessing (adjacency split, weights, per-node
// sensitivities) on facebook with 30% protected edges and 1% protected non-edges.
func BenchmarkNew(b *testing.B) {
	g, ok := readEdgeList(b, facebookPath)
	if !ok {
		b.Skipf("%s not found", facebookPath)
	}
	p, err := protect.Synthetic(g, 0.3, 0.01, randx.Seeded(1))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := New(g, p, AA); err != nil {
			b.Fatal(err)
		}
	}
}
