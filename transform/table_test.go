package transform

import (
	"fmt"
	"math"
	"sync"
	"testing"

	"pgregory.net/rapid"
)

// wiggle is a deliberately non-monotone Transform stub.
type wiggle struct{ Transform }

func (wiggle) Eval(x float64) float64 { return x + 0.1*math.Sin(40*x) }

func TestCompileEnforcesMonotonicity(t *testing.T) {
	tab, err := Compile(wiggle{}, 1001)
	if err != nil {
		t.Fatal(err)
	}
	v := tab.Values()
	for i := 1; i < len(v); i++ {
		if v[i] < v[i-1] {
			t.Fatalf("decreasing at %d", i)
		}
		want := math.Max(v[i-1], wiggle{}.Eval(float64(i)/1000))
		if v[i] != want {
			t.Fatalf("point %d: %v, want running max %v", i, v[i], want)
		}
	}
	if _, err := Compile(wiggle{}, 1); err == nil {
		t.Error("grid 1 accepted")
	}
}

func TestCompileMatchesTransform(t *testing.T) {
	tr, _ := New(Spec{Kind: KindDPLP}, rng(9))
	tab, err := Compile(tr, DefaultGrid)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i <= 1000; i += 37 {
		x := float64(i) / 1000
		if relErr(tab.Eval(x), tr.Eval(x)) > 1e-9 {
			t.Errorf("x=%v: table %v transform %v", x, tab.Eval(x), tr.Eval(x))
		}
	}
}

func TestTableEval(t *testing.T) {
	tab, err := NewTable([]float64{0, 1, 1, 4})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ x, want float64 }{
		{-1, 0}, {0, 0}, {1.0 / 6, 0.5}, {1.0 / 3, 1}, {0.5, 1}, {5.0 / 6, 2.5}, {1, 4}, {9, 4},
	}
	for _, c := range cases {
		if got := tab.Eval(c.x); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("Eval(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	if !math.IsNaN(tab.Eval(math.NaN())) {
		t.Error("NaN not propagated")
	}
}

func TestNewTableRejectsBadValues(t *testing.T) {
	for _, v := range [][]float64{nil, {1}, {0, 2, 1}, {0, math.NaN()}, {0, math.Inf(1)}} {
		if _, err := NewTable(v); err == nil {
			t.Errorf("%v accepted", v)
		}
	}
}

func TestDeltaKnownValues(t *testing.T) {
	tab, _ := NewTable([]float64{0, 0, 1, 1}) // ramp of slope 3 on [1/3, 2/3]
	cases := []struct{ dx, want float64 }{
		{0, 0}, {0.1, 0.3}, {1.0 / 3, 1}, {0.5, 1}, {1, 1}, {3, 1},
	}
	for _, c := range cases {
		if got := tab.Delta(c.dx); math.Abs(got-c.want) > 1e-12 || got < c.want-1e-15 {
			t.Errorf("Delta(%v) = %v, want %v", c.dx, got, c.want)
		}
	}
	if tab.Delta(0) != 0 {
		t.Error("Delta(0) must be exactly 0")
	}
	for _, dx := range []float64{-0.1, math.NaN()} {
		if !math.IsInf(tab.Delta(dx), 1) {
			t.Errorf("Delta(%v) not +Inf", dx)
		}
	}
	// Convex table: the sup sits at the top end, x = 1 - dx.
	sq, _ := NewTable([]float64{0, 1, 4, 9, 16})
	if got, want := sq.Delta(0.3), 16-sq.Eval(0.7); math.Abs(got-want) > 1e-12 {
		t.Errorf("convex Delta %v, want %v", got, want)
	}
}

