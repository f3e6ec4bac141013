package refdplp

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// The authors' rule with 50 steps integrates smooth functions on [0, 2.7]
// to float precision (reference-implementation §4.3), on either side of 0.
func TestQuadRule(t *testing.T) {
	q := newQuadRule(50)
	for _, c := range []struct {
		name       string
		g          func(float64) float64
		integral   func(a, b float64) float64 // exact
		x0, x, tol float64
	}{
		{"x^2", func(x float64) float64 { return x * x }, func(a, b float64) float64 { return (b*b*b - a*a*a) / 3 }, 0, 2.7, 1e-12},
		{"e^x", math.Exp, func(a, b float64) float64 { return math.Exp(b) - math.Exp(a) }, 0, 2.7, 1e-12},
		{"20x+1", func(x float64) float64 { return 20*x + 1 }, func(a, b float64) float64 { return 10*(b*b-a*a) + b - a }, 0, 2.7, 1e-12},
		{"20x+1 backwards", func(x float64) float64 { return 20*x + 1 }, func(a, b float64) float64 { return 10*(b*b-a*a) + b - a }, 0, -1.5, 1e-12},
		{"e^x shifted", math.Exp, func(a, b float64) float64 { return math.Exp(b) - math.Exp(a) }, -1, 3, 1e-12},
		{"cos", math.Cos, func(a, b float64) float64 { return math.Sin(b) - math.Sin(a) }, 0, 10, 1e-10},
	} {
		got := q.integrate(c.g, c.x0, c.x)
		want := c.integral(c.x0, c.x)
		if math.Abs(got-want) > c.tol*math.Max(1, math.Abs(want)) {
			t.Errorf("%s on [%v, %v]: %.15g, want %.15g", c.name, c.x0, c.x, got, want)
		}
	}
	// The weights the reference analysis checked.
	var sum float64
	for _, w := range q.w {
		sum += w
	}
	for _, c := range []struct {
		name      string
		got, want float64
		tol       float64
	}{
		{"sum w", sum, 2, 1e-12}, {"w_0", q.w[0], 3.92e-4, 1e-6}, {"w_50", q.w[50], 3.92e-4, 1e-6}, {"w_25", q.w[25], 0.06285, 1e-5},
		{"first node", q.pos[0], 1, 0}, {"last node", q.pos[50], 0, 1e-15},
	} {
		if math.Abs(c.got-c.want) > c.tol {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// hinge agrees with the brute-force sum over pairs, values and gradients.
func TestHinge(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var sc hingeScratch
	for trial := range 50 {
		np, nn := 1+r.IntN(6), 1+r.IntN(9)
		yp, yn := make([]float64, np), make([]float64, nn)
		for i := range yp {
			yp[i] = math.Round(r.NormFloat64()*4) / 4 // ties and exact margins included
		}
		for i := range yn {
			yn[i] = math.Round(r.NormFloat64()*4) / 4
		}
		cp, cn := make([]float64, np), make([]float64, nn)
		loss := hinge(yp, yn, 0.1, cp, cn, &sc)
		var want float64
		wp, wn := make([]float64, np), make([]float64, nn)
		for i, a := range yp {
			for k, b := range yn {
				if d := 0.1 + b - a; d > 0 {
					want += d
					wp[i]--
					wn[k]++
				}
			}
		}
		if math.Abs(loss-want) > 1e-9 {
			t.Fatalf("trial %d: loss %v, want %v", trial, loss, want)
		}
		for i := range wp {
			if cp[i] != wp[i] {
				t.Fatalf("trial %d: dL/dyp %v, want %v", trial, cp, wp)
			}
		}
		for k := range wn {
			if cn[k] != wn[k] {
				t.Fatalf("trial %d: dL/dyn %v, want %v", trial, cn, wn)
			}
		}
	}
}

// The DPLP-Lin loss gradient (beta and b) matches central finite
// differences.
func TestLinGradient(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var qs []*linQuery
	for range 3 {
		q := &linQuery{nPos: 2 + r.IntN(3), nNeg: 3 + r.IntN(5)}
		q.x = make([]float32, (q.nPos+q.nNeg)*NumFeatures)
		for i := range q.x {
			q.x[i] = float32(r.Float64() * 3)
		}
		qs = append(qs, q)
	}
	m := NewLin()
	for j := range m.Beta {
		m.Beta[j] += r.NormFloat64() * 30
	}
	m.B = 0.3
	var sc hingeScratch
	w := m.Weights(nil)
	grad := make([]float64, NumFeatures+1)
	linLoss(m, w, qs, 0.1, grad, &sc)
	loss := func() float64 { return linLoss(m, m.Weights(nil), qs, 0.1, nil, &sc) }
	const h = 1e-4
	check := func(name string, p *float64, g float64) {
		old := *p
		*p = old + h
		up := loss()
		*p = old - h
		down := loss()
		*p = old
		fd := (up - down) / (2 * h)
		if math.Abs(fd-g) > 1e-4*math.Max(1, math.Abs(fd)) {
			t.Errorf("%s: gradient %v, finite difference %v", name, g, fd)
		}
	}
	for _, j := range []int{0, 1, 17, 85, 169} {
		check("beta", &m.Beta[j], grad[j])
	}
	check("b", &m.B, grad[NumFeatures])
}

// The UMNN's parameter gradient matches central finite differences of f,
// for untied units (general case) and for the tied init.
func TestMNNGradient(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, tied := range []bool{false, true} {
		m := NewMNN(7, 50)
		if !tied {
			for k := range m.W1 {
				m.W1[k] = r.NormFloat64()
				m.B1[k] = r.NormFloat64() * 0.5
				m.W2[k] = r.NormFloat64()
			}
			m.B2, m.Offset, m.LogScale = -0.4, 0.2, 0.3
		} else {
			// Tied units, away from the kink of relu at the node t = 0
			// (where relu'(0) = 0, as in torch, and differences are
			// one-sided).
			for k := range m.B1 {
				m.B1[k] = 0.2
			}
		}
		var g groups
		m.groups(&g)
		if tied != (len(g.rep) == 1) {
			t.Fatalf("tied %v: %d groups", tied, len(g.rep))
		}
		for _, x := range []float64{0.7, 2.3, -0.8} {
			grad := make([]float64, m.numParams())
			m.addGrad(&g, x, 1.5, grad, make([]float64, 3*len(m.W1)))
			ps := m.params(make([]float64, 3))
			flat := 0
			for gi, p := range ps {
				for i := range p {
					old := p[i]
					const h = 1e-6
					p[i] = old + h
					if gi == 3 {
						m.setScalars(p)
					}
					up := 1.5 * m.F(x)
					p[i] = old - h
					if gi == 3 {
						m.setScalars(p)
					}
					down := 1.5 * m.F(x)
					p[i] = old
					if gi == 3 {
						m.setScalars(p)
					}
					fd := (up - down) / (2 * h)
					if math.Abs(fd-grad[flat]) > 1e-5*math.Max(1, math.Abs(fd)) {
						t.Errorf("tied %v, x %v, param %d/%d: gradient %v, finite difference %v", tied, x, gi, i, grad[flat], fd)
					}
					flat++
				}
			}
		}
	}
}

// At the authors' init f(x) = 10 x^2 + x for x >= 0 and x below 0, and the
// tied 20 units give the same f as 20 separately evaluated units.
func TestMNNInit(t *testing.T) {
	m := NewMNN(20, 50)
	for _, x := range []float64{0, 0.3, 1, 2.5} {
		if got, want := m.F(x), 10*x*x+x; math.Abs(got-want) > 1e-9*math.Max(1, want) {
			t.Errorf("f(%v) = %v, want %v", x, got, want)
		}
	}
	if got := m.F(-0.7); math.Abs(got+0.7) > 1e-12 {
		t.Errorf("f(-0.7) = %v, want -0.7", got)
	}
	// Untie one unit by a hair: f moves continuously (no grouping artefact).
	m.B1[3] = 1e-12
	if got := m.F(1); math.Abs(got-11) > 1e-9 {
		t.Errorf("f(1) with one unit untied = %v, want ~11", got)
	}
}

// The DPLP-Lin training loop lowers the loss on separable, noise-free data
// and its snapshots are one epoch apart.
func TestTrainLinNoiseFree(t *testing.T) {
	data := synthData(40, false, true)
	cfg := DefaultConfig(1)
	cfg.LinEpochs = 6
	res, err := TrainLin(context.Background(), data, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Loss) != 6 || !(res.Loss[5] < res.Loss[0]) {
		t.Fatalf("losses %v: not decreasing", res.Loss)
	}
	if res.Eval.Beta[5] == res.Last.Beta[5] {
		t.Fatal("the evaluated snapshot equals the last state")
	}
}

// A cancelled context stops every training before its first epoch ends,
// with the context's error and no model.
func TestTrainingCancelled(t *testing.T) {
	data := synthData(40, true, true)
	cfg := DefaultConfig(1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	lin, err := TrainLin(ctx, data, cfg)
	if !errors.Is(err, context.Canceled) || lin != nil {
		t.Fatalf("TrainLin: %v %v, want context.Canceled and no result", lin, err)
	}
	done, err := TrainLin(context.Background(), data, DefaultConfig(1))
	if err != nil {
		t.Fatal(err)
	}
	for name, train := range map[string]func() (*MNNResult, error){
		"dplp": func() (*MNNResult, error) { return TrainDPLP(ctx, data, done.Last, cfg) },
		"umnn": func() (*MNNResult, error) { return TrainUMNN(ctx, data, cfg) },
	} {
		if res, err := train(); !errors.Is(err, context.Canceled) || res != nil {
			t.Fatalf("%s: %v %v, want context.Canceled and no result", name, res, err)
		}
	}
	if _, err := Evaluate(ctx, Lin, evalOf(data, 0.1), Models{Lin: done}, 5, cfg); !errors.Is(err, context.Canceled) {
		t.Fatalf("Evaluate: %v, want context.Canceled", err)
	}
}

// synthData: each query has positives with scores in (0.5, 1) and negatives
// in [0, 0.4) (overlap: (0.3, 1) and [0, 0.6)), a quarter of them 0.
func synthData(n int, noisy, overlap bool) []TrainQuery {
	r := rand.New(rand.NewPCG(7, 8))
	lo, hi := 0.5, 0.4
	if overlap {
		lo, hi = 0.3, 0.6
	}
	out := make([]TrainQuery, n)
	for i := range out {
		q := TrainQuery{Q: int32(i), Noisy: noisy}
		for j := range 3 {
			q.Pos = append(q.Pos, lo+(1-lo)*r.Float64())
			q.PosID = append(q.PosID, int32(1000+j))
			q.PosProt = append(q.PosProt, j == 2)
		}
		for j := range 12 {
			s := r.Float64() * hi
			if j%4 == 0 {
				s = 0
			}
			q.Neg = append(q.Neg, s)
			q.NegID = append(q.NegID, int32(2000+j))
		}
		out[i] = q
	}
	return out
}

func evalOf(data []TrainQuery, delta float64) []EvalQuery {
	out := make([]EvalQuery, len(data))
	for i, d := range data {
		e := EvalQuery{Q: d.Q, Noisy: d.Noisy, NPos: len(d.Pos), Delta: delta, XMax: 2}
		e.S = append(append(e.S, d.Pos...), d.Neg...)
		e.IDs = append(append(e.IDs, d.PosID...), d.NegID...)
		for range d.Pos {
			e.Label = append(e.Label, true)
		}
		for range d.Neg {
			e.Label = append(e.Label, false)
		}
		out[i] = e
	}
	return out
}

// Without noise every method ranks the positives first (AUC@K = 1); the
// noisy DPLP-Lin release is worse at a small eps_p, and the same seed
// reproduces it exactly.
func TestEvaluate(t *testing.T) {
	ctx := context.Background()
	cfg := DefaultConfig(0.1)
	cfg.LinEpochs, cfg.DPLPEpochs = 3, 2
	clean := synthData(30, false, false)
	lin, err := TrainLin(ctx, clean, cfg)
	if err != nil {
		t.Fatal(err)
	}
	f, err := TrainDPLP(ctx, clean, lin.Last, cfg)
	if err != nil {
		t.Fatal(err)
	}
	u, err := TrainUMNN(ctx, clean, cfg)
	if err != nil {
		t.Fatal(err)
	}
	mod := Models{Lin: lin, F: f}
	for _, m := range []Method{Lin, DPLP} {
		r, err := Evaluate(context.Background(), m, evalOf(clean, 0.1), mod, 5, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r.Mean.AUC != 1 || r.ROCAUC != 1 || r.ZeroNoise != 30 || len(r.EpsEff) != 0 || !math.IsNaN(r.EpsEffMedian) {
			t.Fatalf("%s without noise: %+v", m, r)
		}
	}
	if r, _ := Evaluate(context.Background(), UMNN, evalOf(clean, 0.1), Models{F: u}, 5, cfg); r.Mean.AUC != 1 {
		t.Fatalf("dplp-umnn without noise: AUC %v", r.Mean.AUC)
	}
	noisy := evalOf(synthData(30, true, false), 0.1)
	a, err := Evaluate(context.Background(), Lin, noisy, mod, 5, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Evaluate(context.Background(), Lin, noisy, mod, 5, cfg)
	if a.Mean != b.Mean || a.EpsEffMax != b.EpsEffMax {
		t.Fatal("same seed, different release")
	}
	if !(a.Mean.AUC < 1) || a.ZeroNoise != 0 || len(a.EpsEff) != 30 {
		t.Fatalf("noisy DPLP-Lin: %+v", a)
	}
	if _, err := Evaluate(context.Background(), DPLP, noisy, Models{Lin: lin}, 5, cfg); err == nil {
		t.Fatal("DPLP evaluated without a UMNN")
	}
}

// The audit's eps_eff for the DPLP-UMNN variant at the authors' init
// (f(x) = 10 x^2 + x, f(1) = 11): one candidate at s = 0.5 with Delta 0.1
// gives Delta_f = f(0.6) - f(0.5) = 1.2 and b = 11 / e, so eps_eff =
// 2 * 1.2 * e / 11 = 1.2 eps_p / 11.
func TestAuditUMNN(t *testing.T) {
	cfg := DefaultConfig(0.4)
	q := []EvalQuery{{Q: 1, Noisy: true, S: []float64{0.5}, IDs: []int32{2}, Label: []bool{true}, NPos: 1, Delta: 0.1, XMax: 1}}
	r, err := Evaluate(context.Background(), UMNN, q, Models{F: &MNNResult{F: NewMNN(20, 50)}}, 1, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := 1.2 * 0.4 / 11
	if math.Abs(r.EpsEffMedian-want) > 1e-9 || r.EpsEffMax != r.EpsEffMedian || math.Abs(r.Multiplier-11) > 1e-9 {
		t.Fatalf("eps_eff %v (max %v), multiplier %v; want %v, 11", r.EpsEffMedian, r.EpsEffMax, r.Multiplier, want)
	}
	// At the top of the range the change is measured downwards only:
	// s = 1 = XMax gives f(1) - f(0.9) = 10 * 0.19 + 0.1 = 2.
	q[0].S[0] = 1
	r, _ = Evaluate(context.Background(), UMNN, q, Models{F: &MNNResult{F: NewMNN(20, 50)}}, 1, cfg)
	if want := 2 * 0.4 / 11; math.Abs(r.EpsEffMedian-want) > 1e-9 {
		t.Fatalf("eps_eff at XMax %v, want %v", r.EpsEffMedian, want)
	}
}

// DPLP's noise multiplier is the sum of the raw Lin parameters: -16900 at
// the authors' init; the audit divides by its absolute value.
func TestAuditDPLPMultiplier(t *testing.T) {
	lin := NewLin()
	if s := lin.BetaSum(); s != -16900 {
		t.Fatalf("sum beta at init %v, want -16900", s)
	}
	cfg := DefaultConfig(0.1)
	f := NewMNN(20, 50)
	q := []EvalQuery{{Q: 1, Noisy: true, S: []float64{0.5, 0}, IDs: []int32{2, 3}, Label: []bool{true, false}, NPos: 1, Delta: 0.2, XMax: 1}}
	r, err := Evaluate(context.Background(), DPLP, q, Models{Lin: &LinResult{Eval: lin, Last: lin}, F: &MNNResult{F: f}}, 2, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Delta_f: the largest change of f(nu(s)) over s in {0, 0.5} moved by 0.2.
	d := 0.0
	for _, s := range []float64{0, 0.5} {
		d = max(d, f.F(lin.Nu(s+0.2))-f.F(lin.Nu(s)), f.F(lin.Nu(s))-f.F(lin.Nu(max(s-0.2, 0))))
	}
	if want := 2 * d / (16900 * 2 / 0.1); r.Multiplier != -16900 || math.Abs(r.EpsEffMedian-want) > 1e-12*want {
		t.Fatalf("multiplier %v, eps_eff %v; want -16900, %v", r.Multiplier, r.EpsEffMedian, want)
	}
}

// The noise stream draws standard Gumbels (mean the Euler-Mascheroni
// constant, variance pi^2/6, the Gumbel CDF exp(-exp(-x)) within a
// Kolmogorov-Smirnov bound), column c is the same draw however it is
// reached, and pairs and tables have their own draws.
func TestNoiseStream(t *testing.T) {
	ns := newNoiseStream()
	const n = 200000
	xs := make([]float64, 0, n)
	for i := range n / 10 {
		ns.pair(1, tableTrain, int32(i), int32(i+1))
		for range 10 {
			xs = append(xs, ns.next())
		}
	}
	var mean, sq float64
	for _, x := range xs {
		mean += x
	}
	mean /= n
	for _, x := range xs {
		sq += (x - mean) * (x - mean)
	}
	if v := sq / n; math.Abs(mean-0.5772156649) > 0.01 || math.Abs(v-math.Pi*math.Pi/6) > 0.03 {
		t.Fatalf("mean %v, variance %v", mean, v)
	}
	slices.Sort(xs)
	var ks float64
	for i, x := range xs {
		f := math.Exp(-math.Exp(-x))
		ks = max(ks, math.Abs(f-float64(i)/n), math.Abs(f-float64(i+1)/n))
	}
	if ks > 1.63/math.Sqrt(n) { // 1% level
		t.Fatalf("Kolmogorov-Smirnov distance %v", ks)
	}
	ns.pair(7, tableEval, 3, 4)
	var row []float64
	for range 80 {
		row = append(row, ns.next())
	}
	for _, col := range []int{FirstFeature, colDPLPEval, colUMNN} {
		ns.pair(7, tableEval, 3, 4)
		if got := ns.column(col); got != row[col-FirstFeature] {
			t.Fatalf("column %d: %v, want %v", col, got, row[col-FirstFeature])
		}
	}
	for _, other := range [][4]uint64{{8, tableEval, 3, 4}, {7, tableTrain, 3, 4}, {7, tableEval, 4, 3}} {
		ns.pair(other[0], other[1], int32(other[2]), int32(other[3]))
		if ns.next() == row[0] {
			t.Fatalf("pair %v repeats the draw of (7, eval, 3, 4)", other)
		}
	}
}

// A step large enough to split its rows over goroutines gives the sum of
// its queries' serial losses and gradients.
func TestLinLossParallel(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	r := rand.New(rand.NewPCG(9, 10))
	var qs []*linQuery
	for range 3 {
		q := &linQuery{nPos: 40 + r.IntN(20), nNeg: 3000}
		q.x = make([]float32, (q.nPos+q.nNeg)*NumFeatures)
		for i := range q.x {
			q.x[i] = float32(r.NormFloat64())
		}
		qs = append(qs, q)
	}
	m := NewLin()
	w := m.Weights(nil)
	var sc hingeScratch
	grad := make([]float64, NumFeatures+1)
	loss := linLoss(m, w, qs, 0.1, grad, &sc)
	var want float64
	wantGrad := make([]float64, NumFeatures+1)
	for _, q := range qs {
		g := make([]float64, NumFeatures+1)
		want += linLoss(m, w, []*linQuery{q}, 0.1, g, &sc)
		for j := range g {
			wantGrad[j] += g[j]
		}
	}
	if math.Abs(loss-want) > 1e-9*math.Abs(want) || want == 0 {
		t.Fatalf("loss %v, want %v", loss, want)
	}
	for j := range grad {
		if math.Abs(grad[j]-wantGrad[j]) > 1e-9*math.Max(1, math.Abs(wantGrad[j])) {
			t.Fatalf("gradient %d: %v, want %v", j, grad[j], wantGrad[j])
		}
	}
}
