package numeric

import (
	"math"
	"testing"
)

func TestSigmoidSoftplus(t *testing.T) {
	for _, x := range []float64{-800, -40, -35.5, -3, -1e-9, 0, 1e-9, 2.5, 35.5, 40, 800} {
		want := 1 / (1 + math.Exp(-x))
		if got := Sigmoid(x); math.IsNaN(got) || math.Abs(got-want) > 1e-15*math.Max(want, 1e-300) && !(want == 0 && got < 1e-300) {
			t.Errorf("Sigmoid(%v) = %v, want %v", x, got, want)
		}
		sp := Softplus(x)
		if math.IsInf(sp, 0) || math.IsNaN(sp) || sp < 0 {
			t.Errorf("Softplus(%v) = %v", x, sp)
		}
		if math.Abs(x) < 30 {
			if want := math.Log(1 + math.Exp(x)); math.Abs(sp-want) > 1e-12*math.Max(1, want) {
				t.Errorf("Softplus(%v) = %v, want %v", x, sp, want)
			}
		}
	}
	// Softplus(x) = -log Sigmoid(-x).
	for _, x := range []float64{-20, -1, 0, 1, 20} {
		if a, b := Softplus(x), -math.Log(Sigmoid(-x)); math.Abs(a-b) > 1e-12*math.Max(1, a) {
			t.Errorf("Softplus(%v) = %v, -log Sigmoid(-x) = %v", x, a, b)
		}
	}
}

// Two Adam steps against the formulas worked by hand, in both forms, with
// weight decay and custom betas.
func TestAdamSteps(t *testing.T) {
	for _, tf := range []bool{false, true} {
		p := []float64{1, -2}
		a := NewAdam([][]float64{p}, 0.1, []float64{0.01}, tf)
		a.SetBetas(0.8, 0.9, 1e-6)
		var m, v [2]float64
		want := []float64{1, -2}
		for step, g := range [][]float64{{0.5, -1}, {0.25, 3}} {
			tt := float64(step + 1)
			for j := range want {
				gj := g[j] + 0.01*want[j]
				m[j] = 0.8*m[j] + 0.2*gj
				v[j] = 0.9*v[j] + 0.1*gj*gj
				if tf {
					lr := 0.1 * math.Sqrt(1-math.Pow(0.9, tt)) / (1 - math.Pow(0.8, tt))
					want[j] -= lr * m[j] / (math.Sqrt(v[j]) + 1e-6)
				} else {
					want[j] -= 0.1 * (m[j] / (1 - math.Pow(0.8, tt))) / (math.Sqrt(v[j]/(1-math.Pow(0.9, tt))) + 1e-6)
				}
			}
			a.Step([][]float64{p}, [][]float64{g})
			for j := range p {
				if math.Abs(p[j]-want[j]) > 1e-14 {
					t.Fatalf("tf=%v step %d: p = %v, want %v", tf, step+1, p, want)
				}
			}
		}
	}
}
