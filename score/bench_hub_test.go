package score

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/dplp/dplp/graph"
	"github.com/dplp/dplp/internal/par"
	"github.com/dplp/dplp/protect"
	"github.com/dplp/dplp/randx"
)

// BenchmarkScoreHub scores every query of a 100,000-node Barabasi-Albert
// graph (m = 10, 1.25e8 wedges, 30% of edges protected): a hub-heavy graph,
// where almost every wedge reaches a new candidate. Per kind: kernel is
// Time (Worker.Score on all cores), reference the kernel before the
// prefetching wedge loops (ref_test.go) on the same cores; bare-cn is
// BareCN and stream StreamReads (ids/s). -cpu 1 compares them on one core.
func BenchmarkScoreHub(b *testing.B) {
	g := barabasiAlbert(b, 100000, 10, 1)
	p, err := protect.Synthetic(g, 0.3, 0, randx.Seeded(1))
	if err != nil {
		b.Fatal(err)
	}
	queries := allNodes(g.N())
	wedgeRate := func(b *testing.B, wedges int64) {
		b.ReportMetric(float64(wedges)/b.Elapsed().Seconds(), "wedges/s")
	}
	for _, k := range []Kind{CN, AA, RA, JC} {
		sc, err := New(g, p, k)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(k.String()+"/kernel", func(b *testing.B) {
			var wedges int64
			for b.Loop() {
				t, err := sc.Time(queries)
				if err != nil {
					b.Fatal(err)
				}
				wedges += t.Wedges
			}
			wedgeRate(b, wedges)
		})
		b.Run(k.String()+"/reference", func(b *testing.B) {
			nw := runtime.GOMAXPROCS(0)
			refs := make([]*refWorker, nw)
			for i := range refs {
				refs[i] = newRefWorker(sc)
			}
			type st struct {
				w      *refWorker
				r      Result
				wedges int64
			}
			states := make([]*st, nw)
			var wedges int64
			for b.Loop() {
				_ = par.Run(context.Background(), len(queries), par.Options{Workers: nw, Chunk: 64},
					func(id int) *st { states[id] = &st{w: refs[id]}; return states[id] },
					func(s *st, i int) error {
						s.w.Score(queries[i], &s.r)
						s.wedges += s.r.Wedges
						return nil
					})
				for _, s := range states {
					if s != nil {
						wedges += s.wedges
					}
				}
			}
			wedgeRate(b, wedges)
		})
	}
	sc, err := New(g, p, CN)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("bare-cn", func(b *testing.B) {
		var wedges int64
		for b.Loop() {
			w, _ := sc.BareCN(queries)
			wedges += w
		}
		wedgeRate(b, wedges)
	})
	b.Run("stream", func(b *testing.B) {
		var reads int64
		for b.Loop() {
			r, _ := sc.StreamReads(0)
			reads += r
		}
		b.ReportMetric(float64(reads)/b.Elapsed().Seconds(), "ids/s")
	})
}

// BenchmarkScoreLarge compares the dense accumulators with the per-query
// hash table (hashacc.go) on one core, on a Barabasi-Albert graph of
// DPLP_BENCH_BA_N nodes (m = 10, 30% of edges protected; skipped when unset),
// 200,000 random queries, AA and CN; it reports ns per wedge. "auto" is the
// kernel's own choice (the table where the dense accumulators span 8 MB or
// more), "dense" the dense accumulators forced, "auto-nopub" the kernel's
// choice without public sums (ScoreNoPublic), "auto-held" that with the
// candidates left in the table (ScoreHeld). docs/SCALE.md has figures at
// 100 k, 1 M and 10 M nodes (the 10 M graph takes about a minute to build and
// 6 GB).
func BenchmarkScoreLarge(b *testing.B) {
	g, p := largeBA(b)
	n := g.N()
	rng := randx.Seeded(5)
	queries := make([]int32, 200000)
	for i := range queries {
		queries[i] = int32(rng.IntN(n))
	}
	for _, k := range []Kind{AA, CN} {
		for _, m := range []struct {
			name   string
			mode   accMode
			public bool // Score, or ScoreNoPublic (the 16-byte slots)
			held   bool // ScoreHeld: the candidates left in the table
		}{{"dense", accDense, true, false}, {"auto", accAuto, true, false}, {"auto-nopub", accAuto, false, false}, {"auto-held", accAuto, false, true}} {
			sc, err := newScorer(g, p, k, m.mode)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(k.String()+"/"+m.name, func(b *testing.B) {
				w := sc.NewWorker()
				var r Result
				var wedges int64
				for b.Loop() {
					for _, u := range queries {
						if m.held {
							w.ScoreHeld(u, &r)
						} else {
							w.score(u, &r, m.public)
						}
						wedges += r.Wedges
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(wedges), "ns/wedge")
			})
		}
	}
}

// BenchmarkSensitivityLarge times the sensitivity pass (Delta_s of every
// node, on all cores) on the graph of BenchmarkScoreLarge (DPLP_BENCH_BA_N
// nodes, skipped when unset), AA, with the dense counters and with the hash
// counters forced; it reports ns per protected wedge (x in N(u), w in
// prot(x)) over the pass's wall time.
func BenchmarkSensitivityLarge(b *testing.B) {
	g, p := largeBA(b)
	n := g.N()
	var wedges int64
	for x := range int32(n) {
		wedges += int64(g.Degree(x)) * int64(p.Count(x))
	}
	for _, m := range []struct {
		name string
		mode accMode
	}{{"dense", accDense}, {"hash", accHash}} {
		sc, err := newScorer(g, p, AA, m.mode)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(m.name, func(b *testing.B) {
			passes := 0
			for b.Loop() {
				sc.sensitivities()
				passes++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(wedges)/float64(passes), "ns/wedge")
		})
	}
}

// largeBA is the graph of the Large benchmarks: Barabasi-Albert with
// DPLP_BENCH_BA_N nodes, m = 10, 30% of edges protected (the benchmark is
// skipped when the variable is unset).
func largeBA(b *testing.B) (*graph.Graph, *protect.Set) {
	n, _ := strconv.Atoi(os.Getenv("DPLP_BENCH_BA_N"))
	if n <= 0 {
		b.Skip("set DPLP_BENCH_BA_N to the number of nodes")
	}
	g := barabasiAlbert(b, n, 10, 1)
	p, err := protect.Synthetic(g, 0.3, 0, randx.Seeded(1))
	if err != nil {
		b.Fatal(err)
	}
	return g, p
}
