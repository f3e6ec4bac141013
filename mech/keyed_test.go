package mech

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// keyedIDs gives the individuals of u the ids base, base+7, base+14, ...
// (distinct, not in [0, len)).
func keyedIDs(n int, base int32) []int32 {
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = base + 7*int32(i)
	}
	return ids
}

// Over random keys, the keyed sampler has ExpTopK's exact list
// probabilities, blocks included (every case of expCases, k = 1..3).
func TestExpTopKKeyedMatchesExactListProbabilities(t *testing.T) {
	draws := 25000 // ExpTopK's own test has 60000; this one checks the keying
	if testing.Short() {
		draws = 10000
	}
	checkExpCases(t, draws, 900, func(u *Utilities, k int, scale float64, r *rand.Rand, d []int) ([]int, error) {
		return ExpTopKKeyed(u, keyedIDs(len(u.Vals), 1000), NewNoiseKey(r), k, scale, r, d)
	})
}

// Negative controls: the same test rejects noise that ignores the key (one
// key for every draw: the list is fixed but for the blocks) and noise that
// ignores the id (every candidate gets the same Gumbel draw: the largest
// utility always wins).
func TestExpTopKKeyedNegativeControls(t *testing.T) {
	u := &Utilities{Vals: []float64{0, 1, 2, 0.5}}
	vals := u.Materialize(nil)
	lists := enumLists(len(vals), 2)
	exact := expProbs(t, vals, 1, lists)
	ids := keyedIDs(4, 3)
	r := seeded(7)
	fixed := NewNoiseKey(r)
	counts := countLists(t, lists, len(vals), 20000, func(d []int) ([]int, error) {
		return ExpTopKKeyed(u, ids, fixed, 2, 1, r, d)
	})
	if _, _, p := ChiSquare(counts, exact); p > 1e-6 {
		t.Errorf("a fixed key accepted: p = %g", p)
	}
	same := []int32{5, 5, 5, 5}
	counts = countLists(t, lists, len(vals), 20000, func(d []int) ([]int, error) {
		return ExpTopKKeyed(u, same, NewNoiseKey(r), 2, 1, r, d)
	})
	if _, _, p := ChiSquare(counts, exact); p > 1e-6 {
		t.Errorf("noise that ignores the id accepted: p = %g", p)
	}
}

// The keyed sampler is the brute-force Gumbel top-K of the keyed draws:
// every candidate's key v + scale*g with g = -ln(-ln key.Uniform(id)),
// sorted by (key, g, id) descending. This checks the logarithm-free
// rejection (it must change no output) and the tie-break.
func TestExpTopKKeyedMatchesBruteForce(t *testing.T) {
	defer func(g float64) { keyedGuess = g }(keyedGuess)
	rapid.Check(t, func(t *rapid.T) {
		// A small guess often misses the cut (the two-pass fallback).
		keyedGuess = rapid.SampledFrom([]float64{4, 1, 0.3}).Draw(t, "guess")
		n := rapid.IntRange(1, 400).Draw(t, "n")
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = float64(rapid.IntRange(0, 30).Draw(t, "v")) / 3
		}
		ids := make([]int32, n)
		perm := rapid.Permutation(keyedIDs(n, 0)).Draw(t, "ids")
		copy(ids, perm)
		k := rapid.IntRange(1, 50).Draw(t, "k")
		if rapid.Bool().Draw(t, "smallK") {
			k = rapid.IntRange(1, 4).Draw(t, "k")
		}
		scale := rapid.SampledFrom([]float64{0, 1e-3, 0.3, 1, 10, 30, 1e4}).Draw(t, "scale")
		key := NoiseKey{rapid.Uint64().Draw(t, "k0"), rapid.Uint64().Draw(t, "k1")}
		got, err := ExpTopKKeyed(&Utilities{Vals: vals}, ids, key, k, scale, seeded(1), nil)
		if err != nil {
			t.Fatal(err)
		}
		type kv struct {
			p, g float64
			id   int32
			i    int
		}
		all := make([]kv, n)
		for i, v := range vals {
			g := key.Gumbel(ids[i])
			all[i] = kv{v + scale*g, g, ids[i], i}
		}
		slices.SortFunc(all, func(a, b kv) int {
			if a.p != b.p {
				return cmpF(b.p, a.p)
			}
			if a.g != b.g {
				return cmpF(b.g, a.g)
			}
			return int(b.id) - int(a.id)
		})
		want := make([]int, min(k, n))
		for j := range want {
			want[j] = all[j].i
		}
		if !slices.Equal(got, want) {
			t.Fatalf("got %v, brute force %v", got, want)
		}
	})
}

