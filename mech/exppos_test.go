package mech

import (
	"math"
	"math/rand/v2"
	"testing"
)

// zeroFirst is a source whose first output is 0 (ExpFloat64 then returns
// exactly 0 through its ziggurat's first layer), then a PCG stream.
type zeroFirst struct {
	n   int
	pcg *rand.PCG
}

func (z *zeroFirst) Uint64() uint64 {
	z.n++
	if z.n == 1 {
		return 0
	}
	return z.pcg.Uint64()
}

func TestExpPosNeverZero(t *testing.T) {
	raw := rand.New(&zeroFirst{pcg: rand.NewPCG(1, 2)})
	if e := raw.ExpFloat64(); e != 0 {
		t.Logf("ExpFloat64 on a zero word gave %v (not 0): the guard is then defensive only", e)
	}
	r := rand.New(&zeroFirst{pcg: rand.NewPCG(1, 2)})
	e := expPos(r)
	if !(e > 0) || math.IsInf(-math.Log(e), 0) {
		t.Fatalf("expPos = %v: Gumbel key %v", e, -math.Log(e))
	}
	// The Gumbel top-K never produces an infinite key from such a source.
	u := &Utilities{Vals: []float64{0, 1, 2}}
	picks, err := ExpTopK(u, 3, 1, rand.New(&zeroFirst{pcg: rand.NewPCG(3, 4)}), nil)
	if err != nil || len(picks) != 3 {
		t.Fatalf("picks %v, %v", picks, err)
	}
}
