package mech

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

func TestUtilitiesBasics(t *testing.T) {
	u := &Utilities{Vals: []float64{3, 1}, Blocks: []Block{{Val: 0, Size: 2}, {Val: 5, Size: 0}, {Val: 2, Size: 1}}}
	if got := u.Len(); got != 5 {
		t.Fatalf("Len = %d, want 5", got)
	}
	want := []float64{3, 1, 0, 0, 2}
	if got := u.Materialize(nil); !slices.Equal(got, want) {
		t.Fatalf("Materialize = %v, want %v", got, want)
	}
	for i, w := range want {
		if v, ok := u.Value(i); !ok || v != w {
			t.Fatalf("Value(%d) = %v, %v", i, v, ok)
		}
	}
	if _, ok := u.Value(5); ok {
		t.Fatal("Value(5) ok")
	}
	if _, ok := u.Value(-1); ok {
		t.Fatal("Value(-1) ok")
	}
}

func TestInvalidArguments(t *testing.T) {
	good := &Utilities{Vals: []float64{1, 2}, Blocks: []Block{{0, 3}}}
	r := seeded(1)
	sp := StaircaseParams{Eps: 1, Delta: 1, Gamma: 0.5}
	type call func(u *Utilities, k int, r *rand.Rand) ([]int, error)
	mechs := map[string]call{
		"exp":       func(u *Utilities, k int, r *rand.Rand) ([]int, error) { return ExpTopK(u, k, 1, r, nil) },
		"exact":     func(u *Utilities, k int, r *rand.Rand) ([]int, error) { return ExactTopK(u, k, r, nil) },
		"laplace":   func(u *Utilities, k int, r *rand.Rand) ([]int, error) { return LaplaceTopK(u, k, 1, r, nil) },
		"peel":      func(u *Utilities, k int, r *rand.Rand) ([]int, error) { return LaplacePeel(u, k, 1, r, nil) },
		"staircase": func(u *Utilities, k int, r *rand.Rand) ([]int, error) { return StaircaseTopK(u, k, sp, r, nil) },
	}
	cases := []struct {
		name string
		u    *Utilities
		k    int
		r    *rand.Rand
	}{
		{"k0", good, 0, r},
		{"kneg", good, -3, r},
		{"nilrand", good, 1, nil},
		{"nilu", nil, 1, r},
		{"nan", &Utilities{Vals: []float64{1, math.NaN()}}, 1, r},
		{"inf", &Utilities{Vals: []float64{math.Inf(1)}}, 1, r},
		{"blocknan", &Utilities{Blocks: []Block{{math.NaN(), 2}}}, 1, r},
		{"blockinf", &Utilities{Blocks: []Block{{math.Inf(-1), 2}}}, 1, r},
		{"blockneg", &Utilities{Blocks: []Block{{1, -1}}}, 1, r},
	}
	for name, m := range mechs {
		for _, c := range cases {
			if _, err := m(c.u, c.k, c.r); !errors.Is(err, ErrInvalid) {
				t.Errorf("%s/%s: err = %v, want ErrInvalid", name, c.name, err)
			}
		}
		if _, err := m(good, 2, r); err != nil {
			t.Errorf("%s/good: %v", name, err)
		}
	}
	for _, s := range []float64{-1, math.NaN(), math.Inf(1)} {
		if _, err := ExpTopK(good, 1, s, r, nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("ExpTopK scale %v: %v", s, err)
		}
		if _, err := LaplaceTopK(good, 1, s, r, nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("LaplaceTopK scale %v: %v", s, err)
		}
		if _, err := LaplacePeel(good, 1, s, r, nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("LaplacePeel scale %v: %v", s, err)
		}
	}
	for _, p := range []StaircaseParams{
		{Eps: 0, Delta: 1, Gamma: 0.5}, {Eps: -1, Delta: 1, Gamma: 0.5}, {Eps: math.Inf(1), Delta: 1, Gamma: 0.5},
		{Eps: 1, Delta: -1, Gamma: 0.5}, {Eps: 1, Delta: math.NaN(), Gamma: 0.5},
		{Eps: 1, Delta: 1, Gamma: -0.1}, {Eps: 1, Delta: 1, Gamma: 1.1}, {Eps: 1, Delta: 1, Gamma: math.NaN()},
	} {
		if _, err := StaircaseTopK(good, 1, p, r, nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("StaircaseTopK %+v: %v", p, err)
		}
		if _, err := SelectProbs([]float64{1, 2}, p); !errors.Is(err, ErrInvalid) {
			t.Errorf("SelectProbs %+v: %v", p, err)
		}
	}
	if _, err := NoisyTopK(good, 1, nil, r, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("NoisyTopK nil noise: %v", err)
	}
	if _, err := SelectProbs([]float64{1, math.NaN()}, Laplace{1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("SelectProbs NaN: %v", err)
	}
	if _, err := SelectProbs([]float64{1}, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("SelectProbs nil noise: %v", err)
	}
	if _, err := SelectProbs([]float64{1, 2}, Laplace{-1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("SelectProbs negative scale: %v", err)
	}
}

// allMechs runs every mechanism family at a positive and a zero noise level.
func allMechs() map[string]func(u *Utilities, k int, r *rand.Rand, dst []int) ([]int, error) {
	sp := StaircaseParams{Eps: 0.7, Delta: 1, Gamma: OptimalGamma(0.7)}
	return map[string]func(u *Utilities, k int, r *rand.Rand, dst []int) ([]int, error){
		"exp":       func(u *Utilities, k int, r *rand.Rand, d []int) ([]int, error) { return ExpTopK(u, k, 1.5, r, d) },
		"exp0":      func(u *Utilities, k int, r *rand.Rand, d []int) ([]int, error) { return ExpTopK(u, k, 0, r, d) },
		"exact":     func(u *Utilities, k int, r *rand.Rand, d []int) ([]int, error) { return ExactTopK(u, k, r, d) },
		"laplace":   func(u *Utilities, k int, r *rand.Rand, d []int) ([]int, error) { return LaplaceTopK(u, k, 1.5, r, d) },
		"laplace0":  func(u *Utilities, k int, r *rand.Rand, d []int) ([]int, error) { return LaplaceTopK(u, k, 0, r, d) },
		"peel":      func(u *Utilities, k int, r *rand.Rand, d []int) ([]int, error) { return LaplacePeel(u, k, 1.5, r, d) },
		"peel0":     func(u *Utilities, k int, r *rand.Rand, d []int) ([]int, error) { return LaplacePeel(u, k, 0, r, d) },
		"staircase": func(u *Utilities, k int, r *rand.Rand, d []int) ([]int, error) { return StaircaseTopK(u, k, sp, r, d) },
		"staircase0": func(u *Utilities, k int, r *rand.Rand, d []int) ([]int, error) {
			sp0 := sp
			sp0.Delta = 0
			return StaircaseTopK(u, k, sp0, r, d)
		},
	}
}

func TestKExceedsLenReturnsAll(t *testing.T) {
	u := &Utilities{Vals: []float64{0.3, 2, -1}, Blocks: []Block{{1, 4}, {0, 0}, {-2, 2}}}
	empty := &Utilities{}
	for name, m := range allMechs() {
		r := seeded(7)
		for range 50 {
			got, err := m(u, 100, r, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !isPerm(got, u.Len()) {
				t.Fatalf("%s: %v is not a permutation of %d candidates", name, got, u.Len())
			}
		}
		got, err := m(empty, 3, r, []int{5, 6})
		if err != nil || len(got) != 0 {
			t.Fatalf("%s on empty utilities: %v, %v", name, got, err)
		}
	}
}

// TestOutputsValid is a property test: every mechanism returns
// min(k, Len) distinct in-range picks; the zero-noise ones return the
// exact top values in non-increasing order.
func TestOutputsValid(t *testing.T) {
	mechs := allMechs()
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range mechs {
			if !yield(n) {
				return
			}
		}
	})
	rapid.Check(t, func(rt *rapid.T) {
		vals := rapid.SliceOfN(rapid.Map(rapid.IntRange(-6, 6), func(x int) float64 { return float64(x) / 2 }), 0, 12).Draw(rt, "vals")
		nb := rapid.IntRange(0, 3).Draw(rt, "nblocks")
		var blocks []Block
		for i := range nb {
			blocks = append(blocks, Block{Val: float64(rapid.IntRange(-3, 3).Draw(rt, fmt.Sprint("bv", i))),
				Size: rapid.IntRange(0, 300).Draw(rt, fmt.Sprint("bs", i))})
		}
		u := &Utilities{Vals: vals, Blocks: blocks}
		k := rapid.IntRange(1, 40).Draw(rt, "k")
		name := rapid.SampledFrom(names).Draw(rt, "mech")
		r := seeded(rapid.Uint64().Draw(rt, "seed"))
		got, err := mechs[name](u, k, r, nil)
		if err != nil {
			rt.Fatal(err)
		}
		n := u.Len()
		if len(got) != min(k, n) {
			rt.Fatalf("len %d, want %d", len(got), min(k, n))
		}
		seen := map[int]bool{}
		for _, v := range got {
			if v < 0 || v >= n || seen[v] {
				rt.Fatalf("bad pick %d in %v", v, got)
			}
			seen[v] = true
		}
		if strings0(name) {
			all := u.Materialize(nil)
			slices.Sort(all)
			slices.Reverse(all)
			for j, v := range got {
				if x, _ := u.Value(v); x != all[j] {
					rt.Fatalf("zero-noise pick %d has value %v, want %v", j, x, all[j])
				}
			}
		}
	})
}

func strings0(name string) bool { return name == "exact" || name[len(name)-1] == '0' }

type listCase struct {
	name  string
	u     *Utilities
	scale float64
}

var expCases = []listCase{
	{"distinct", &Utilities{Vals: []float64{0, 1, 2, 0.5}}, 1},
	{"ties", &Utilities{Vals: []float64{1, 1, 0, 1, -0.5}}, 0.7},
	{"blocks", &Utilities{Vals: []float64{1.5, 0.2}, Blocks: []Block{{0, 3}, {1, 2}}}, 0.8},
	{"blockOnly", &Utilities{Blocks: []Block{{0.5, 4}, {-0.5, 2}}}, 0.5},
	{"peaked", &Utilities{Vals: []float64{3, 0}, Blocks: []Block{{2.5, 3}}}, 0.4},
	{"flat", &Utilities{Vals: []float64{0.1}, Blocks: []Block{{0, 5}}}, 50},
	{"zeroScaleTies", &Utilities{Vals: []float64{1, 2, 2}, Blocks: []Block{{2, 3}, {1, 2}}}, 0},
	{"zeroScaleDistinct", &Utilities{Vals: []float64{1, 3, 2}, Blocks: []Block{{0, 3}}}, 0},
}

// materialised returns the same candidates as individuals only.
func materialised(u *Utilities) *Utilities { return &Utilities{Vals: u.Materialize(nil)} }

func TestExpTopKMatchesExactListProbabilities(t *testing.T) {
	draws := 60000
	if testing.Short() {
		draws = 15000
	}
	checkExpCases(t, draws, 100, func(u *Utilities, k int, scale float64, r *rand.Rand, d []int) ([]int, error) {
		return ExpTopK(u, k, scale, r, d)
	})
}

// checkExpCases runs a chi-square test of sample against the exact list
// probabilities for every case of expCases, k = 1..3, with its blocks and
// materialised; each test draws from its own generator (seeds after seed).
func checkExpCases(t *testing.T, draws int, seed uint64, sample func(u *Utilities, k int, scale float64, r *rand.Rand, d []int) ([]int, error)) {
	t.Helper()
	for _, c := range expCases {
		vals := c.u.Materialize(nil)
		n := len(vals)
		for k := 1; k <= 3; k++ {
			lists := enumLists(n, k)
			exact := expProbs(t, vals, c.scale, lists)
			for _, form := range []struct {
				name string
				u    *Utilities
			}{{"blocks", c.u}, {"materialised", materialised(c.u)}} {
				seed++
				r := seeded(seed)
				counts := countLists(t, lists, n, draws, func(d []int) ([]int, error) { return sample(form.u, k, c.scale, r, d) })
				if stat, df, p := ChiSquare(counts, exact); p < pMin {
					t.Errorf("%s k=%d %s: chi2 = %.1f df %d p = %.2g", c.name, k, form.name, stat, df, p)
				}
			}
		}
	}
}

// TestChiSquareDetectsWrongDistribution makes sure the sampler tests can
// fail: samples at one scale are rejected against another scale, and a
// broken block sampler (members not uniform) is rejected.
func TestChiSquareDetectsWrongDistribution(t *testing.T) {
	u := &Utilities{Vals: []float64{1.5, 0.2}, Blocks: []Block{{0, 3}, {1, 2}}}
	vals := u.Materialize(nil)
	lists := enumLists(len(vals), 2)
	r := seeded(5)
	counts := countLists(t, lists, len(vals), 60000, func(d []int) ([]int, error) { return ExpTopK(u, 2, 0.8, r, d) })
	if _, _, p := ChiSquare(counts, expProbs(t, vals, 0.9, lists)); p > 1e-6 {
		t.Errorf("scale 0.8 samples accepted against scale 0.9 probabilities: p = %g", p)
	}
	// Always taking the first member of a block is detected.
	counts = countLists(t, lists, len(vals), 60000, func(d []int) ([]int, error) {
		d, err := ExpTopK(u, 2, 0.8, r, d)
		for i, v := range d {
			if v >= 2 && v < 5 {
				if v != 2 && !slices.Contains(d, 2) {
					d[i] = 2
				}
			}
		}
		return d, err
	})
	if _, _, p := ChiSquare(counts, expProbs(t, vals, 0.8, lists)); p > 1e-6 {
		t.Errorf("non-uniform block members accepted: p = %g", p)
	}
}

func TestExactTopKUniformTies(t *testing.T) {
	u := &Utilities{Vals: []float64{1, 2, 0, 2}, Blocks: []Block{{2, 3}, {1, 2}, {2, 1}}}
	vals := u.Materialize(nil)
	n := len(vals)
	for k := 1; k <= 3; k++ {
		lists := enumLists(n, k)
		exact := expProbs(t, vals, 0, lists)
		r := seeded(uint64(40 + k))
		counts := countLists(t, lists, n, 40000, func(d []int) ([]int, error) { return ExactTopK(u, k, r, d) })
		if stat, df, p := ChiSquare(counts, exact); p < pMin {
			t.Errorf("k=%d: chi2 = %.1f df %d p = %.2g", k, stat, df, p)
		}
		// Same distribution from every zero-noise entry point.
		for name, f := range map[string]func(d []int) ([]int, error){
			"laplace0":   func(d []int) ([]int, error) { return LaplaceTopK(u, k, 0, r, d) },
			"peel0":      func(d []int) ([]int, error) { return LaplacePeel(u, k, 0, r, d) },
			"staircase0": func(d []int) ([]int, error) { return StaircaseTopK(u, k, StaircaseParams{Eps: 1, Gamma: 0.5}, r, d) },
		} {
			counts := countLists(t, lists, n, 20000, f)
			if stat, df, p := ChiSquare(counts, exact); p < pMin {
				t.Errorf("%s k=%d: chi2 = %.1f df %d p = %.2g", name, k, stat, df, p)
			}
		}
	}
}

// Large blocks take the Floyd branch of sampleDistinct; check uniformity of
// the ordered members and that they all come from the block.
func TestSampleDistinctUniform(t *testing.T) {
	for _, c := range []struct{ m, t int }{{5, 2}, {6, 6}, {200, 2}, {300, 40}} {
		w := new(workspace)
		r := seeded(uint64(c.m*1000 + c.t))
		draws := 60000
		// Track the first two positions (uniform over ordered pairs) and
		// check distinctness of the full sample.
		counts := make([]int, c.m*c.m)
		for range draws {
			s := w.sampleDistinct(c.m, c.t, r)
			if len(s) != c.t {
				t.Fatalf("len %d", len(s))
			}
			seen := map[int]bool{}
			for _, v := range s {
				if v < 0 || v >= c.m || seen[v] {
					t.Fatalf("bad sample %v", s)
				}
				seen[v] = true
			}
			if c.t >= 2 {
				counts[s[0]*c.m+s[1]]++
			}
		}
		if c.t < 2 {
			continue
		}
		exp := make([]float64, len(counts))
		for a := range c.m {
			for b := range c.m {
				if a != b {
					exp[a*c.m+b] = 1
				}
			}
		}
		// Only pooled cells for big m: fold to the first element's
		// distribution plus the pair-distinct check above.
		if c.m > 20 {
			first := make([]int, c.m)
			for a := range c.m {
				for b := range c.m {
					first[a] += counts[a*c.m+b]
				}
			}
			ones := make([]float64, c.m)
			for i := range ones {
				ones[i] = 1
			}
			if stat, df, p := ChiSquare(first, ones); p < pMin {
				t.Errorf("m=%d t=%d first: chi2 %.1f df %d p %.2g", c.m, c.t, stat, df, p)
			}
			continue
		}
		if stat, df, p := ChiSquare(counts, exp); p < pMin {
			t.Errorf("m=%d t=%d: chi2 %.1f df %d p %.2g", c.m, c.t, stat, df, p)
		}
	}
}

// K = 1 frequencies of every additive-noise sampler (blocks and
// materialised) against SelectProbs.
func TestNoisyK1MatchesSelectProbs(t *testing.T) {
	draws := 40000
	if testing.Short() {
		draws = 15000
	}
	cases := []struct {
		name string
		u    *Utilities
	}{
		{"distinct", &Utilities{Vals: []float64{0, 1, 2, 0.5}}},
		{"blocks", &Utilities{Vals: []float64{1.5, 0.2}, Blocks: []Block{{0, 3}, {1, 2}}}},
		{"ties", &Utilities{Vals: []float64{1, 1, -1}, Blocks: []Block{{1, 2}}}},
	}
	sp := StaircaseParams{Eps: 0.8, Delta: 0.7, Gamma: OptimalGamma(0.8)}
	ref := StaircaseParams{Eps: 0.3, Delta: 1, Gamma: ReferenceGamma(0.3)}
	seed := uint64(900)
	for _, c := range cases {
		vals := c.u.Materialize(nil)
		n := len(vals)
		lists := enumLists(n, 1)
		for _, noise := range []Noise{Laplace{0.6}, Laplace{2}, sp, ref} {
			exact, err := SelectProbs(vals, noise)
			if err != nil {
				t.Fatal(err)
			}
			type mech struct {
				name string
				f    func(u *Utilities, r *rand.Rand, d []int) ([]int, error)
			}
			ms := []mech{{"noisy", func(u *Utilities, r *rand.Rand, d []int) ([]int, error) { return NoisyTopK(u, 1, noise, r, d) }}}
			if l, ok := noise.(Laplace); ok {
				ms = append(ms,
					mech{"laplaceTopK", func(u *Utilities, r *rand.Rand, d []int) ([]int, error) { return LaplaceTopK(u, 1, l.Scale, r, d) }},
					mech{"peel", func(u *Utilities, r *rand.Rand, d []int) ([]int, error) { return LaplacePeel(u, 1, l.Scale, r, d) }})
			} else {
				p := noise.(StaircaseParams)
				ms = append(ms, mech{"staircaseTopK", func(u *Utilities, r *rand.Rand, d []int) ([]int, error) { return StaircaseTopK(u, 1, p, r, d) }})
			}
			for _, m := range ms {
				for _, form := range []*Utilities{c.u, materialised(c.u)} {
					seed++
					r := seeded(seed)
					counts := countLists(t, lists, n, draws, func(d []int) ([]int, error) { return m.f(form, r, d) })
					if stat, df, p := ChiSquare(counts, exact); p < pMin {
						t.Errorf("%s %s %+v blocks=%d: chi2 %.1f df %d p %.2g", c.name, m.name, noise, len(form.Blocks), stat, df, p)
					}
				}
			}
		}
	}
}

// Peeling with fresh noise has an exact K-list distribution: the product of
// report-noisy-max probabilities over the shrinking candidate set.
func TestLaplacePeelExactLists(t *testing.T) {
	u := &Utilities{Vals: []float64{1.2, 0}, Blocks: []Block{{0.5, 3}}}
	vals := u.Materialize(nil)
	n := len(vals)
	const scale = 0.9
	for k := 2; k <= 3; k++ {
		lists := enumLists(n, k)
		exact := make([]float64, len(lists))
		for li, l := range lists {
			p := 1.0
			rest := slices.Clone(vals)
			idx := []int{0, 1, 2, 3, 4}
			for _, pick := range l {
				pr, err := SelectProbs(rest, Laplace{scale})
				if err != nil {
					t.Fatal(err)
				}
				j := slices.Index(idx, pick)
				p *= pr[j]
				rest = slices.Delete(rest, j, j+1)
				idx = slices.Delete(idx, j, j+1)
			}
			exact[li] = p
		}
		for _, form := range []*Utilities{u, materialised(u)} {
			r := seeded(uint64(70 + k + 10*len(form.Blocks)))
			counts := countLists(t, lists, n, 60000, func(d []int) ([]int, error) { return LaplacePeel(form, k, scale, r, d) })
			if stat, df, p := ChiSquare(counts, exact); p < pMin {
				t.Errorf("k=%d blocks=%d: chi2 %.1f df %d p %.2g", k, len(form.Blocks), stat, df, p)
			}
		}
	}
}

// One-shot noisy top-K (K > 1) has no closed form; the block order-statistic
// path must match the materialised path (two-sample test).
func TestNoisyTopKBlocksMatchMaterialised(t *testing.T) {
	u := &Utilities{Vals: []float64{1.2, 0.1}, Blocks: []Block{{0.6, 3}, {0, 2}}}
	vals := u.Materialize(nil)
	n := len(vals)
	draws := 80000
	if testing.Short() {
		draws = 30000
	}
	for _, noise := range []Noise{Laplace{0.8}, StaircaseParams{Eps: 0.5, Delta: 0.6, Gamma: OptimalGamma(0.5)}} {
		for k := 2; k <= 3; k++ {
			lists := enumLists(n, k)
			r1, r2 := seeded(uint64(k)), seeded(uint64(k+50))
			a := countLists(t, lists, n, draws, func(d []int) ([]int, error) { return NoisyTopK(u, k, noise, r1, d) })
			m := materialised(u)
			b := countLists(t, lists, n, draws, func(d []int) ([]int, error) { return NoisyTopK(m, k, noise, r2, d) })
			if stat, df, p := twoSample(a, b); p < pMin {
				t.Errorf("%+v k=%d: chi2 %.1f df %d p %.2g", noise, k, stat, df, p)
			}
		}
	}
}

func TestDstReused(t *testing.T) {
	u := &Utilities{Vals: []float64{1, 2, 3}, Blocks: []Block{{0, 10}}}
	buf := make([]int, 0, 16)
	got, err := ExpTopK(u, 3, 0.1, seeded(1), buf)
	if err != nil {
		t.Fatal(err)
	}
	if &got[0] != &buf[:1][0] {
		t.Error("dst buffer not reused")
	}
}

func TestLnLower(t *testing.T) {
	r := seeded(17)
	for range 100000 {
		x := math.Exp(r.NormFloat64() * 30)
		lo, ok := lnLower(x)
		if !ok {
			t.Fatalf("lnLower(%v) not ok", x)
		}
		if l := math.Log(x); lo > l || l-lo > 0.002 {
			t.Fatalf("lnLower(%v) = %v, ln = %v", x, lo, l)
		}
	}
	for _, x := range []float64{0, -1, math.Inf(1), math.NaN(), 5e-324} {
		if _, ok := lnLower(x); ok {
			t.Errorf("lnLower(%v) ok", x)
		}
	}
}

// The fast rejection path must not change any output: compare with a
// straightforward Gumbel top-K consuming the same random stream.
func TestExpTopKFastPathIdentical(t *testing.T) {
	for seed := range uint64(200) {
		r := seeded(seed)
		n := 1 + r.IntN(300)
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = float64(r.IntN(20))
		}
		k := 1 + r.IntN(40)
		scale := []float64{0.01, 0.3, 1, 10}[seed%4]
		u := &Utilities{Vals: vals}
		got, err := ExpTopK(u, k, scale, seeded(seed+1000), nil)
		if err != nil {
			t.Fatal(err)
		}
		rr := seeded(seed + 1000)
		type kv struct {
			p, g float64
			i    int
		}
		all := make([]kv, n)
		for i, v := range vals {
			g := -math.Log(rr.ExpFloat64())
			all[i] = kv{v + scale*g, g, i}
		}
		slices.SortFunc(all, func(a, b kv) int {
			if a.p != b.p {
				return cmpF(b.p, a.p)
			}
			return cmpF(b.g, a.g)
		})
		for j := range got {
			if got[j] != all[j].i {
				t.Fatalf("seed %d: position %d: %d, reference %d", seed, j, got[j], all[j].i)
			}
		}
	}
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
