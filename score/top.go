package score

import (
	"fmt"
	"runtime"
	"slices"
)

// Candidate is one scored candidate v of a query: s(u, v) and s_pub(u, v).
type Candidate struct {
	V      int32
	S, Pub float64
}

// Top is one query's best candidates (non-private: this is the ranking the
// mechanisms perturb, for inspection and evaluation, not for release).
type Top struct {
	U            int32
	DeltaS, SMax float64     // Scorer.Sensitivity(U)
	Candidates   int         // |C(U)| = N - 1 - deg(U)
	Best         []Candidate // the best candidates, best first (see TopCandidates)
}

// topScratch is one goroutine's reusable buffers.
type topScratch struct {
	idx  []int
	zero []int32
}

// best picks the n best candidates of r (scored by w) by s descending, then
// s_pub descending, then id ascending; when wedges reach fewer than n
// candidates it fills from the zero block (s = s_pub = 0) in id order.
func best(w *Worker, r *Result, n int, scr *topScratch) []Candidate {
	idx := scr.idx[:0]
	for i := range r.Cands {
		idx = append(idx, i)
	}
	slices.SortFunc(idx, func(a, b int) int {
		switch {
		case r.S[a] != r.S[b]:
			if r.S[a] > r.S[b] {
				return -1
			}
			return 1
		case r.Pub[a] != r.Pub[b]:
			if r.Pub[a] > r.Pub[b] {
				return -1
			}
			return 1
		}
		return int(r.Cands[a]) - int(r.Cands[b])
	})
	scr.idx = idx
	out := make([]Candidate, 0, min(n, r.NumCandidates()))
	for _, i := range idx {
		if len(out) == n {
			return out
		}
		out = append(out, Candidate{r.Cands[i], r.S[i], r.Pub[i]})
	}
	if len(out) < n && r.Zero > 0 {
		scr.zero = w.ZeroCands(scr.zero[:0])
		for _, v := range scr.zero {
			if len(out) == n {
				break
			}
			out = append(out, Candidate{v, 0, 0})
		}
	}
	return out
}

// TopCandidates scores query u against all its candidates and returns its n
// best (n >= 1): by s descending, then s_pub descending, then id ascending,
// filled from the zero block in id order when wedges reach fewer than n.
func (s *Scorer) TopCandidates(u int32, n int) (Top, error) {
	all, err := s.TopCandidatesAll([]int32{u}, n, nil)
	if err != nil {
		return Top{}, err
	}
	return all[0], nil
}

// TopCandidatesAll is TopCandidates for every query, scored on all cores
// (Scorer.EachWorker) and returned in query order; a repeated query is
// scored once. done, when not nil, is called once per distinct query scored,
// from the scoring goroutines.
func (s *Scorer) TopCandidatesAll(queries []int32, n int, done func()) ([]Top, error) {
	if n < 1 {
		return nil, fmt.Errorf("score: top %d candidates, want at least 1", n)
	}
	pos := make(map[int32]int, len(queries))
	uniq := make([]int32, 0, len(queries))
	for _, u := range queries {
		if _, ok := pos[u]; !ok {
			pos[u] = len(uniq)
			uniq = append(uniq, u)
		}
	}
	res := make([]Top, len(uniq))
	scr := make([]topScratch, runtime.GOMAXPROCS(0))
	err := s.EachWorker(uniq, func(worker int, w *Worker, r *Result) {
		res[pos[r.U]] = Top{r.U, r.DeltaS, r.SMax, r.NumCandidates(), best(w, r, n, &scr[worker])}
		if done != nil {
			done()
		}
	})
	if err != nil {
		return nil, err
	}
	if len(uniq) == len(queries) {
		return res, nil
	}
	out := make([]Top, len(queries))
	for i, u := range queries {
		out[i] = res[pos[u]]
	}
	return out, nil
}
