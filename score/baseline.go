package score

import (
	"context"
	"runtime"
	"time"
	"unsafe"

	"github.com/dplp/dplp/internal/par"
)

// Baselines for `dplp bench score`: what the scoring throughput is
// compared with, measured on the scorer's own CSR (Scorer.adj, the bytes
// the wedge loops read) and on the same cores, in the same run.

// BareCN times a bare common-neighbours wedge loop over the queries on all
// cores, handed out as Each hands them out: per query, a dense counter per
// node, a list of first touches, every wedge u -> z -> v counted, then the
// counts read back and cleared. It builds no result, separates no public
// count and excludes no neighbour of u: it is the least a wedge-enumerating
// scorer must do, the yardstick for Time. It returns the wedges enumerated
// (the same number Time reports for the same queries) and the wall time;
// allocating the counters is not timed.
func (s *Scorer) BareCN(queries []int32) (wedges int64, seconds float64) {
	nq := len(queries)
	nw := min(runtime.GOMAXPROCS(0), nq)
	if nw == 0 {
		return 0, 0
	}
	type state struct {
		cnt     []uint32
		touched []int32
		sum     int64
		_       [40]byte // keep workers' sums on separate cache lines
	}
	states := make([]state, nw)
	for i := range states {
		states[i].cnt = make([]uint32, s.n)
		states[i].touched = make([]int32, s.n)
	}
	off, adj := s.off, s.adj
	chunk := max(1, min(64, nq/(16*nw)))
	start := time.Now()
	_ = par.Run(context.Background(), nq, par.Options{Workers: nw, Chunk: chunk},
		func(id int) *state { return &states[id] },
		func(st *state, i int) error {
			u := queries[i]
			cnt, tch, nt := st.cnt, st.touched, 0
			for _, z := range adj[off[u]:off[u+1]] {
				for _, v := range adj[off[z]:off[z+1]] {
					if cnt[v] == 0 {
						tch[nt] = v
						nt++
					}
					cnt[v]++
				}
			}
			for _, v := range tch[:nt] {
				st.sum += int64(cnt[v]) // every wedge counted once: the sum is the wedge count
				cnt[v] = 0
			}
			return nil
		})
	seconds = time.Since(start).Seconds()
	for i := range states {
		wedges += states[i].sum
	}
	return wedges, seconds
}

// StreamReads times sequential reads of the scorer's adjacency (every
// neighbour id of every node, in CSR order) on all cores, each core reading
// its own contiguous share, repeated until at least minSeconds have passed
// (and at least once). The loop reads 8 bytes, two ids, at a time into four
// independent sums, so it measures how fast this machine delivers the
// adjacency, not how fast it adds. When the adjacency fits in the caches
// (8 MB for 100 k nodes and 1 M edges) that is cache bandwidth rather than
// main memory's. It returns the ids read and the wall time of the last,
// timed round.
func (s *Scorer) StreamReads(minSeconds float64) (reads int64, seconds float64) {
	adj := s.adj
	if len(adj) == 0 {
		return 0, 0
	}
	nw := max(1, min(runtime.GOMAXPROCS(0), len(adj)/4096))
	part := (len(adj) + nw - 1) / nw
	sums := make([]uint64, nw*8) // a cache line apart
	for passes := 1; ; passes *= 2 {
		start := time.Now()
		_ = par.Run(context.Background(), nw, par.Options{Workers: nw}, func(int) struct{} { return struct{}{} },
			func(_ struct{}, w int) error {
				lo := w * part
				hi := min(lo+part, len(adj))
				for range passes {
					sums[w*8] += sumIDs(adj[lo:hi])
				}
				return nil
			})
		seconds = time.Since(start).Seconds()
		if seconds >= minSeconds || passes >= 1<<20 {
			return int64(passes) * int64(len(adj)), seconds
		}
	}
}

// sumIDs reads every id of a, two per 8-byte load (its result only keeps
// the reads from being optimised away).
func sumIDs(a []int32) uint64 {
	var s0, s1, s2, s3 uint64
	// Read single ids up to an 8-byte boundary and after the last whole
	// word, so that every word load is aligned.
	for len(a) > 0 && uintptr(unsafe.Pointer(&a[0]))%8 != 0 {
		s0 += uint64(uint32(a[0]))
		a = a[1:]
	}
	if len(a)%2 == 1 {
		s1 = uint64(uint32(a[len(a)-1]))
		a = a[:len(a)-1]
	}
	if len(a) == 0 {
		return s0 + s1
	}
	w := unsafe.Slice((*uint64)(unsafe.Pointer(&a[0])), len(a)/2)
	for len(w) >= 4 {
		b := w[:4]
		s0 += b[0]
		s1 += b[1]
		s2 += b[2]
		s3 += b[3]
		w = w[4:]
	}
	for _, x := range w {
		s0 += x
	}
	return s0 + s1 + s2 + s3
}