// TestDeltaIsExactSupremum checks Delta against a brute force over a very
// fine grid of x: never exceeded, matched up to the grid's resolution, and
// attained at the returned maximiser.
func TestDeltaIsExactSupremum(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := rapid.IntRange(2, 40).Draw(rt, "m")
		v := make([]float64, m)
		for i := 1; i < m; i++ {
			step := 0.0
			switch rapid.IntRange(0, 3).Draw(rt, "kind") {
			case 0: // flat
			case 1:
				step = rapid.Float64Range(0, 1).Draw(rt, "small")
			default:
				step = rapid.Float64Range(0, 100).Draw(rt, "big")
			}
			v[i] = v[i-1] + step
		}
		offset := rapid.Float64Range(-1000, 1000).Draw(rt, "offset")
		for i := range v {
			v[i] += offset
		}
		tab, err := NewTable(v)
		if err != nil {
			rt.Fatal(err)
		}
		dx := rapid.Float64Range(1e-6, 1.2).Draw(rt, "dx")
		delta, arg := tab.delta(dx)
		const fine = 200000
		var bf, maxSlope float64
		bf = math.Inf(-1)
		for i := 0; i <= fine; i++ {
			x := float64(i) / fine
			d := tab.Eval(math.Min(x+dx, 1)) - tab.Eval(x)
			if d > delta {
				rt.Fatalf("x=%v: difference %v exceeds Delta %v", x, d, delta)
			}
			bf = math.Max(bf, d)
		}
		for i := 1; i < m; i++ {
			maxSlope = math.Max(maxSlope, (v[i]-v[i-1])*float64(m-1))
		}
		scale := math.Max(1, math.Abs(v[m-1])+math.Abs(v[0]))
		if delta-bf > 2*maxSlope/fine+1e-9*scale {
			rt.Fatalf("Delta %v above brute force %v by more than grid resolution", delta, bf)
		}
		att := tab.Eval(math.Min(arg+dx, 1)) - tab.Eval(arg)
		if math.Abs(att-delta) > 1e-9*scale {
			rt.Fatalf("Delta %v not attained at x=%v (%v)", delta, arg, att)
		}
		if dx >= 1 && math.Abs(delta-(v[m-1]-v[0])) > 1e-9*scale {
			rt.Fatalf("dx>=1: Delta %v, want T(1)-T(0) = %v", delta, v[m-1]-v[0])
		}
	})
}

// TestAppendRatiosMatchesEval: the batch evaluation gives bit for bit the
// values of Eval(s/den), for points inside, at and outside [0, 1], NaN
// included, on tables of any size.
func TestAppendRatiosMatchesEval(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := rapid.IntRange(2, 200).Draw(t, "m")
		vals := make([]float64, m)
		acc := rapid.Float64Range(-5, 5).Draw(t, "v0")
		for i := range vals {
			acc += rapid.Float64Range(0, 3).Draw(t, "step")
			vals[i] = acc
		}
		tab, err := NewTable(vals)
		if err != nil {
			t.Fatal(err)
		}
		s := rapid.SliceOfN(rapid.OneOf(rapid.Float64Range(-1, 12), rapid.SampledFrom([]float64{0, 10, math.NaN(), math.Inf(1), math.Inf(-1), 9.999999999999998})), 0, 50).Draw(t, "s")
		den := rapid.OneOf(rapid.Float64Range(1e-3, 20), rapid.Just(10.0)).Draw(t, "den")
		idx := make([]int, len(s))
		for i := range idx {
			idx[i] = len(s) - 1 - i // any order
		}
		got := tab.AppendRatios([]float64{-7}, s, idx, den)
		if len(got) != len(s)+1 || got[0] != -7 {
			t.Fatalf("AppendRatios did not append: %v", got)
		}
		for k, i := range idx {
			want := tab.Eval(s[i] / den)
			if g := got[k+1]; math.Float64bits(g) != math.Float64bits(want) && !(math.IsNaN(g) && math.IsNaN(want)) {
				t.Fatalf("s=%v den=%v: AppendRatios %v, Eval %v", s[i], den, g, want)
			}
		}
	})
}

