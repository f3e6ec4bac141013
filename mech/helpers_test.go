package mech

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

func seeded(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x6d656368)) }

// enumLists returns every ordered list of k distinct indices of [0, n).
func enumLists(n, k int) [][]int {
	var out [][]int
	used := make([]bool, n)
	cur := make([]int, 0, k)
	var rec func()
	rec = func() {
		if len(cur) == k {
			out = append(out, append([]int(nil), cur...))
			return
		}
		for i := range n {
			if !used[i] {
				used[i] = true
				cur = append(cur, i)
				rec()
				cur = cur[:len(cur)-1]
				used[i] = false
			}
		}
	}
	rec()
	return out
}

func listKey(l []int, n int) int {
	k := 0
	for _, v := range l {
		k = k*n + v
	}
	return k
}

// countLists draws lists and counts them per enumerated list; it fails the
// test on an error, a list of the wrong length or one not enumerated.
func countLists(t *testing.T, lists [][]int, n, draws int, draw func(dst []int) ([]int, error)) []int {
	t.Helper()
	pos := make(map[int]int, len(lists))
	for i, l := range lists {
		pos[listKey(l, n)] = i
	}
	counts := make([]int, len(lists))
	var buf []int
	for range draws {
		var err error
		buf, err = draw(buf)
		if err != nil {
			t.Fatal(err)
		}
		i, ok := pos[listKey(buf, n)]
		if !ok || len(buf) != len(lists[0]) {
			t.Fatalf("unexpected list %v", buf)
		}
		counts[i]++
	}
	return counts
}

// expProbs is the exact ExpTopK list distribution over lists.
func expProbs(t *testing.T, vals []float64, scale float64, lists [][]int) []float64 {
	t.Helper()
	p := make([]float64, len(lists))
	sum := 0.0
	for i, l := range lists {
		lp, err := ExpListLogProb(vals, scale, l)
		if err != nil {
			t.Fatal(err)
		}
		p[i] = math.Exp(lp)
		sum += p[i]
	}
	if math.Abs(sum-1) > 1e-12 {
		t.Fatalf("exact list probabilities sum to %v", sum)
	}
	return p
}

// twoSample is the chi-square two-sample homogeneity test for equal sample
// sizes (cells with fewer than 10 joint counts are pooled).
func twoSample(a, b []int) (stat float64, df int, p float64) {
	obs := make([]int, 0, 2*len(a))
	exp := make([]float64, 0, 2*len(a))
	var pa, pb int
	for i := range a {
		if a[i]+b[i] < 10 {
			pa += a[i]
			pb += b[i]
			continue
		}
		obs = append(obs, a[i], b[i])
		m := float64(a[i]+b[i]) / 2
		exp = append(exp, m, m)
	}
	if pa+pb > 0 {
		obs = append(obs, pa, pb)
		m := float64(pa+pb) / 2
		exp = append(exp, m, m)
	}
	stat = 0
	for i, o := range obs {
		d := float64(o) - exp[i]
		stat += d * d / exp[i]
	}
	// Pearson with len(obs)/2 categories x 2 samples: df = categories - 1.
	df = len(obs)/2 - 1
	return stat, df, distuv.ChiSquared{K: float64(df)}.Survival(stat)
}

const pMin = 1e-4 // fixed seeds: a failure is reproducible, not flaky

func isPerm(l []int, n int) bool {
	if len(l) != n {
		return false
	}
	seen := make([]bool, n)
	for _, v := range l {
		if v < 0 || v >= n || seen[v] {
			return false
		}
		seen[v] = true
	}
	return true
}
