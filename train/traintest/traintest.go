// Package traintest holds a test helper shared by the packages that compile
// trained transforms (model, train/deploy).
package traintest

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dplp/dplp/train"
)

// Result trains variant v for two epochs on small seeded synthetic queries
// (scores in [0, 10], public scores for dplp-pub) and returns the result.
func Result(t testing.TB, v train.Variant) *train.Result {
	t.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	mk := func(n int) []train.Query {
		qs := make([]train.Query, n)
		for i := range qs {
			q := train.Query{SMax: 10, DeltaS: 1 + r.Float64()}
			for k := 0; k < 4; k++ {
				q.Pos = append(q.Pos, math.Floor(10*math.Sqrt(r.Float64())))
				q.PubPos = append(q.PubPos, math.Floor(4*r.Float64()))
			}
			for k := 0; k < 30; k++ {
				q.Neg = append(q.Neg, math.Floor(10*r.Float64()*r.Float64()))
				q.PubNeg = append(q.PubNeg, math.Floor(4*r.Float64()*r.Float64()))
			}
			if !v.Public() {
				q.PubPos, q.PubNeg = nil, nil
			}
			qs[i] = q
		}
		return qs
	}
	cfg := train.DefaultConfig(v, 0.5)
	cfg.Epochs = 2
	cfg.Hidden, cfg.QuadNodes = []int{5}, 12
	res, err := train.Train(context.Background(), cfg, mk(20), mk(10), r)
	if err != nil {
		t.Fatal(err)
	}
	return res
}