// TestDeltaMemo: Delta through the memo returns bit for bit what delta
// computes, for dx values that repeat, that share a memo slot (found by
// search), and for the special cases, from several goroutines at once.
func TestDeltaMemo(t *testing.T) {
	vals := make([]float64, 300)
	for i := range vals {
		vals[i] = math.Sqrt(float64(i)) + 0.01*float64(i) + 0.3*float64(i/7) // uneven slopes
	}
	tab, err := NewTable(vals)
	if err != nil {
		t.Fatal(err)
	}
	// dx values: special cases, a few that recur, and pairs that collide.
	dxs := []float64{0, math.Copysign(0, -1), -1, math.NaN(), 1, 2, math.Inf(1), 0.5, 0.25, 1.0 / 3}
	bySlot := map[uint64]float64{}
	for i := 1; len(dxs) < 200 && i < 1_000_000; i++ {
		dx := float64(i) / 1_000_003
		s := deltaSlot(math.Float64bits(dx))
		if other, ok := bySlot[s]; ok {
			dxs = append(dxs, other, dx) // two keys for one slot
			delete(bySlot, s)
			continue
		}
		bySlot[s] = dx
	}
	want := make([]uint64, len(dxs))
	for i, dx := range dxs {
		d, _ := tab.delta(dx)
		want[i] = math.Float64bits(d)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for round := 0; round < 50; round++ {
				for k := range dxs {
					i := (k*(g+1) + round) % len(dxs) // interleave the colliding keys
					if got := math.Float64bits(tab.Delta(dxs[i])); got != want[i] {
						errs <- fmt.Sprintf("Delta(%v) = %v, delta gives %v", dxs[i], math.Float64frombits(got), math.Float64frombits(want[i]))
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

// TestRatioBounds: every score in [sLo, sHi] has Ratio within
// RatioBounds (random monotone tables with tiny, huge and zero steps,
// negative values, scores around the grid points), and Ratio is what
// AppendRatios gives.
func TestRatioBounds(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := rapid.IntRange(2, 40).Draw(rt, "m")
		scale := math.Ldexp(1, rapid.IntRange(-60, 60).Draw(rt, "exp"))
		v := make([]float64, m)
		v[0] = rapid.Float64Range(-1000, 1000).Draw(rt, "offset") * scale
		for i := 1; i < m; i++ {
			var step float64
			switch rapid.IntRange(0, 3).Draw(rt, "kind") {
			case 1:
				step = rapid.Float64Range(0, 1e-13).Draw(rt, "tiny") * scale
			case 2:
				step = rapid.Float64Range(0, 100).Draw(rt, "big") * scale
			case 3:
				step = rapid.Float64Range(0, 1).Draw(rt, "small") * scale
			}
			v[i] = v[i-1] + step
		}
		tb, err := NewTable(v)
		if err != nil {
			rt.Skip(err)
		}
		den := rapid.Float64Range(1e-3, 1e3).Draw(rt, "den")
		a := rapid.Float64Range(-0.1, 1.1).Draw(rt, "a") * den
		b := rapid.Float64Range(-0.1, 1.1).Draw(rt, "b") * den
		sLo, sHi := min(a, b), max(a, b)
		lo, hi := tb.RatioBounds(sLo, sHi, den)
		ss := []float64{sLo, sHi}
		for range 50 {
			ss = append(ss, sLo+rapid.Float64Range(0, 1).Draw(rt, "t")*(sHi-sLo))
		}
		// Scores next to the grid points, where rounding crosses segments.
		for i := range m {
			x := float64(i) / float64(m-1) * den
			for _, s := range []float64{math.Nextafter(x, math.Inf(-1)), x, math.Nextafter(x, math.Inf(1))} {
				if s >= sLo && s <= sHi {
					ss = append(ss, s)
				}
			}
		}
		got := tb.AppendRatios(nil, ss, seq(len(ss)), den)
		for i, s := range ss {
			y := tb.Ratio(s, den)
			if math.Float64bits(y) != math.Float64bits(got[i]) {
				rt.Fatalf("Ratio(%v) = %v, AppendRatios %v", s, y, got[i])
			}
			if !(lo <= y && y <= hi) {
				rt.Fatalf("Ratio(%v) = %v outside [%v, %v] for scores [%v, %v]", s, y, lo, hi, sLo, sHi)
			}
		}
	})
}

func seq(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}
