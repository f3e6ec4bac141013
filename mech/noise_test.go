package mech

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

var stairCases = []StaircaseParams{
	{Eps: 0.1, Delta: 1, Gamma: OptimalGamma(0.1)},
	{Eps: 0.1, Delta: 1, Gamma: ReferenceGamma(0.1)},
	{Eps: 0.9, Delta: 2.5, Gamma: OptimalGamma(0.9)},
	{Eps: 3, Delta: 0.2, Gamma: 0.2},
	{Eps: 0.5, Delta: 1, Gamma: 0},
	{Eps: 0.5, Delta: 1, Gamma: 1},
}

// stairMass sums the density exactly over its constant pieces on [0, ∞).
func stairMass(p StaircaseParams) float64 {
	b := math.Exp(-p.Eps)
	s := 0.0
	k := 0
	for ; math.Pow(b, float64(k)) > 1e-20; k++ {
		x0 := float64(k) * p.Delta
		s += p.Gamma * p.Delta * p.PDF(x0+p.Gamma*p.Delta/2)
		s += (1 - p.Gamma) * p.Delta * p.PDF(x0+(1+p.Gamma)*p.Delta/2)
	}
	return 2 * s
}

func TestStaircaseDensityIntegratesToOne(t *testing.T) {
	for _, p := range stairCases {
		if m := stairMass(p); math.Abs(m-1) > 1e-12 {
			t.Errorf("%+v: mass %v", p, m)
		}
		// The piece values are a(γ)b^k and a(γ)b^(k+1) (Geng & Viswanath).
		b := math.Exp(-p.Eps)
		a := (1 - b) / (2 * p.Delta * (p.Gamma + (1-p.Gamma)*b))
		for k := range 5 {
			x := (float64(k) + p.Gamma/2) * p.Delta
			if p.Gamma > 0 && !close(p.PDF(x), a*math.Pow(b, float64(k)), 1e-13) {
				t.Errorf("%+v: pdf(%v) = %v, want %v", p, x, p.PDF(x), a*math.Pow(b, float64(k)))
			}
			x = (float64(k) + (1+p.Gamma)/2) * p.Delta
			if p.Gamma < 1 && !close(p.PDF(-x), a*math.Pow(b, float64(k+1)), 1e-13) {
				t.Errorf("%+v: pdf(%v) = %v", p, -x, p.PDF(-x))
			}
		}
	}
}

func close(a, b, rel float64) bool { return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b)) }

// The CDF is the integral of the PDF: check at random points by exact
// piecewise integration, plus symmetry and the closed values at kΔ.
func TestStaircaseCDFIsIntegralOfPDF(t *testing.T) {
	r := seeded(3)
	for _, p := range stairCases {
		b := math.Exp(-p.Eps)
		if math.Abs(StaircaseCDF(0, p)-0.5) > 1e-15 {
			t.Errorf("%+v: CDF(0) = %v", p, StaircaseCDF(0, p))
		}
		for k := range 20 {
			x := float64(k) * p.Delta
			want := 0.5 * math.Pow(b, float64(k))
			if got := p.stair().survival(x); !close(got, want, 1e-12) {
				t.Errorf("%+v: survival(%v) = %v, want %v", p, x, got, want)
			}
			if got := p.CDF(-x); !close(got, want, 1e-13) {
				t.Errorf("%+v: CDF(%v) = %v, want %v", p, -x, got, want)
			}
		}
		for range 200 {
			x := (r.Float64()*2 - 1) * 15 * p.Delta
			// ∫_0^|x| pdf over constant pieces.
			bps := []float64{0, math.Abs(x)}
			for k := 0; float64(k)*p.Delta < math.Abs(x); k++ {
				bps = append(bps, float64(k)*p.Delta, (float64(k)+p.Gamma)*p.Delta)
			}
			slices.Sort(bps)
			s := 0.0
			for i := 0; i+1 < len(bps) && bps[i+1] <= math.Abs(x); i++ {
				if bps[i+1] > bps[i] {
					s += (bps[i+1] - bps[i]) * StaircasePDF((bps[i]+bps[i+1])/2, p)
				}
			}
			want := 0.5 + math.Copysign(s, x)
			if got := StaircaseCDF(x, p); math.Abs(got-want) > 1e-13 {
				t.Errorf("%+v: CDF(%v) = %v, want %v", p, x, got, want)
			}
			if got := p.CDF(x) + p.CDF(-x); math.Abs(got-1) > 1e-14 {
				t.Errorf("%+v: CDF(x)+CDF(-x) = %v", p, got)
			}
			if got, want := p.stair().survival(x), 1-p.CDF(x); math.Abs(got-want) > 1e-14 {
				t.Errorf("%+v: survival(%v) = %v, want %v", p, x, got, want)
			}
			if got, want := p.stair().logCDF(x), math.Log(p.CDF(x)); math.Abs(got-want) > 1e-13 {
				t.Errorf("%+v: logCDF(%v) = %v, want %v", p, x, got, want)
			}
			if got, want := p.stair().logPDF(x), math.Log(p.PDF(x)); math.Abs(got-want) > 1e-13 {
				t.Errorf("%+v: logPDF(%v) = %v, want %v", p, x, got, want)
			}
		}
	}
}

