package transform

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

func relErr(a, b float64) float64 {
	return math.Abs(a-b) / math.Max(1e-300, math.Max(math.Abs(a), math.Abs(b)))
}

func TestClenshawCurtisExactForPolynomials(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 5, 8, 11, 50, 51, 64} {
		nodes, w, err := ClenshawCurtis(n)
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes) != n+1 || len(w) != n+1 {
			t.Fatalf("n=%d: %d nodes %d weights", n, len(nodes), len(w))
		}
		if nodes[0] != 0 || nodes[n] != 1 || !slices.IsSorted(nodes) {
			t.Fatalf("n=%d: nodes not ascending on [0,1]: %v", n, nodes)
		}
		for k, wk := range w {
			if !(wk > 0) {
				t.Fatalf("n=%d: weight %d = %v", n, k, wk)
			}
		}
		// Exact for every polynomial of degree <= n: check the Chebyshev
		// basis T_k(2t-1), which (unlike monomials, whose top Chebyshev
		// coefficients are ~2^-k) exposes an error in any single moment.
		// integral_0^1 T_k(2t-1) dt = 1/(1-k^2) for even k, 0 for odd k.
		cheb := func(k int) float64 {
			var s float64
			for j, x := range nodes {
				s += w[j] * math.Cos(float64(k)*math.Acos(2*x-1))
			}
			want := 0.0
			if k%2 == 0 {
				want = 1 / float64(1-k*k)
			}
			return s - want
		}
		top := n
		if n%2 == 0 {
			top = n + 1 // odd degree n+1 is exact by symmetry
		}
		for k := 0; k <= top; k++ {
			if e := cheb(k); math.Abs(e) > 1e-14 {
				t.Errorf("n=%d: T_%d integrated with error %v", n, k, e)
			}
		}
		// The next degree is not exact (so the check can fail).
		if e := cheb(top + 1); n >= 2 && math.Abs(e) < 1e-6 {
			t.Errorf("n=%d: T_%d integrated exactly (error %v): rule suspicious", n, top+1, e)
		}
		var s float64
		for j, x := range nodes {
			s += w[j] * x * x * x
		}
		if n >= 3 && math.Abs(s-0.25) > 1e-15 {
			t.Errorf("n=%d: t^3 gives %v", n, s)
		}
	}
	if _, _, err := ClenshawCurtis(0); err == nil {
		t.Error("n=0 accepted")
	}
}

func TestClenshawCurtisKnownWeights(t *testing.T) {
	// Classic closed forms on [-1,1] for even n: w_0 = w_n = 1/(n^2-1);
	// n = 2 is Simpson's rule (1/3, 4/3, 1/3). The authors' (upstream UMNN)
	// weights give w_0 = 3.92e-4 = 1/2550 and w_25 = 0.062847 for n = 50
	// (reference §4.3) because they do not halve the last Chebyshev moment;
	// that rule is off for T_50, so it is deliberately not reproduced here.
	_, w, _ := ClenshawCurtis(50)
	if math.Abs(2*w[0]-1.0/2499) > 1e-17 || math.Abs(2*w[25]-0.0628312) > 1e-7 {
		t.Errorf("n=50: w0=%v w25=%v", 2*w[0], 2*w[25])
	}
	var sum float64
	for _, x := range w {
		sum += x
	}
	if math.Abs(sum-1) > 1e-15 {
		t.Errorf("weights sum to %v", sum)
	}
	_, w, _ = ClenshawCurtis(2)
	if math.Abs(w[0]-1.0/6) > 1e-16 || math.Abs(w[1]-4.0/6) > 1e-16 || w[0] != w[2] {
		t.Errorf("n=2: %v, want Simpson", w)
	}
}

func TestExponents(t *testing.T) {
	p, r := PaperExponents(), ReferenceExponents()
	if len(p) != 170 || len(r) != 170 {
		t.Fatal("want 170 exponents")
	}
	if p[0] != 0.5 || math.Abs(p[169]-2.19) > 1e-12 {
		t.Errorf("paper exponents %v .. %v", p[0], p[169])
	}
	if math.Abs(r[0]-1/0.3) > 1e-12 || math.Abs(r[169]-1/1.99) > 1e-12 {
		t.Errorf("reference exponents %v .. %v", r[0], r[169])
	}
}

