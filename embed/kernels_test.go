package embed

import (
	"math"
	"testing"

	"github.com/dplp/dplp/randx"
)

// TestKernelsMatchPortable compares the dispatching kernels (SIMD where
// available) with the portable loops and a float64 reference.
func TestKernelsMatchPortable(t *testing.T) {
	r := randx.Seeded(8)
	for n := 0; n <= 70; n++ {
		a, b, c := make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range a {
			a[i], b[i], c[i] = float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		var want float64
		for i := range a {
			want += float64(a[i]) * float64(b[i])
		}
		if got := dot(a, b); math.Abs(float64(got)-want) > 1e-5*(1+float64(n)) {
			t.Errorf("n=%d: dot %g, want %g", n, got, want)
		}
		if got := dotGo(a, b); math.Abs(float64(got)-want) > 1e-5*(1+float64(n)) {
			t.Errorf("n=%d: dotGo %g, want %g", n, got, want)
		}
		const g = 0.37
		out1, gin1 := append([]float32(nil), b...), append([]float32(nil), c...)
		out2, gin2 := append([]float32(nil), b...), append([]float32(nil), c...)
		update2(g, a, out1, gin1)
		update2Go(g, a, out2, gin2)
		for i := range a {
			wantOut := float64(b[i]) + g*float64(a[i])
			wantGin := float64(c[i]) + g*float64(b[i])
			for _, v := range []struct {
				got  float32
				want float64
			}{{out1[i], wantOut}, {out2[i], wantOut}, {gin1[i], wantGin}, {gin2[i], wantGin}} {
				if math.Abs(float64(v.got)-v.want) > 1e-6*(1+math.Abs(v.want)) {
					t.Fatalf("n=%d i=%d: update2 %g, want %g", n, i, v.got, v.want)
				}
			}
		}
	}
	t.Logf("SIMD kernels in use: %v", useSIMD)
}