// ksPValue is the asymptotic Kolmogorov p-value (Stephens' correction).
func ksPValue(d float64, n int) float64 {
	sn := math.Sqrt(float64(n))
	x := (sn + 0.12 + 0.11/sn) * d
	p := 0.0
	for j := 1; j <= 100; j++ {
		term := 2 * math.Exp(-2*float64(j*j)*x*x)
		if j%2 == 0 {
			term = -term
		}
		p += term
	}
	return math.Min(math.Max(p, 0), 1)
}

func ksStat(xs []float64, cdf func(float64) float64) float64 {
	slices.Sort(xs)
	n := float64(len(xs))
	d := 0.0
	for i, x := range xs {
		f := cdf(x)
		d = max(d, math.Abs(f-float64(i)/n), math.Abs(float64(i+1)/n-f))
	}
	return d
}

func TestSamplersMatchCDF(t *testing.T) {
	n := 40000
	if testing.Short() {
		n = 10000
	}
	noises := []Noise{Laplace{1}, Laplace{0.03}}
	for _, p := range stairCases {
		noises = append(noises, p)
	}
	for i, nz := range noises {
		r := seeded(uint64(200 + i))
		xs := make([]float64, n)
		for j := range xs {
			xs[j] = nz.Sample(r)
		}
		if d := ksStat(xs, nz.CDF); ksPValue(d, n) < pMin {
			t.Errorf("%+v Sample: KS D = %.4g p = %.2g", nz, d, ksPValue(d, n))
		}
		// Inverse-CDF path used for block order statistics.
		for j := range xs {
			xs[j] = nz.prep().quantileExp(r.ExpFloat64())
		}
		if d := ksStat(xs, nz.CDF); ksPValue(d, n) < pMin {
			t.Errorf("%+v quantileExp: KS D = %.4g p = %.2g", nz, d, ksPValue(d, n))
		}
	}
}

// The KS test can fail: a staircase sampled with the wrong γ is rejected.
func TestKSDetectsWrongGamma(t *testing.T) {
	p := StaircaseParams{Eps: 0.5, Delta: 1, Gamma: 0.3}
	q := p
	q.Gamma = 0.7
	r := seeded(9)
	xs := make([]float64, 40000)
	for j := range xs {
		xs[j] = q.Sample(r)
	}
	if d := ksStat(xs, p.CDF); ksPValue(d, len(xs)) > 1e-6 {
		t.Errorf("wrong gamma accepted: D = %v", d)
	}
}

func TestQuantileExpInvertsCDF(t *testing.T) {
	noises := []Noise{Laplace{1}, Laplace{7}}
	for _, p := range stairCases {
		noises = append(noises, p)
	}
	for _, nz := range noises {
		for _, z := range []float64{1e-300, 1e-30, 1e-12, 1e-5, 0.01, 0.3, math.Ln2, 0.7, 1, 3, 10, 100, 700} {
			x := nz.prep().quantileExp(z)
			// Compare the smaller tail, which is what is resolved.
			var got, want float64
			if z <= math.Ln2 {
				got, want = nz.prep().survival(x), -math.Expm1(-z)
			} else {
				got, want = nz.CDF(x), math.Exp(-z)
			}
			if !close(got, want, 1e-9) {
				t.Errorf("%+v z=%g: x=%g tail %g, want %g", nz, z, x, got, want)
			}
		}
	}
}

