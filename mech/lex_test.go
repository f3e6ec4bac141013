package mech

import (
	"errors"
	"math"
	"testing"
)

type lexCase struct {
	name     string
	u        *Utilities
	pub      []float64
	blockPub []float64
	scale    float64
}

var lexCases = []lexCase{
	{"groups", &Utilities{Vals: []float64{0.3, 1.2, 0.1, 0.9, 0.5}}, []float64{2, 1, 1, 2, 0}, nil, 0.7},
	{"groups-exact", &Utilities{Vals: []float64{0.3, 0.3, 0.1, 0.9, 0.5}}, []float64{1, 1, 1, 2, 0}, nil, 0},
	{"zero-block", &Utilities{Vals: []float64{1.5, 0.4, 0.8}, Blocks: []Block{{Val: 0, Size: 3}}}, []float64{1, 0, 0}, nil, 1.3},
	{"two-blocks", &Utilities{Vals: []float64{0.2}, Blocks: []Block{{Val: 0.5, Size: 2}, {Val: 0, Size: 2}}}, []float64{1}, []float64{1, 0}, 0.4},
	{"all-one-group", &Utilities{Vals: []float64{0.1, 0.6, 0.2}, Blocks: []Block{{Val: 0.3, Size: 2}}}, []float64{0, 0, 0}, nil, 0.5},
}

func lexMaterialise(c lexCase) (pub, vals []float64) {
	vals = c.u.Materialize(nil)
	pub = append(pub, c.pub...)
	for b, blk := range c.u.Blocks {
		p := 0.0
		if c.blockPub != nil {
			p = c.blockPub[b]
		}
		for range blk.Size {
			pub = append(pub, p)
		}
	}
	return pub, vals
}

// TestLexTopKMatchesExactListProbabilities: the sampler's list frequencies
// match LexListLogProb, with blocks and materialised.
func TestLexTopKMatchesExactListProbabilities(t *testing.T) {
	draws := 40000
	if testing.Short() {
		draws = 10000
	}
	seed := uint64(900)
	for _, c := range lexCases {
		pub, vals := lexMaterialise(c)
		n := len(vals)
		for k := 1; k <= 3; k++ {
			lists := enumLists(n, k)
			exact := make([]float64, len(lists))
			sum := 0.0
			for i, l := range lists {
				lp, err := LexListLogProb(pub, vals, c.scale, l)
				if err != nil {
					t.Fatal(err)
				}
				exact[i] = math.Exp(lp)
				sum += exact[i]
			}
			if math.Abs(sum-1) > 1e-12 {
				t.Fatalf("%s k=%d: exact probabilities sum to %v", c.name, k, sum)
			}
			for _, form := range []struct {
				name          string
				u             *Utilities
				pub, blockPub []float64
			}{{"blocks", c.u, c.pub, c.blockPub}, {"materialised", &Utilities{Vals: vals}, pub, nil}} {
				seed++
				r := seeded(seed)
				counts := countLists(t, lists, n, draws, func(d []int) ([]int, error) {
					return LexTopK(form.u, form.pub, form.blockPub, k, c.scale, r, d)
				})
				stat, df, p := ChiSquare(counts, exact)
				if p < pMin {
					t.Errorf("%s k=%d %s: chi2 = %.1f df %d p = %.2g", c.name, k, form.name, stat, df, p)
				}
			}
		}
	}
}

// TestLexOneGroupIsExpTopK: with a single public key the mechanism is the
// exponential mechanism.
func TestLexOneGroupIsExpTopK(t *testing.T) {
	vals := []float64{0.1, 0.7, 0.3, 0.3}
	pub := []float64{5, 5, 5, 5}
	for _, l := range enumLists(4, 3) {
		a, _ := LexListLogProb(pub, vals, 0.6, l)
		b, _ := ExpListLogProb(vals, 0.6, l)
		if math.Abs(a-b) > 1e-12 {
			t.Fatalf("list %v: lex %v, exp %v", l, a, b)
		}
	}
}

