package score

import (
	"math"
	"testing"

	"github.com/dplp/dplp/randx"
	"github.com/dplp/dplp/research/gen"
)

func TestBounded(t *testing.T) {
	g, err := gen.BarabasiAlbert(200, 3, randx.Seeded(1))
	if err != nil {
		t.Fatal(err)
	}
	fn := func(u, v int32) float64 {
		if (u+v)%17 == 0 {
			return math.NaN() // clamped to lo
		}
		return 0.5 + math.Sin(float64(u*31+v*7)) // may leave [0, 1]: clamped
	}
	s, err := NewBounded(g, nil, "ext", 0, 1, fn)
	if err != nil {
		t.Fatal(err)
	}
	w := s.NewWorker()
	var r Result
	for u := int32(0); u < 200; u++ {
		w.Score(u, &r)
		if r.DeltaS != 1 || r.SMax != 1 || r.Zero != 0 || r.NumCandidates() != 199-g.Degree(u) {
			t.Fatalf("u=%d: %+v", u, r)
		}
		for i, v := range r.Cands {
			want := min(1, max(0, fn(u, v)))
			if math.IsNaN(fn(u, v)) {
				want = 0
			}
			if g.HasEdge(u, v) || v == u || r.S[i] != want || r.Pub[i] != 0 {
				t.Fatalf("u=%d v=%d s=%v want %v", u, v, r.S[i], want)
			}
			if a, _ := w.At(v); a != want {
				t.Fatalf("At mismatch")
			}
		}
		for _, z := range g.Neighbors(u) {
			if a, _ := w.At(z); a < 0 || a > 1 {
				t.Fatal("At on a neighbour out of range")
			}
		}
	}
	if s.Name() != "ext" {
		t.Fatal(s.Name())
	}
	shifted, _ := NewBounded(g, nil, "x", -2, 2, func(u, v int32) float64 { return 1 })
	shifted.NewWorker().Score(0, &r)
	if r.S[0] != 3 || r.SMax != 4 || r.DeltaS != 4 {
		t.Fatalf("shift: %+v", r)
	}
	for _, bad := range [][2]float64{{1, 1}, {2, 1}, {math.Inf(-1), 0}} {
		if _, err := NewBounded(g, nil, "x", bad[0], bad[1], fn); err == nil {
			t.Fatalf("range %v accepted", bad)
		}
	}
}
