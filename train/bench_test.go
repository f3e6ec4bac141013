package train

import (
	"context"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
)

// AA-like workload: ~3000 queries, ~40 positives and ~4000 negatives each,
// about 200 distinct score values per query (many ties).
var (
	benchOnce sync.Once
	benchData []prepQuery
)

func benchQueries(b *testing.B) []prepQuery {
	benchOnce.Do(func() {
		r := rng(99)
		qs := make([]Query, 3000)
		for i := range qs {
			sMax := 20 + 100*r.Float64()
			q := Query{SMax: sMax, DeltaS: 1 + 3*r.Float64()}
			level := func(bias float64) float64 {
				// 200 levels, skewed low; positives skewed high
				return math.Floor(math.Pow(r.Float64(), bias)*200) / 200 * sMax
			}
			for k := 0; k < 40; k++ {
				q.Pos = append(q.Pos, level(1.5))
			}
			for k := 0; k < 4000; k++ {
				q.Neg = append(q.Neg, level(6))
			}
			qs[i] = q
		}
		var err error
		if benchData, err = prepare(context.Background(), qs, false, 0, "bench"); err != nil {
			panic(err)
		}
	})
	return benchData
}

func benchEpoch(b *testing.B, v Variant) {
	qs := benchQueries(b)
	var d float64
	for i := range qs {
		d += float64(len(qs[i].xs))
	}
	tr, err := newTrainer(DefaultConfig(v, 1), rng(1))
	if err != nil {
		b.Fatal(err)
	}
	for i := range qs {
		tr.queries = append(tr.queries, &qs[i])
	}
	tr.startHelper()
	defer tr.stopHelper()
	r := rand.New(rand.NewPCG(1, 2))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := tr.epoch(context.Background(), r); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(d/float64(len(qs)), "distinct/query")
}

func BenchmarkEpochDPLP(b *testing.B) { benchEpoch(b, DPLP) }
func BenchmarkEpochLin(b *testing.B)  { benchEpoch(b, Lin) }
func BenchmarkEpochUMNN(b *testing.B) { benchEpoch(b, UMNN) }

func BenchmarkHinge(b *testing.B) {
	r := rng(3)
	qp, qn := make([]float64, 40), make([]float64, 4000)
	for i := range qp {
		qp[i] = r.NormFloat64()
	}
	for i := range qn {
		qn[i] = r.NormFloat64()
	}
	gp, gn := make([]float64, 40), make([]float64, 4000)
	var ps pairScratch
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ps.hinge(qp, qn, 0.1, gp, gn)
	}
}
