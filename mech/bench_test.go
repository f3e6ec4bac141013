package mech

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

// cnLike is a CN-score query: ~400 distinct positive scores and a block of
// 3600 zeros.
func cnLike(seed uint64) *Utilities {
	r := seeded(seed)
	vals := make([]float64, 400)
	for i := range vals {
		vals[i] = float64(1 + r.IntN(60))
	}
	return &Utilities{Vals: vals, Blocks: []Block{{Val: 0, Size: 3600}}}
}

func dense(seed uint64, n int) *Utilities {
	r := seeded(seed)
	vals := make([]float64, n)
	for i := range vals {
		vals[i] = r.NormFloat64() * 5
	}
	return &Utilities{Vals: vals}
}

func benchMech(b *testing.B, u *Utilities, f func(u *Utilities, r *rand.Rand, dst []int) ([]int, error)) {
	r := seeded(1)
	var dst []int
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, err = f(u, r, dst); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExpTopK(b *testing.B) {
	for _, c := range []struct {
		name string
		u    *Utilities
	}{{"cn400+block3600", cnLike(1)}, {"dense4000", dense(2, 4000)}} {
		b.Run(c.name, func(b *testing.B) {
			benchMech(b, c.u, func(u *Utilities, r *rand.Rand, d []int) ([]int, error) { return ExpTopK(u, 30, 2/0.1, r, d) })
		})
	}
}

func BenchmarkBaselines(b *testing.B) {
	u := cnLike(1)
	sp := StaircaseParams{Eps: 0.1, Delta: 1, Gamma: OptimalGamma(0.1)}
	for name, f := range map[string]func(u *Utilities, r *rand.Rand, d []int) ([]int, error){
		"exact":     func(u *Utilities, r *rand.Rand, d []int) ([]int, error) { return ExactTopK(u, 30, r, d) },
		"laplace":   func(u *Utilities, r *rand.Rand, d []int) ([]int, error) { return LaplaceTopK(u, 30, 10, r, d) },
		"staircase": func(u *Utilities, r *rand.Rand, d []int) ([]int, error) { return StaircaseTopK(u, 30, sp, r, d) },
		"peel":      func(u *Utilities, r *rand.Rand, d []int) ([]int, error) { return LaplacePeel(u, 30, 20, r, d) },
	} {
		b.Run(name+"/cn400+block3600", func(b *testing.B) { benchMech(b, u, f) })
	}
}

// BenchmarkExpTopKAllQueries is the Facebook-sized target: 4039 CN-like
// queries, K = 30, spread over GOMAXPROCS workers. One op = all queries.
func BenchmarkExpTopKAllQueries(b *testing.B) {
	const nq = 4039
	us := make([]*Utilities, 16)
	for i := range us {
		us[i] = cnLike(uint64(i))
	}
	workers := runtime.GOMAXPROCS(0)
	b.ReportAllocs()
	for b.Loop() {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := seeded(uint64(w))
				var dst []int
				for q := w; q < nq; q += workers {
					var err error
					if dst, err = ExpTopK(us[q%len(us)], 30, 20, r, dst); err != nil {
						panic(err)
					}
				}
			}()
		}
		wg.Wait()
	}
}

func BenchmarkSelectProbs(b *testing.B) {
	vals := []float64{0, 1, 1, 2, 3, 0.5, 4, 2}
	for name, nz := range map[string]Noise{
		"laplace":   Laplace{10},
		"staircase": StaircaseParams{Eps: 0.1, Delta: 1, Gamma: OptimalGamma(0.1)},
	} {
		b.Run(name+"/n8", func(b *testing.B) {
			for b.Loop() {
				if _, err := SelectProbs(vals, nz); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
