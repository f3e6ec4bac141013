package score

import (
	"context"
	"runtime"
	"testing"

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