// Metamorphic: permuting the candidates (utilities and ids together)
// releases the same ids in the same order, blocks included, with the
// block members drawn from the same generator state.
func TestExpTopKKeyedOrderFree(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 200).Draw(t, "n")
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = float64(rapid.IntRange(-5, 5).Draw(t, "v"))
		}
		ids := keyedIDs(n, 11)
		var blocks []Block
		if rapid.Bool().Draw(t, "block") {
			blocks = []Block{{Val: 0, Size: rapid.IntRange(1, 500).Draw(t, "size")}}
		}
		if n == 0 && blocks == nil {
			blocks = []Block{{Val: 0, Size: 3}}
		}
		k := rapid.IntRange(1, 40).Draw(t, "k")
		scale := rapid.SampledFrom([]float64{0, 0.5, 2}).Draw(t, "scale")
		seed := rapid.Uint64().Draw(t, "seed")
		perm := rapid.Permutation(func() []int {
			p := make([]int, n)
			for i := range p {
				p[i] = i
			}
			return p
		}()).Draw(t, "perm")
		pv, pids := make([]float64, n), make([]int32, n)
		for j, i := range perm {
			pv[j], pids[j] = vals[i], ids[i]
		}
		release := func(vals []float64, ids []int32) []int32 {
			r := seeded(seed)
			picks, err := ExpTopKKeyed(&Utilities{Vals: vals, Blocks: blocks}, ids, NewNoiseKey(r), k, scale, r, nil)
			if err != nil {
				t.Fatal(err)
			}
			out := make([]int32, len(picks))
			for j, p := range picks {
				if p < n {
					out[j] = ids[p]
				} else {
					out[j] = -1 - int32(p-n) // block member p-n
				}
			}
			return out
		}
		a, b := release(vals, ids), release(pv, pids)
		if !slices.Equal(a, b) {
			t.Fatalf("order changed the list: %v against %v", a, b)
		}
	})
}

