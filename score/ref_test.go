package score

import "math"

// refWorker is the scoring kernel as it was before the prefetching wedge
// loops (commit c678a72): the reference that TestKernelMatchesReference
// compares Worker.Score with bit for bit, and the "before" of the hub-heavy
// benchmarks. It reads the scorer's adjacency through off and a pubEnd
// recomputed from the spans, exactly as the old loops did.
type refWorker struct {
	s       *Scorer
	pubEnd  []int64
	cnt     []uint64
	acc     []accum
	touched []int32
	nt      int
	w       []float64 // AA/RA weights as the old kernel held them: separate arrays
	wPub    [2][]float64
}

func newRefWorker(s *Scorer) *refWorker {
	w := &refWorker{s: s, pubEnd: make([]int64, s.n), touched: make([]int32, pow2(s.n))}
	for z := range s.n {
		w.pubEnd[z] = s.off[z] + int64(s.sp[z].np)
	}
	switch s.kind {
	case CN, JC:
		w.cnt = make([]uint64, pow2(s.n))
	case AA, RA:
		w.acc = make([]accum, pow2(s.n))
		w.w = make([]float64, s.n)
		w.wPub = [2][]float64{make([]float64, s.n), make([]float64, s.n)}
		// From the definitions (the scorer tabulates them by degree).
		f := func(d int32) float64 { return 1 / math.Log(float64(d)) }
		if s.kind == RA {
			f = func(d int32) float64 { return 1 / float64(d) }
		}
		safe := func(d int32, low float64) float64 {
			if d < 2 {
				return low
			}
			return f(d)
		}
		for z := range s.n {
			w.w[z], w.wPub[0][z], w.wPub[1][z] = safe(s.deg[z], 1), safe(s.pubDeg[z], 0), safe(s.pubDeg[z]+1, 0)
		}
	default:
		panic("refWorker: triad kinds CN, AA, RA, JC only")
	}
	return w
}

func (w *refWorker) Score(u int32, r *Result) {
	s := w.s
	if w.cnt != nil {
		for _, v := range w.touched[:w.nt] {
			w.cnt[v] = 0
		}
	}
	if w.acc != nil {
		for _, v := range w.touched[:w.nt] {
			w.acc[v] = accum{}
		}
	}
	w.nt = 0
	nbU := s.adj[s.off[u]:s.off[u+1]]
	r.U = u
	r.Cands, r.S, r.Pub = r.Cands[:0], r.S[:0], r.Pub[:0]
	r.DeltaS, r.SMax = s.Sensitivity(u)
	r.Wedges = 0
	if w.cnt != nil {
		w.counts(u, r)
	} else {
		w.sums(u, r)
	}
	r.Zero = s.n - 1 - len(nbU) - len(r.Cands)
}

func (w *refWorker) counts(u int32, r *Result) {
	s := w.s
	adj, off, pubEnd := s.adj, s.off, w.pubEnd
	cnt, tch := w.cnt, w.touched
	nt := 0
	var wedges int64
	for _, z := range adj[off[u]:off[u+1]] {
		lo, mid, hi := off[z], pubEnd[z], off[z+1]
		wedges += hi - lo
		nt = addCounts(cnt, tch, adj[lo:mid], 1+1<<32, nt)
		nt = addCounts(cnt, tch, adj[mid:hi], 1, nt)
	}
	w.nt = nt
	r.Wedges = wedges

	grow(r, nt)
	cands, sc, pub := r.Cands, r.S, r.Pub
	mask := len(cnt) - 1
	const mark = 1 << 63
	nbU := adj[off[u]:off[u+1]]
	cnt[int(u)&mask] |= mark
	for _, z := range nbU {
		cnt[int(z)&mask] |= mark
	}
	k := 0
	if s.kind == CN {
		for _, v := range tch[:nt] {
			x := cnt[int(v)&mask]
			if x&mark != 0 {
				continue
			}
			cands[k] = v
			sc[k] = float64(uint32(x))
			pub[k] = float64(x >> 32)
			k++
		}
	} else {
		du := s.deg[u]
		deg, pubDeg := s.deg, s.pubDeg
		for _, v := range tch[:nt] {
			x := cnt[int(v)&mask]
			if x&mark != 0 {
				continue
			}
			c, cp := int32(uint32(x)), int32(x>>32)
			cands[k] = v
			sc[k] = float64(c) / float64(du+deg[v]-c)
			if cp > 0 {
				pub[k] = float64(cp) / float64(du+pubDeg[v]-cp)
			} else {
				pub[k] = 0
			}
			k++
		}
	}
	cnt[int(u)&mask] &^= mark
	for _, z := range nbU {
		cnt[int(z)&mask] &^= mark
	}
	r.Cands, r.S, r.Pub = cands[:k], sc[:k], pub[:k]
}

func (w *refWorker) sums(u int32, r *Result) {
	s := w.s
	adj, off, pubEnd, wt, wPub := s.adj, s.off, w.pubEnd, w.w, w.wPub
	acc, tch := w.acc, w.touched
	nt := 0
	var wedges int64
	parts := [2][]int32{adj[off[u]:pubEnd[u]], adj[pubEnd[u]:off[u+1]]}
	for part, zs := range parts {
		wp := wPub[part]
		for _, z := range zs {
			a, b := wt[z], wp[z]
			lo, mid, hi := off[z], pubEnd[z], off[z+1]
			wedges += hi - lo
			nt = addSums(acc, tch, adj[lo:mid], a, b, nt)
			nt = addSums(acc, tch, adj[mid:hi], a, 0, nt)
		}
	}
	w.nt = nt
	r.Wedges = wedges

	grow(r, nt)
	cands, sc, pub := r.Cands, r.S, r.Pub
	mask := len(acc) - 1
	nbU := adj[off[u]:off[u+1]]
	flipSums(acc, u, nbU)
	k := 0
	for _, v := range tch[:nt] {
		x := acc[int(v)&mask]
		if x.s < 0 {
			continue
		}
		cands[k] = v
		sc[k] = x.s
		pub[k] = x.p
		k++
	}
	flipSums(acc, u, nbU)
	r.Cands, r.S, r.Pub = cands[:k], sc[:k], pub[:k]
}
