package score

import (
	"runtime"
	"time"
)

// Throughput is what scoring a set of queries cost (Scorer.Time).
type Throughput struct {
	Queries        int
	CandidatePairs int64   // sum over the queries of |C(u)|
	Wedges         int64   // wedges enumerated
	Seconds        float64 // wall time of the scoring
}

// Time scores every query against all its candidates on all cores (Each)
// and reports the cost. The worker pool is first warmed, untimed, with one
// query per core: allocating the accumulators is not scoring.
func (s *Scorer) Time(queries []int32) (Throughput, error) {
	nw := runtime.GOMAXPROCS(0)
	pairs := make([]int64, nw*8) // per-worker counters, a cache line apart
	wedges := make([]int64, nw*8)
	if err := s.Each(queries[:min(len(queries), nw)], func(int, *Result) {}); err != nil {
		return Throughput{}, err
	}
	start := time.Now()
	err := s.Each(queries, func(w int, r *Result) {
		pairs[w*8] += int64(r.NumCandidates())
		wedges[w*8] += r.Wedges
	})
	t := Throughput{Queries: len(queries), Seconds: time.Since(start).Seconds()}
	if err != nil {
		return Throughput{}, err
	}
	for i := 0; i < nw; i++ {
		t.CandidatePairs += pairs[i*8]
		t.Wedges += wedges[i*8]
	}
	return t, nil
}