// variance of the staircase (in units of Δ²) by exact summation.
func stairVariance(eps, gamma float64) float64 {
	b := math.Exp(-eps)
	c := 1 / (gamma + (1-gamma)*b)
	p0, p1 := gamma*c, (1-gamma)*b*c
	sq := func(a, w float64) float64 { return a*a + a*w + w*w/3 } // E(a + wU)²
	v := 0.0
	for k := 0; math.Pow(b, float64(k)) > 1e-22; k++ {
		kf := float64(k)
		v += (1 - b) * math.Pow(b, kf) * (p0*sq(kf, gamma) + p1*sq(kf+gamma, 1-gamma))
	}
	return v
}

func TestOptimalGamma(t *testing.T) {
	// Reference values from reference-implementation.md §7.
	refs := map[float64]float64{0.1: 0.735, 0.3: 0.525, 0.5: 0.482, 0.7: 0.456, 0.9: 0.436}
	for eps, want := range refs {
		if got := ReferenceGamma(eps); math.Abs(got-want) > 5e-4 {
			t.Errorf("ReferenceGamma(%v) = %v, want %v", eps, got, want)
		}
	}
	if got := OptimalGamma(0.1); math.Abs(got-0.492) > 5e-4 {
		t.Errorf("OptimalGamma(0.1) = %v, want 0.492", got)
	}
	if got := ReferenceGamma(0.01); got != 0.999 {
		t.Errorf("ReferenceGamma(0.01) = %v, want the 0.999 cap", got)
	}
	for _, eps := range []float64{0.05, 0.1, 0.5, 1, 2, 5} {
		g := OptimalGamma(eps)
		// The literal formula agrees with the factorised one.
		b := math.Exp(-eps)
		lit := -b/(1-b) + math.Cbrt(b-2*b*b+2*math.Pow(b, 4)-math.Pow(b, 5))/(math.Cbrt(2)*(1-b)*(1-b))
		if math.Abs(lit-g) > 1e-9 {
			t.Errorf("eps %v: factorised %v vs literal %v", eps, g, lit)
		}
		if !(g > 0 && g < 1) {
			t.Fatalf("eps %v: gamma %v", eps, g)
		}
		// γ* minimises the variance: golden-section search agrees.
		lo, hi := 1e-6, 1-1e-6
		phi := (math.Sqrt(5) - 1) / 2
		for hi-lo > 1e-9 {
			a, bb := hi-phi*(hi-lo), lo+phi*(hi-lo)
			if stairVariance(eps, a) < stairVariance(eps, bb) {
				hi = bb
			} else {
				lo = a
			}
		}
		if math.Abs((lo+hi)/2-g) > 1e-5 {
			t.Errorf("eps %v: variance minimised at %v, OptimalGamma %v", eps, (lo+hi)/2, g)
		}
	}
}

func TestLaplaceBasics(t *testing.T) {
	l := Laplace{2}
	for _, x := range []float64{-50, -3, -0.1, 0, 0.1, 3, 50} {
		want := 0.5 * math.Exp(-math.Abs(x)/2)
		if x >= 0 {
			want = 1 - want
		}
		if got := l.CDF(x); !close(got, want, 1e-15) {
			t.Errorf("CDF(%v) = %v", x, got)
		}
		if got := l.prep().logCDF(x); !close(got, math.Log(want), 1e-14) && math.Abs(got-math.Log(want)) > 1e-16 {
			t.Errorf("logCDF(%v) = %v", x, got)
		}
		if got := l.PDF(x); !close(got, math.Exp(-math.Abs(x)/2)/4, 1e-15) {
			t.Errorf("PDF(%v) = %v", x, got)
		}
	}
	z := Laplace{0}
	if z.Sample(rand.New(rand.NewPCG(1, 2))) != 0 || z.CDF(-1e-9) != 0 || z.CDF(0) != 1 || z.PDF(1) != 0 {
		t.Error("zero Laplace is not a point mass at 0")
	}
	s0 := StaircaseParams{Eps: 1, Delta: 0, Gamma: 0.5}
	if s0.Sample(seeded(1)) != 0 || s0.CDF(-1e-9) != 0 || s0.CDF(0) != 1 {
		t.Error("zero staircase is not a point mass at 0")
	}
}