func TestExpTopKKeyedInvalid(t *testing.T) {
	u := &Utilities{Vals: []float64{1, 2}}
	r := seeded(1)
	for name, f := range map[string]func() error{
		"ids":   func() error { _, err := ExpTopKKeyed(u, []int32{1}, NoiseKey{}, 1, 1, r, nil); return err },
		"k":     func() error { _, err := ExpTopKKeyed(u, []int32{1, 2}, NoiseKey{}, 0, 1, r, nil); return err },
		"scale": func() error { _, err := ExpTopKKeyed(u, []int32{1, 2}, NoiseKey{}, 1, math.NaN(), r, nil); return err },
		"nan": func() error {
			_, err := ExpTopKKeyed(&Utilities{Vals: []float64{math.Inf(1)}}, []int32{1}, NoiseKey{}, 1, 1, r, nil)
			return err
		},
	} {
		if err := f(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// The draws stay strictly inside (0, 1) at the extremes of their 52 bits
// and their Gumbel keys are finite; keyCut never rejects a draw whose key
// can reach the threshold.
func TestNoiseKeyDraws(t *testing.T) {
	for _, x := range []uint64{0, 1, 2, 1<<51 - 1, 1 << 51, 1<<52 - 2, 1<<52 - 1} {
		w := tailOf(x)
		if g := gumbelOf(w); !(w > 0 && w < 1) || math.IsInf(g, 0) || math.IsNaN(g) {
			t.Fatalf("x %d: tail %v, Gumbel %v", x, w, g)
		}
	}
	r := seeded(3)
	for range 200000 {
		x := NewNoiseKey(r).bits(int32(r.Uint32()))
		if x >= 1<<52 {
			t.Fatalf("bits %d", x)
		}
		thr := r.NormFloat64() * 5
		hi := thr - r.ExpFloat64()*3 + 1
		scale := math.Exp(r.NormFloat64() * 2)
		v := hi - r.ExpFloat64()*r.Float64()
		g := gumbelOf(tailOf(x))
		if up := gumbelUpper(tailOf(x)); up < g || (tailOf(x) < 0.01 && up-g > 0.07) {
			t.Fatalf("gumbelUpper(%v) = %v, Gumbel %v", tailOf(x), up, g)
		}
		if v+scale*g >= thr && int64(x) > keyCut(thr, hi, scale) {
			t.Fatalf("keyCut(%v, %v, %v) = %d rejects x %d whose key %v reaches it", thr, hi, scale, keyCut(thr, hi, scale), x, v+scale*g)
		}
	}
	if c := keyCut(0, math.Inf(1), 1); c != 1<<52 {
		t.Errorf("an unbounded utility: cut %d", c)
	}
	if c := keyCut(100, 0, 1); c > 1 { // the one-step margin lets x = 0, 1 through
		t.Errorf("a threshold no draw reaches: cut %d", c)
	}
}

// The lazy form gives the eager form's lists for any valid bound, reads
// only the utilities it needs, and refuses a utility above its bound.
func TestExpTopKKeyedLazy(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 300).Draw(t, "n")
		vals := make([]float64, n)
		lo, hi := 0.0, 0.0
		for i := range vals {
			vals[i] = float64(rapid.IntRange(-20, 20).Draw(t, "v")) / 4
			lo, hi = min(lo, vals[i]), max(hi, vals[i])
		}
		slack := rapid.SampledFrom([]float64{0, 0.5, 10}).Draw(t, "slack")
		lo, hi = lo-slack, hi+slack
		ids := keyedIDs(n, 3)
		var blocks []Block
		if n == 0 || rapid.Bool().Draw(t, "block") {
			blocks = []Block{{Val: 0, Size: rapid.IntRange(1, 100).Draw(t, "size")}}
		}
		k := rapid.IntRange(1, 30).Draw(t, "k")
		scale := rapid.SampledFrom([]float64{0, 0.1, 1, 5}).Draw(t, "scale")
		seed := rapid.Uint64().Draw(t, "seed")
		r1, r2 := seeded(seed), seeded(seed)
		want, err := ExpTopKKeyed(&Utilities{Vals: vals, Blocks: blocks}, ids, NewNoiseKey(r1), k, scale, r1, nil)
		if err != nil {
			t.Fatal(err)
		}
		cv := &countingVals{vals: vals}
		got, err := ExpTopKKeyedLazy(cv, lo, hi, blocks, ids, NewNoiseKey(r2), k, scale, r2, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("lazy %v, eager %v", got, want)
		}
		if r1.Uint64() != r2.Uint64() {
			t.Fatalf("the two forms left the generator in different states")
		}
	})
	cv := &countingVals{vals: []float64{1, 2, 3}}
	if _, err := ExpTopKKeyedLazy(cv, 0, 2.5, nil, []int32{1, 2, 3}, NoiseKey{1, 2}, 3, 1, seeded(1), nil); err == nil {
		t.Errorf("a utility above its bound was accepted")
	}
	if _, err := ExpTopKKeyedLazy(cv, 1.5, 3, nil, []int32{1, 2, 3}, NoiseKey{1, 2}, 3, 1, seeded(1), nil); err == nil {
		t.Errorf("a utility below its bound was accepted")
	}
}

// With many candidates and noise, the lazy form evaluates few utilities.
func TestExpTopKKeyedLazyEvaluatesFew(t *testing.T) {
	const n = 20000
	vals := make([]float64, n)
	r := seeded(9)
	for i := range vals {
		vals[i] = r.Float64()
	}
	cv := &countingVals{vals: vals}
	if _, err := ExpTopKKeyedLazy(cv, 0, 1, nil, keyedIDs(n, 0), NewNoiseKey(r), 30, 1, r, nil); err != nil {
		t.Fatal(err)
	}
	// The draws whose key at the largest utility reaches the K-th largest
	// lower bound: about k e^((hi-lo)/scale) = 82.
	if cv.calls > 200 {
		t.Errorf("%d of %d utilities evaluated", cv.calls, n)
	}
}

type countingVals struct {
	vals  []float64
	calls int
}

func (c *countingVals) Len() int { return len(c.vals) }
func (c *countingVals) At(i int) float64 {
	c.calls++
	return c.vals[i]
}

func BenchmarkExpTopKKeyed(b *testing.B) {
	r := seeded(1)
	const n = 1200
	vals := make([]float64, n)
	for i := range vals {
		vals[i] = r.Float64() * 5
	}
	ids := keyedIDs(n, 0)
	u := &Utilities{Vals: vals, Blocks: []Block{{Val: 0, Size: 90000}}}
	var dst []int
	b.Run("keyed", func(b *testing.B) {
		for b.Loop() {
			dst, _ = ExpTopKKeyed(u, ids, NewNoiseKey(r), 30, 0.5, r, dst)
		}
	})
	b.Run("sequential", func(b *testing.B) {
		for b.Loop() {
			dst, _ = ExpTopK(u, 30, 0.5, r, dst)
		}
	})
}