// TestLexPublicOrder: released lists are non-increasing in the public key,
// whatever the utilities.
func TestLexPublicOrder(t *testing.T) {
	r := seeded(3)
	for trial := range 300 {
		n := 1 + r.IntN(30)
		u := &Utilities{}
		var pub []float64
		for range n {
			u.Vals = append(u.Vals, 100*r.NormFloat64())
			pub = append(pub, float64(r.IntN(4)))
		}
		u.Blocks = []Block{{Val: 50, Size: r.IntN(5)}}
		k := 1 + r.IntN(40)
		list, err := LexTopK(u, pub, nil, k, float64(trial%3), r, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != min(k, u.Len()) {
			t.Fatalf("list %v, want %d picks", list, min(k, u.Len()))
		}
		allPub, _ := lexMaterialise(lexCase{u: u, pub: pub})
		seen := map[int]bool{}
		for j, p := range list {
			if seen[p] || p < 0 || p >= u.Len() {
				t.Fatalf("invalid or repeated pick %d in %v", p, list)
			}
			seen[p] = true
			if j > 0 && allPub[p] > allPub[list[j-1]] {
				t.Fatalf("list %v not in public order (%v)", list, allPub)
			}
		}
	}
}

func TestLexPicks(t *testing.T) {
	for _, c := range []struct {
		pub  []float64
		zero int
		k    int
		want int
	}{
		{[]float64{3, 2, 1}, 0, 3, 0},            // three groups of one: free
		{[]float64{3, 3, 1}, 0, 3, 1},            // group of 2 fully listed: one random pick
		{[]float64{3, 3, 3}, 0, 2, 2},            // group of 3, two positions
		{[]float64{3, 3, 3}, 0, 3, 2},            // last member is forced
		{[]float64{1, 0}, 5, 3, 2},               // {1} free, then the zero group (6 members) fills 2 positions
		{[]float64{}, 10, 4, 4},                  // zero block only
		{[]float64{2, 2, 1, 1, 1}, 0, 30, 1 + 2}, // all listed: (2-1) + (3-1)
	} {
		u := &Utilities{Vals: make([]float64, len(c.pub))}
		if c.zero > 0 {
			u.Blocks = []Block{{Val: 0, Size: c.zero}}
		}
		got, err := LexPicks(u, c.pub, nil, c.k)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("pub %v zero %d k %d: %d random picks, want %d", c.pub, c.zero, c.k, got, c.want)
		}
	}
}

// TestLexPrivacyBound: for random keys and utilities moved by at most
// Delta, every list's log-ratio is at most eps * LexPicks (and lists of
// other public order have probability 0 in both).
func TestLexPrivacyBound(t *testing.T) {
	r := seeded(11)
	const eps, delta = 0.8, 0.5
	scale := 2 * delta / eps
	for range 200 {
		n := 2 + r.IntN(5)
		pub := make([]float64, n)
		v1, v2 := make([]float64, n), make([]float64, n)
		for i := range n {
			pub[i] = float64(r.IntN(3))
			v1[i] = 3 * r.Float64()
			v2[i] = v1[i] + delta*(2*r.Float64()-1)
		}
		for k := 1; k <= min(3, n); k++ {
			picks, err := LexPicks(&Utilities{Vals: v1}, pub, nil, k)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range enumLists(n, k) {
				a, _ := LexListLogProb(pub, v1, scale, l)
				b, _ := LexListLogProb(pub, v2, scale, l)
				if math.IsInf(a, -1) != math.IsInf(b, -1) {
					t.Fatalf("list %v possible in one graph only", l)
				}
				if !math.IsInf(a, -1) && math.Abs(a-b) > eps*float64(picks)+1e-9 {
					t.Fatalf("pub %v k %d list %v: |ln ratio| %v > %v", pub, k, l, math.Abs(a-b), eps*float64(picks))
				}
			}
		}
	}
}

func TestLexInvalid(t *testing.T) {
	r := seeded(1)
	u := &Utilities{Vals: []float64{1, 2}, Blocks: []Block{{Val: 0, Size: 2}}}
	for name, f := range map[string]func() error{
		"short pub": func() error { _, err := LexTopK(u, []float64{1}, nil, 1, 1, r, nil); return err },
		"nan pub": func() error {
			_, err := LexTopK(u, []float64{1, math.NaN()}, nil, 1, 1, r, nil)
			return err
		},
		"block pub len": func() error { _, err := LexTopK(u, []float64{1, 2}, []float64{1, 2}, 1, 1, r, nil); return err },
		"k":             func() error { _, err := LexTopK(u, []float64{1, 2}, nil, 0, 1, r, nil); return err },
		"scale":         func() error { _, err := LexTopK(u, []float64{1, 2}, nil, 1, -1, r, nil); return err },
		"picks k":       func() error { _, err := LexPicks(u, []float64{1, 2}, nil, 0); return err },
		"prob len":      func() error { _, err := LexListLogProb([]float64{1}, []float64{1, 2}, 1, nil); return err },
	} {
		if err := f(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
}
