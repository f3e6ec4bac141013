package train

import (
	"math"

	"github.com/dplp/dplp/transform"
)

// deltaApprox returns the training approximation of Delta_f for dx > 0:
// the exact Delta (as transform.Table.Delta computes it) of the
// piecewise-linear interpolant of f on DeltaGrid uniform points (t.gv,
// filled by evaluate), which is the deployed table's construction on a
// coarser grid. It records the maximising pair in t.xa, t.xb for the
// gradient.
func (t *trainer) deltaApprox(dx float64) float64 {
	if dx >= 1 {
		t.xa, t.xb = 0, 1
		return t.f1 - t.f0
	}
	G := len(t.gv)
	best := math.Inf(-1)
	for i, v := range t.gv {
		z := float64(i) / float64(G-1)
		xb := min(z+dx, 1)
		if d := t.interp(xb) - v; d > best {
			best, t.xa, t.xb = d, z, xb
		}
		if xa := z - dx; xa >= 0 {
			if d := v - t.interp(xa); d > best {
				best, t.xa, t.xb = d, xa, z
			}
		}
	}
	return best
}

// cell locates x in [0, 1] on the Delta grid: x = (1-lam) z_j + lam z_{j+1}.
func (t *trainer) cell(x float64) (int, float64) {
	G := len(t.gv)
	pos := x * float64(G-1)
	j := int(pos)
	if j >= G-1 {
		return G - 2, 1
	}
	return j, pos - float64(j)
}

func (t *trainer) interp(x float64) float64 {
	j, lam := t.cell(x)
	return t.gv[j] + lam*(t.gv[j+1]-t.gv[j])
}

// deltaGrad adds w * dDelta/dtheta at the recorded maximiser to d.
func (t *trainer) deltaGrad(dx, w float64, d []float64) {
	if dx >= 1 {
		t.f.Grad(1, w, d)
		t.f.Grad(0, -w, d)
		return
	}
	G := float64(len(t.gv) - 1)
	for _, pt := range [2]struct{ x, s float64 }{{t.xb, w}, {t.xa, -w}} {
		j, lam := t.cell(pt.x)
		if lam != 1 {
			t.f.Grad(float64(j)/G, pt.s*(1-lam), d)
		}
		if lam != 0 {
			t.f.Grad(float64(j+1)/G, pt.s*lam, d)
		}
	}
}

// grid fills g with tr at len(g) uniform points of [0, 1].
func grid(tr transform.Transform, g []float64) {
	for i := range g {
		g[i] = tr.Eval(float64(i) / float64(len(g)-1))
	}
}