func TestPowerMatchesDirectFormula(t *testing.T) {
	r := rng(1)
	for _, exps := range [][]float64{PaperExponents(), ReferenceExponents(), {0.3, 1, 7}} {
		p, err := NewPower(exps, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		beta := make([]float64, len(exps))
		for j := range beta {
			beta[j] = -200 + 300*r.Float64()
		}
		if err := p.SetParams(beta); err != nil {
			t.Fatal(err)
		}
		for _, x := range []float64{0, 1e-9, 0.001, 0.3, 0.5, 0.999, 1, r.Float64()} {
			var want float64
			for j, a := range exps {
				want += math.Exp(0.01*beta[j]) * math.Pow(x, a)
			}
			if got := p.Eval(x); relErr(got, want) > 1e-12 && math.Abs(got-want) > 1e-300 {
				t.Errorf("exps[0]=%v x=%v: %v, want %v", exps[0], x, got, want)
			}
		}
	}
}

func TestPowerAuthorsInit(t *testing.T) {
	p, _ := NewPower(PaperExponents(), 0.01)
	w := p.Weights()
	if w[0] != 1 || math.Abs(w[1]-math.Exp(-1)) > 1e-15 {
		t.Errorf("init weights %v %v", w[0], w[1])
	}
}

// fdCheck compares tr.Grad with central differences for every parameter
// at each x, and Deriv with a difference in x.
func fdCheck(t *testing.T, name string, tr Transform, xs []float64, tol float64) {
	t.Helper()
	base := tr.Params()
	np := tr.NumParams()
	for _, x := range xs {
		w := 0.7
		g := make([]float64, np)
		v := tr.Grad(x, w, g)
		if relErr(v, tr.Eval(x)) > 1e-13 {
			t.Errorf("%s x=%v: Grad value %v != Eval %v", name, x, v, tr.Eval(x))
		}
		p := slices.Clone(base)
		for i := 0; i < np; i++ {
			h := 1e-6 * math.Max(1, math.Abs(base[i]))
			p[i] = base[i] + h
			_ = tr.SetParams(p)
			fp := tr.Eval(x)
			p[i] = base[i] - h
			_ = tr.SetParams(p)
			fm := tr.Eval(x)
			p[i] = base[i]
			fd := w * (fp - fm) / (2 * h)
			if math.Abs(fd-g[i]) > tol*math.Max(1, math.Abs(v)) {
				t.Errorf("%s x=%v param %d: grad %v, finite difference %v", name, x, i, g[i], fd)
			}
		}
		_ = tr.SetParams(base)
		if x > 0.01 && x < 0.99 {
			h := 1e-6
			fd := (tr.Eval(x+h) - tr.Eval(x-h)) / (2 * h)
			if d := tr.Deriv(x); relErr(d, fd) > 1e-5 {
				t.Errorf("%s x=%v: Deriv %v, finite difference %v", name, x, d, fd)
			}
		}
	}
}

func randomize(tr Transform, r *rand.Rand, scale float64) {
	p := tr.Params()
	for i := range p {
		p[i] += scale * r.NormFloat64()
	}
	_ = tr.SetParams(p)
}

func TestGradientsMatchFiniteDifferences(t *testing.T) {
	xs := []float64{0, 0.013, 0.2, 0.5, 0.77, 1}
	r := rng(2)
	cases := []struct {
		name string
		spec Spec
	}{
		{"lin", Spec{Kind: KindLin}},
		{"lin-ref", Spec{Kind: KindLin, Exponents: ReferenceExponents()}},
		{"umnn", Spec{Kind: KindUMNN}},
		{"umnn-2layers", Spec{Kind: KindUMNN, Hidden: []int{7, 5}, QuadNodes: 20}},
		{"dplp", Spec{Kind: KindDPLP}},
		{"dplp-ref-2layers", Spec{Kind: KindDPLP, Exponents: ReferenceExponents(), Hidden: []int{6, 4}, QuadNodes: 16}},
	}
	for _, c := range cases {
		tr, err := New(c.spec, r)
		if err != nil {
			t.Fatal(err)
		}
		if c.spec.Kind != KindLin {
			randomize(tr, r, 0.3)
		} else {
			randomize(tr, r, 30)
		}
		fdCheck(t, c.name, tr, xs, 2e-6)
		sc := &Scaled{T: tr.Clone(), S: 0.7}
		fdCheck(t, c.name+"-scaled", sc, xs, 2e-6)
		if got, want := sc.Eval(0.4), math.Exp(0.7)*tr.Eval(0.4); math.Abs(got-want) > 1e-12*math.Abs(want) {
			t.Fatalf("%s: scaled eval %v want %v", c.name, got, want)
		}
	}
}

func TestFastPathEqualsGeneric(t *testing.T) {
	r := rng(3)
	for trial := 0; trial < 50; trial++ {
		H := 1 + r.IntN(25)
		u, err := NewUMNN([]int{H}, 2+r.IntN(60), 1+10*r.Float64(), r)
		if err != nil {
			t.Fatal(err)
		}
		randomize(u, r, 0.5)
		if trial%5 == 0 { // exercise w_k == 0 units
			u.params[0] = 0
		}
		for _, y := range []float64{0, 1e-7, 0.3, 1, 5 * r.Float64(), 20} {
			g1 := make([]float64, u.NumParams())
			g2 := make([]float64, u.NumParams())
			F1, Fy1 := u.fast(y, 1.3, g1, true)
			F2, Fy2 := u.generic(y, 1.3, g2, true)
			if math.Abs(F1-F2) > 1e-12*math.Max(1, math.Abs(F2)) || math.Abs(Fy1-Fy2) > 1e-11*math.Max(1, math.Abs(Fy2)) {
				t.Fatalf("trial %d y=%v: fast (%v, %v) generic (%v, %v)", trial, y, F1, Fy1, F2, Fy2)
			}
			for i := range g1 {
				if math.Abs(g1[i]-g2[i]) > 1e-11*math.Max(1, math.Abs(g2[i])) {
					t.Fatalf("trial %d y=%v param %d: fast %v generic %v", trial, y, i, g1[i], g2[i])
				}
			}
		}
	}
}

func TestUMNNIsTheIntegralOfItsIntegrand(t *testing.T) {
	r := rng(4)
	u, _ := NewUMNN([]int{20}, 50, 1, r)
	randomize(u, r, 1)
	for _, y := range []float64{0.1, 0.5, 1} {
		// composite Simpson with many panels as the reference
		const n = 20000
		h := y / n
		s := u.Integrand(0) + u.Integrand(y)
		for i := 1; i < n; i++ {
			c := 2.0
			if i%2 == 1 {
				c = 4
			}
			s += c * u.Integrand(float64(i)*h)
		}
		ref := s * h / 3
		// ReLU kinks limit Clenshaw-Curtis to algebraic convergence.
		if got := u.Eval(y); relErr(got, ref) > 1e-3 {
			t.Errorf("y=%v: quadrature %v, Simpson %v", y, got, ref)
		}
		// dF/dy agrees with the Leibniz value g(y) up to quadrature error.
		if d, g := u.Deriv(y), u.Integrand(y); relErr(d, g) > 5e-2 {
			t.Errorf("y=%v: dF/dy %v, g(y) %v", y, d, g)
		}
	}
}

func TestRandomInitDoesNotTieUnits(t *testing.T) {
	u, _ := NewUMNN([]int{20}, 50, 1, rng(5))
	w := u.params[:20]
	seen := map[float64]bool{}
	for _, x := range w {
		if seen[x] {
			t.Fatal("tied first-layer weights")
		}
		seen[x] = true
	}
	if g := u.Integrand(0.3); !(g > 0) {
		t.Errorf("integrand %v not positive", g)
	}
}

func TestMonotoneAndPositiveIntegrand(t *testing.T) {
	r := rng(6)
	for _, k := range []Kind{KindDPLP, KindLin, KindUMNN} {
		tr, err := New(Spec{Kind: k}, r)
		if err != nil {
			t.Fatal(err)
		}
		randomize(tr, r, 0.5)
		prev := tr.Eval(0)
		for i := 1; i <= 2000; i++ {
			v := tr.Eval(float64(i) / 2000)
			if v < prev-1e-12*math.Abs(prev) {
				t.Fatalf("%s decreases at %v: %v < %v", k, float64(i)/2000, v, prev)
			}
			prev = v
		}
		if tr.Eval(-3) != tr.Eval(0) || tr.Eval(7) != tr.Eval(1) {
			t.Errorf("%s: not clamped outside [0,1]", k)
		}
		if tr.Deriv(-1) != 0 || tr.Deriv(2) != 0 {
			t.Errorf("%s: derivative outside [0,1] not 0", k)
		}
	}
}

func TestCloneIsIndependent(t *testing.T) {
	r := rng(7)
	for _, k := range []Kind{KindDPLP, KindLin, KindUMNN} {
		a, _ := New(Spec{Kind: k}, r)
		b := a.Clone()
		before := b.Eval(0.4)
		randomize(a, r, 1)
		if b.Eval(0.4) != before || slices.Equal(a.Params(), b.Params()) {
			t.Errorf("%s: clone shares state", k)
		}
		if b.Kind() != k {
			t.Errorf("clone kind %s", b.Kind())
		}
	}
}

func TestConstructorErrors(t *testing.T) {
	r := rng(8)
	bad := []Spec{
		{Kind: "nope"},
		{Kind: KindLin, Exponents: []float64{1, -1}},
		{Kind: KindLin, Exponents: []float64{}},
		{Kind: KindLin, Tau: -1},
		{Kind: KindUMNN, Hidden: []int{0}},
		{Kind: KindUMNN, Hidden: []int{}},
		{Kind: KindDPLP, QuadNodes: 1},
	}
	for _, s := range bad {
		if _, err := New(s, r); err == nil {
			t.Errorf("%+v accepted", s)
		}
	}
	if _, err := New(Spec{Kind: KindUMNN}, nil); err == nil {
		t.Error("nil rand accepted")
	}
	tr, _ := New(Spec{Kind: KindDPLP}, r)
	if err := tr.SetParams(make([]float64, 3)); err == nil {
		t.Error("wrong length accepted")
	}
	p := tr.Params()
	p[5] = math.NaN()
	if err := tr.SetParams(p); err == nil {
		t.Error("NaN accepted")
	}
	if tr.NumParams() != 170+61 {
		t.Errorf("dplp has %d params", tr.NumParams())
	}
}
