package ranking

import (
	"math"
	"math/rand/v2"
	"testing"
)

// bruteAUC is the pairwise definition inside the list.
func bruteAUC(rel []bool) float64 {
	var ok, tot float64
	hasPos := false
	for i := range rel {
		if rel[i] {
			hasPos = true
		}
		for j := range rel {
			if rel[i] && !rel[j] {
				tot++
				if i < j {
					ok++
				}
			}
		}
	}
	if !hasPos {
		return 0
	}
	if tot == 0 {
		return 1
	}
	return ok / tot
}

func TestEvaluateTable(t *testing.T) {
	T, F := true, false
	cases := []struct {
		name string
		rel  []bool
		pos  int
		k    int
		want TopK
	}{
		{"no positive", []bool{F, F}, 3, 2, TopK{}},
		{"only positives", []bool{T, T}, 2, 2, TopK{AUC: 1, Precision: 1, Recall: 1, NDCG: 1, MAP: 1, MRR: 1, Hits: 1}},
		{"pos second", []bool{F, T}, 1, 2, TopK{AUC: 0, Precision: 0.5, Recall: 1, NDCG: 1 / math.Log2(3), MAP: 0.5, MRR: 0.5, Hits: 1}},
		{"mixed", []bool{T, F, T, F}, 4, 4, TopK{AUC: 0.75, Precision: 0.5, Recall: 0.5,
			NDCG: (1 + 1/math.Log2(4)) / (1 + 1/math.Log2(3) + 1/math.Log2(4) + 1/math.Log2(5)), MAP: (1 + 2.0/3) / 4, MRR: 1, Hits: 1}},
		{"short list", []bool{T}, 1, 30, TopK{AUC: 1, Precision: 1.0 / 30, Recall: 1, NDCG: 1, MAP: 1, MRR: 1, Hits: 1}},
	}
	for _, c := range cases {
		got := Evaluate(c.rel, c.pos, c.k)
		for _, p := range [][2]float64{{got.AUC, c.want.AUC}, {got.Precision, c.want.Precision}, {got.Recall, c.want.Recall},
			{got.NDCG, c.want.NDCG}, {got.MAP, c.want.MAP}, {got.MRR, c.want.MRR}, {got.Hits, c.want.Hits}} {
			if math.Abs(p[0]-p[1]) > 1e-12 {
				t.Fatalf("%s: got %+v want %+v", c.name, got, c.want)
			}
		}
	}
}

func TestAUCProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for it := 0; it < 2000; it++ {
		rel := make([]bool, r.IntN(12))
		for i := range rel {
			rel[i] = r.IntN(3) == 0
		}
		if got, want := Evaluate(rel, 5, 30).AUC, bruteAUC(rel); math.Abs(got-want) > 1e-12 {
			t.Fatalf("%v: %v want %v", rel, got, want)
		}
	}
}

func TestROCAUC(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	for it := 0; it < 500; it++ {
		pos := make([]float64, 1+r.IntN(10))
		neg := make([]float64, 1+r.IntN(10))
		for i := range pos {
			pos[i] = float64(r.IntN(5))
		}
		for i := range neg {
			neg[i] = float64(r.IntN(5))
		}
		var want float64
		for _, p := range pos {
			for _, n := range neg {
				switch {
				case p > n:
					want++
				case p == n:
					want += 0.5
				}
			}
		}
		want /= float64(len(pos) * len(neg))
		if got := ROCAUC(pos, neg); math.Abs(got-want) > 1e-12 {
			t.Fatalf("got %v want %v", got, want)
		}
	}
	if !math.IsNaN(ROCAUC(nil, []float64{1})) {
		t.Fatal("empty side must be NaN")
	}
}

func TestMeanCI(t *testing.T) {
	m, h := MeanCI([]float64{1, 2, 3})
	// t_{0.975,2} = 4.302653; sd = 1; half = 4.302653/sqrt(3).
	if m != 2 || math.Abs(h-4.302652729911275/math.Sqrt(3)) > 1e-6 {
		t.Fatalf("mean %v half %v", m, h)
	}
	if m, h := MeanCI([]float64{5}); m != 5 || h != 0 {
		t.Fatal("single value")
	}
	if m, _ := MeanCI(nil); !math.IsNaN(m) {
		t.Fatal("empty must be NaN")
	}
}
