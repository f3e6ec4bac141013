package embed

import (
	"context"
	"testing"

	"github.com/dplp/dplp/randx"
)

// BenchmarkNode2VecFacebook: paper defaults on Facebook (4039 nodes, 88234
// edges). go test -run XXX -bench Node2VecFacebook -benchtime 1x ./embed
func BenchmarkNode2VecFacebook(b *testing.B) {
	g := loadDataset(b, "facebook.txt")
	for b.Loop() {
		if _, err := Node2Vec(context.Background(), g, DefaultNode2Vec(), randx.Seeded(1), nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStruc2VecFacebook: paper defaults on Facebook.
func BenchmarkStruc2VecFacebook(b *testing.B) {
	g := loadDataset(b, "facebook.txt")
	for b.Loop() {
		if _, err := Struc2Vec(context.Background(), g, DefaultStruc2Vec(), randx.Seeded(1), nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSkipGramPair(b *testing.B) {
	const dim, rows = 80, 1000
	r := randx.Seeded(1)
	in := make([]float32, dim)
	syn1 := make([]float32, rows*dim)
	for i := range syn1 {
		syn1[i] = float32(r.NormFloat64() * 0.1)
	}
	negs := make([]int32, 5)
	neu1e := make([]float32, dim)
	for b.Loop() {
		for k := range negs {
			negs[k] = int32(r.IntN(rows))
		}
		skipGramPair(in, syn1, dim, int32(r.IntN(rows)), negs, neu1e, 0.01, false)
	}
}
