package exact

import (
	"crypto/rand"
	mrand "math/rand/v2"
	"testing"

	"github.com/dplp/dplp/mech"
)

// realistic is a CN/AA-like query: 1,000 individually scored candidates
// taking ~200 distinct values, plus a zero block of 3,000 (4,000 in all).
func realistic() *mech.Utilities {
	r := mrand.New(mrand.NewPCG(1, 1))
	vals := make([]float64, 1000)
	for i := range vals {
		vals[i] = float64(1+r.IntN(200)) * 0.25
	}
	return &mech.Utilities{Vals: vals, Blocks: []mech.Block{{Val: 0, Size: 3000}}}
}

// BenchmarkTopK compares the float Gumbel top-K of package mech with the
// exact sampler on the same utilities (Delta = 1, eps_p = 0.1, K = 30):
//
//	go test -run '^$' -bench TopK -benchmem ./mech/exact
func BenchmarkTopK(b *testing.B) {
	r := mrand.New(mrand.NewPCG(3, 3))
	dense := make([]float64, 4000)
	for i := range dense {
		dense[i] = r.NormFloat64() * 5
	}
	for _, c := range []struct {
		name string
		u    *mech.Utilities
		eps  float64
	}{
		{"cn1000+zero3000/eps0.1", realistic(), 0.1},
		{"cn1000+zero3000/eps1", realistic(), 1},
		{"dense4000/eps0.1", &mech.Utilities{Vals: dense}, 0.1},
	} {
		b.Run(c.name, func(b *testing.B) { benchPair(b, c.u, c.eps) })
	}
}

func benchPair(b *testing.B, u *mech.Utilities, eps float64) {
	const k, delta = 30, 1.0
	b.Run("float-gumbel", func(b *testing.B) {
		r := mrand.New(mrand.NewPCG(1, 2))
		var dst []int
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if dst, err = mech.ExpTopK(u, k, 2*delta/eps, r, dst); err != nil {
				b.Fatal(err)
			}
		}
	})
	s, err := New(eps, delta, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("exact-chacha8", func(b *testing.B) {
		r := reader(1)
		var dst []int
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if dst, err = s.TopK(u, k, r, dst); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("exact-crypto", func(b *testing.B) {
		var dst []int
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if dst, err = s.TopK(u, k, rand.Reader, dst); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("exact-new+topk-chacha8", func(b *testing.B) {
		r := reader(1)
		var dst []int
		b.ReportAllocs()
		for b.Loop() {
			s, err := New(eps, delta, nil)
			if err != nil {
				b.Fatal(err)
			}
			if dst, err = s.TopK(u, k, r, dst); err != nil {
				b.Fatal(err)
			}
		}
	})
}
