package calib

import (
	"math/rand/v2"

	"github.com/dplp/dplp/mech"
	"github.com/dplp/dplp/score"
)

// QueryOf is the calibration's view of a scored query (rigorous mode).
func QueryOf(r *score.Result) Query { return Query{DeltaS: r.DeltaS, SMax: r.SMax} }

// Releaser turns scored queries into released lists over all candidates
// (deployment). It reuses its buffers; use one per goroutine.
type Releaser struct {
	u     mech.Utilities
	picks []int
	zero  []int32
}

// Release samples the plan's top-k list for the scored query r (scored by
// worker w) and appends the chosen candidate ids to dst. The zero block
// (candidates with s = s_pub = 0) is one block of equal utility, so its cost
// does not grow with its size.
func (rl *Releaser) Release(p *Plan, w *score.Worker, r *score.Result, k int, rng *rand.Rand, dst []int32) ([]int32, error) {
	rl.u.Vals = rl.u.Vals[:0]
	for i := range r.Cands {
		rl.u.Vals = append(rl.u.Vals, p.Utility(r.S[i], r.Pub[i]))
	}
	// r.Pub is aligned with the utilities; the lexicographic plan ranks by it.
	rl.u.Blocks = rl.u.Blocks[:0]
	if r.Zero > 0 {
		rl.u.Blocks = append(rl.u.Blocks, mech.Block{Val: p.Utility(0, 0), Size: r.Zero})
	}
	var err error
	rl.picks, err = p.SampleWithPub(&rl.u, r.Pub, k, rng, rl.picks[:0])
	if err != nil {
		return dst, err
	}
	zeroListed := false
	for _, i := range rl.picks {
		if i < len(r.Cands) {
			dst = append(dst, r.Cands[i])
			continue
		}
		if !zeroListed {
			rl.zero = w.ZeroCands(rl.zero[:0])
			zeroListed = true
		}
		dst = append(dst, rl.zero[i-len(r.Cands)])
	}
	return dst, nil
}
