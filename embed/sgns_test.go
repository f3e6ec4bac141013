package embed

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/dplp/dplp/randx"
)

func TestSigmoidTable(t *testing.T) {
	worst := 0.0
	for x := -20.0; x <= 20; x += 0.00137 {
		want := 1 / (1 + math.Exp(-x))
		worst = max(worst, math.Abs(float64(sigmoid(float32(x)))-want))
	}
	if worst > 1e-6 {
		t.Errorf("max sigmoid error %g", worst)
	}
	if sigmoid(float32(math.NaN())) != 0 || sigmoid(float32(math.Inf(1))) != 1 || sigmoid(float32(math.Inf(-1))) != 0 {
		t.Error("sigmoid of NaN/Inf")
	}
}

// TestSkipGramPairGradient checks the SGD step of skipGramPair against
// central finite differences of the loss it reports: with learning rate lr,
// the change of each parameter must be -lr times the numerical gradient.
func TestSkipGramPairGradient(t *testing.T) {
	const dim, rows = 7, 6 // odd dim exercises the unrolled loops' tails
	r := randx.Seeded(5)
	for trial := range 20 {
		in := make([]float32, dim)
		syn1 := make([]float32, rows*dim)
		for i := range in {
			in[i] = float32(r.NormFloat64())
		}
		for i := range syn1 {
			syn1[i] = float32(r.NormFloat64() * 0.7)
		}
		pos := int32(r.IntN(rows))
		// Distinct negatives, one of which may equal pos (it is skipped).
		negs := []int32{int32((int(pos) + 1) % rows), int32((int(pos) + 3) % rows)}
		if trial%2 == 0 {
			negs = append(negs, pos)
		}
		neu1e := make([]float32, dim)
		loss := func() float64 {
			i2, s2 := append([]float32(nil), in...), append([]float32(nil), syn1...)
			return skipGramPair(i2, s2, dim, pos, negs, neu1e, 0, true)
		}
		// Numerical gradient in float64 on float32 parameters.
		const h = 1e-2
		numIn := make([]float64, dim)
		for i := range in {
			old := in[i]
			in[i] = old + h
			lp := loss()
			in[i] = old - h
			lm := loss()
			in[i] = old
			numIn[i] = (lp - lm) / (2 * h)
		}
		numOut := make([]float64, len(syn1))
		for i := range syn1 {
			old := syn1[i]
			syn1[i] = old + h
			lp := loss()
			syn1[i] = old - h
			lm := loss()
			syn1[i] = old
			numOut[i] = (lp - lm) / (2 * h)
		}
		const lr = 1e-3
		i2, s2 := append([]float32(nil), in...), append([]float32(nil), syn1...)
		l0 := skipGramPair(i2, s2, dim, pos, negs, neu1e, lr, true)
		if d := math.Abs(l0 - loss()); d > 1e-9 {
			t.Fatalf("reported loss depends on lr: diff %g", d)
		}
		check := func(what string, got float32, before float32, want float64) {
			step := float64(got-before) / -lr
			if math.Abs(step-want) > 2e-3*(1+math.Abs(want)) {
				t.Errorf("trial %d %s: step/-lr = %.6f, numerical gradient %.6f", trial, what, step, want)
			}
		}
		for i := range in {
			check("in", i2[i], in[i], numIn[i])
		}
		for i := range syn1 {
			check("out", s2[i], syn1[i], numOut[i])
		}
	}
}

func TestSkipGramErrors(t *testing.T) {
	good := DefaultSkipGram()
	walks := [][]int32{{0, 1, 2}}
	r := randx.Seeded(1)
	bad := []func(c *SkipGramConfig){
		func(c *SkipGramConfig) { c.Dim = 0 },
		func(c *SkipGramConfig) { c.Window = 0 },
		func(c *SkipGramConfig) { c.Negative = -1 },
		func(c *SkipGramConfig) { c.Epochs = 0 },
		func(c *SkipGramConfig) { c.LR = 0 },
		func(c *SkipGramConfig) { c.LR = math.NaN() },
		func(c *SkipGramConfig) { c.Subsample = -1 },
		func(c *SkipGramConfig) { c.Workers = -1 },
	}
	for i, f := range bad {
		c := good
		f(&c)
		if _, err := SkipGram(context.Background(), 3, walks, c, r, nil); err == nil {
			t.Errorf("bad config %d: no error", i)
		}
	}
	if _, err := SkipGram(context.Background(), 2, walks, good, r, nil); err == nil {
		t.Error("out-of-range walk node: no error")
	}
	if _, err := SkipGram(context.Background(), 3, walks, good, nil, nil); err == nil {
		t.Error("nil rand: no error")
	}
	if _, err := SkipGram(context.Background(), 0, nil, good, r, nil); err == nil {
		t.Error("zero nodes: no error")
	}
	// No pairs at all is fine: vectors stay at their initial values.
	e, err := SkipGram(context.Background(), 3, [][]int32{{0}, {1}}, good, r, nil)
	if err != nil || e.N != 3 || e.Dim != good.Dim || len(e.Vec) != 3*good.Dim {
		t.Errorf("trivial corpus: %v %+v", err, e)
	}
}

func TestSkipGramCancel(t *testing.T) {
	g := plantedPartition(t, 40, 0.3, 0.05, 3)
	walks, err := UniformWalks(context.Background(), g, WalkConfig{WalksPerNode: 5, WalkLength: 10}, 1, randx.Seeded(2))
	if err != nil {
		t.Fatal(err)
	}
	c := smallSkipGram()
	c.Epochs = 2
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reports := 0
	e, err := SkipGram(ctx, g.N(), walks, c, randx.Seeded(1), func(int, int) {
		reports++
		cancel()
	})
	if !errors.Is(err, context.Canceled) || e != nil || reports != 1 {
		t.Fatalf("embedding %v, err %v, %d reports; want context.Canceled after one", e != nil, err, reports)
	}
}
